"""The MLCommons R2 downloader route, in Python.

Protocol (as mlcommons/r2-downloader's script uses it): the metadata URI `<dir>/<name>.uri` (public)
or `.url` (behind Cloudflare Access, with a `cf-access-token` header) holds the base URL of the data
set; `<dir>/<name>.md5` lists `<md5>  [./]relative/path` lines; each file is fetched from
`<base>/<relative/path>` into `<download_dir>/<relative/path>` and checked against its MD5.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from .download import Checksum, DownloadError, DownloadResult, download, fetch_text

OPENORCA_URI = "https://inference.mlcommons-storage.org/metadata/llama-2-70b-open-orca-dataset.uri"
TOKEN_ENV = "CM_R2_ACCESS_TOKEN"  # only for `.url` (private) metadata; never printed or stored


@dataclass(frozen=True)
class R2Entry:
    md5: str
    path: str  # relative, no leading ./


@dataclass(frozen=True)
class R2Listing:
    name: str
    base_url: str
    hashes_url: str
    entries: tuple


def metadata_urls(uri: str) -> tuple[str, str]:
    """(data set name, checksum list URL) for a metadata URI ending in .uri or .url."""
    parts = urlsplit(uri)
    if not parts.scheme or not parts.netloc:
        raise DownloadError(f"R2 metadata URI {uri!r} is not an absolute URL; expected "
                            "https://host/path/<name>.uri, e.g. " + OPENORCA_URI)
    m = re.search(r"/([^/]+)\.ur[il]$", parts.path)
    if not m:
        raise DownloadError(f"R2 metadata URI {uri!r} must end in .uri (public) or .url (login needed).")
    name = m.group(1)
    hashes_path = parts.path[: m.start() + 1] + name + ".md5"
    return name, urlunsplit((parts.scheme, parts.netloc, hashes_path, "", ""))


def parse_md5_list(text: str, source: str = "checksum list") -> tuple:
    entries = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = re.match(r"^([0-9a-fA-F]{32})\s+\*?(.+?)\s*$", line)
        if not m:
            raise DownloadError(f"{source}:{n}: not an `<md5>  <path>` line: {line[:80]!r}")
        path = re.sub(r"^\./", "", m.group(2))
        if path.startswith("/") or ".." in Path(path).parts:
            raise DownloadError(f"{source}:{n}: unsafe path {path!r} (absolute or with ..); refusing it.")
        entries.append(R2Entry(m.group(1).lower(), path))
    if not entries:
        raise DownloadError(f"{source}: lists no files.")
    return tuple(entries)


def read_listing(uri: str, headers: dict | None = None) -> R2Listing:
    name, hashes_url = metadata_urls(uri)
    base = fetch_text(uri, headers).strip()
    if not re.match(r"^https?://\S+$", base):
        raise DownloadError(f"R2 metadata {uri} should hold one base URL, got {base[:80]!r}.")
    entries = parse_md5_list(fetch_text(hashes_url, headers), source=hashes_url)
    return R2Listing(name=name, base_url=base.rstrip("/"), hashes_url=hashes_url, entries=entries)


def access_headers(uri: str, token: str | None) -> dict:
    if uri.endswith(".url") and not token:
        raise DownloadError(f"{uri} is a private (.url) R2 data set: log in with cloudflared "
                            f"(`cloudflared access token --app=<uri>`) and set {TOKEN_ENV} to the token.")
    return {"cf-access-token": token} if token else {}


def download_dataset(uri: str, dest_dir, only=None, token: str | None = None, retries: int = 5,
                     log=None) -> list[DownloadResult]:
    """Fetch every listed file (or those whose base name is in `only`) into dest_dir, MD5-checked."""
    headers = access_headers(uri, token)
    listing = read_listing(uri, headers)
    entries = [e for e in listing.entries if only is None or Path(e.path).name in set(only)]
    if only is not None and len(entries) < len(set(only)):
        have = sorted(Path(e.path).name for e in listing.entries)
        raise DownloadError(f"{uri}: {sorted(set(only) - {Path(e.path).name for e in entries})} not in the "
                            f"checksum list {listing.hashes_url} (it has {have}).")
    dest_dir = Path(dest_dir)
    results = []
    for e in entries:
        results.append(download(f"{listing.base_url}/{e.path}", dest_dir / e.path, Checksum("md5", e.md5),
                                headers=headers, retries=retries, log=log))
    return results
