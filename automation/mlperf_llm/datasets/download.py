"""Resumable, checksum-verified HTTP download.

The file grows as `<dest>.part`; a dropped connection resumes with a Range request; only a file whose
checksum (and size, when the server states it) matches is renamed to `<dest>`. A mismatch deletes the
part file and raises, so a partial or corrupt file is never left under the final name.
"""
from __future__ import annotations

import hashlib
import http.client
import os
import re
import socket
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from .schema import DatasetError

CHUNK = 1 << 20
_TRANSIENT = (ConnectionError, TimeoutError, socket.timeout, http.client.IncompleteRead,
              http.client.RemoteDisconnected, urllib.error.URLError)


class DownloadError(DatasetError):
    """A download failed; the message names the URL, the reason and what to do."""


class ChecksumMismatch(DownloadError):
    pass


@dataclass(frozen=True)
class Checksum:
    algorithm: str  # "md5" or "sha256" (any hashlib name)
    hexdigest: str

    def of_file(self, path) -> str:
        return file_digest(path, self.algorithm)


def file_digest(path, algorithm: str = "sha256") -> str:
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class DownloadResult:
    path: Path
    bytes: int
    resumed_from: int     # bytes already on disk when this call started (0 = fresh)
    attempts: int
    reused: bool = False  # the final file was already there and verified


def fetch_text(url: str, headers: dict | None = None, timeout: float = 60) -> str:
    """GET a small text resource (metadata, checksum list); errors name the URL."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.read().decode("utf-8")
    except urllib.error.HTTPError as e:
        raise DownloadError(f"GET {url}: HTTP {e.code} {e.reason}{_http_hint(e.code)}") from e
    except _TRANSIENT as e:
        raise DownloadError(f"GET {url}: {type(e).__name__}: {e}; check the network or the URL.") from e


def _http_hint(code: int) -> str:
    if code in (401, 403):
        return "; access was refused: the resource may need a login or token (see docs/datasets.md)."
    if code == 404:
        return "; not found: check the URL (or a newer metadata URI in the MLCommons docs)."
    return "."


def download(url: str, dest, checksum: Checksum | None = None, headers: dict | None = None,
             retries: int = 5, timeout: float = 60, backoff: float = 0.5, log=None) -> DownloadResult:
    """Download `url` to `dest`, resuming a `.part` file, verifying `checksum` before the rename."""
    dest = Path(dest)
    log = log or (lambda msg: print(msg, file=sys.stderr))
    if dest.is_file():
        if checksum is None:
            return DownloadResult(dest, dest.stat().st_size, dest.stat().st_size, 0, reused=True)
        if checksum.of_file(dest) == checksum.hexdigest.lower():
            return DownloadResult(dest, dest.stat().st_size, dest.stat().st_size, 0, reused=True)
        log(f"{dest}: existing file fails its {checksum.algorithm} check; downloading it again")
        dest.unlink()
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    start = part.stat().st_size if part.exists() else 0
    attempts, total = 0, None
    while True:
        attempts += 1
        try:
            total = _fetch_into(url, part, headers or {}, timeout)
            break
        except _TRANSIENT as e:
            if isinstance(e, urllib.error.HTTPError) and e.code not in (408, 429, 500, 502, 503, 504):
                raise DownloadError(f"GET {url}: HTTP {e.code} {e.reason}{_http_hint(e.code)}") from e
            have = part.stat().st_size if part.exists() else 0
            if attempts > retries:
                raise DownloadError(
                    f"GET {url}: gave up after {attempts} attempts ({type(e).__name__}: {e}); {have} bytes are "
                    f"kept in {part} and the next run resumes from there. {dest} was not created.") from e
            log(f"{url}: {type(e).__name__} after {have} bytes; resuming (attempt {attempts + 1})")
            time.sleep(backoff * attempts)
    size = part.stat().st_size
    if total is not None and size != total:
        part.unlink()
        raise DownloadError(f"GET {url}: got {size} bytes but the server announced {total}; the partial file "
                            "was deleted. Run again.")
    if checksum is not None:
        got = checksum.of_file(part)
        if got != checksum.hexdigest.lower():
            part.unlink()
            raise ChecksumMismatch(
                f"{url}: {checksum.algorithm} is {got}, expected {checksum.hexdigest}; the file is corrupt or "
                f"changed on the server. It was deleted and {dest} was not created; run again, and if it "
                "repeats the published checksum or file is wrong.")
    os.replace(part, dest)
    return DownloadResult(dest, size, start, attempts)


def _fetch_into(url: str, part: Path, headers: dict, timeout: float) -> int | None:
    """One GET appending to `part` from its current size; returns the full size if the server said it."""
    have = part.stat().st_size if part.exists() else 0
    req_headers = dict(headers)
    if have:
        req_headers["Range"] = f"bytes={have}-"
    req = urllib.request.Request(url, headers=req_headers)
    try:
        resp = urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:  # nothing left to send: the part may already be whole
            m = re.match(r"bytes \*/(\d+)", e.headers.get("Content-Range", ""))
            if m and int(m.group(1)) == have:
                return have
            part.unlink()  # the part is longer than the file: start over
            raise ConnectionError(f"range {have}- not satisfiable; restarting from zero") from e
        raise
    with resp:
        if resp.status == 206:
            m = re.match(r"bytes (\d+)-(\d+)/(\d+|\*)", resp.headers.get("Content-Range", ""))
            if not m or int(m.group(1)) != have:
                raise DownloadError(f"GET {url}: server answered a Range request with a bad Content-Range "
                                    f"{resp.headers.get('Content-Range')!r}; delete {part} and run again.")
            total = None if m.group(3) == "*" else int(m.group(3))
            mode = "ab"
        else:  # 200: the server ignored the range (or there was none): start from zero
            length = resp.headers.get("Content-Length")
            total = int(length) if length is not None else None
            mode = "wb"
        with open(part, mode) as f:
            while True:
                block = resp.read(CHUNK)
                if not block:
                    break
                f.write(block)
            f.flush()
            os.fsync(f.fileno())
    got = part.stat().st_size
    if total is not None and got < total:
        raise http.client.IncompleteRead(b"", total - got)
    return total
