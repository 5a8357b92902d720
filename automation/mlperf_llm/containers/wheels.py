"""The archives a lock names, downloaded into a wheelhouse an image installs from offline.

A lock entry with a sha256 is fetched with pip's `--require-hashes`, so a mirror serving another
file is refused; an entry without one (a venv we did not make: the user's own, where `cm` runs) is
fetched by exact version and hashed here, and the image's lock then carries that hash. Wheels are
preferred; a package published only as a source archive (rouge-score) is taken as one and built
into a wheel inside the image by the recipe's pinned build tools. Whatever could not be had is
named, one package at a time.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from dataclasses import replace
from typing import Callable

from ..sysinfo.envlock import Locked, dist_key
from ..files import sha256_file


class WheelError(RuntimeError):
    pass


def _pip(python: str, args: list[str], runner: Callable, timeout: float) -> subprocess.CompletedProcess:
    return runner([python, "-m", "pip", "download", "-q", "--no-deps", "--prefer-binary",
                   "--disable-pip-version-check", *args], capture_output=True, text=True, timeout=timeout,
                  stdin=subprocess.DEVNULL)


def _hashes(folder: str) -> set[str]:
    """The sha256 of every archive in a wheelhouse."""
    return {sha256_file(os.path.join(folder, n)) for n in os.listdir(folder) if os.path.isfile(os.path.join(folder, n))}


def _archive_key(filename: str) -> tuple[str, str]:
    """(normalised name, version) of a wheel's or a source archive's file name."""
    if filename.endswith(".whl"):
        parts = filename[:-4].split("-")
        return dist_key(parts[0]), parts[1] if len(parts) > 1 else ""
    for ext in (".tar.gz", ".zip", ".tar.bz2"):
        if filename.endswith(ext):
            name, _, version = filename[:-len(ext)].rpartition("-")
            return dist_key(name), version
    return "", ""


def download(entries: list[Locked], dest: str, python: str = sys.executable, runner: Callable = subprocess.run,
             timeout: float = 3600) -> tuple[Locked, ...]:
    """Each entry's wheel in `dest` (already there: kept); the entries, each with its archive's
    sha256. WheelError naming every package that could not be had, and why."""
    os.makedirs(dest, exist_ok=True)
    present = _hashes(dest) if any(d.sha256 for d in entries) else set()
    hashed = [d for d in entries if d.sha256 and d.sha256 not in present]      # those there: not asked again
    bare = [d for d in entries if not d.sha256]
    failed: list[str] = []
    if hashed:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("".join(d.requirement() + "\n" for d in hashed))
        try:
            res = _pip(python, ["--require-hashes", "-r", f.name, "-d", dest], runner, timeout)
        finally:
            os.unlink(f.name)
        if res.returncode != 0:                 # one at a time, to name each that cannot be had
            failed += _one_by_one(hashed, dest, python, runner, timeout)
    chosen, bare_failed = _fetch_bare(bare, dest, python, runner, timeout) if bare else ({}, [])
    failed += bare_failed
    if failed:
        raise WheelError(f"{len(failed)} package(s) of the lock could not be had: " + "; ".join(failed)
                         + ". Is the index reachable (PIP_INDEX_URL, a proxy), and does it carry those exact "
                         "versions for this Python and platform?")
    out = []
    for d in entries:
        if d.sha256:
            out.append(d)
            continue
        path = next((chosen[k] for k in _entry_keys(d) if k in chosen), "")
        if not path:
            raise WheelError(f"pip downloaded {d.name}=={d.version} but no archive of that name is in {dest}")
        out.append(replace(d, sha256=sha256_file(path), url="", note=""))
    return tuple(out)


def _fetch_bare(bare: list[Locked], dest: str, python: str, runner: Callable,
                timeout: float) -> tuple[dict[tuple[str, str], str], list[str]]:
    """The archive pip chooses for each exact pin without a hash, placed in the wheelhouse: {(name,
    version): path}, and those that could not be had. pip downloads into a folder of its own, so what
    it chose is known even where the wheelhouse holds other archives of a version (another platform's
    wheel, a source archive). Where the wheelhouse holds an archive of every pin (an earlier build, the
    same record replayed again) pip takes them from it with no index, so an image already built needs
    no network; else, or if pip finds none there for this interpreter, the index is asked."""
    pins = [f"{d.name}=={d.version}" for d in bare]
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix=".wheels-", dir=os.path.dirname(os.path.abspath(dest))) as got:
        res = (_pip(python, ["--no-index", "--find-links", dest, *pins, "-d", got], runner, timeout)
               if _all_present(bare, dest) else None)
        if res is None or res.returncode != 0:
            res = _pip(python, ["--find-links", dest, *pins, "-d", got], runner, timeout)
        if res.returncode != 0:
            for pin in pins:
                one = _pip(python, ["--find-links", dest, pin, "-d", got], runner, timeout)
                if one.returncode != 0:
                    failed.append(f"{pin} ({_why(one)})")
        chosen = {}
        for name in sorted(os.listdir(got)):
            target = os.path.join(dest, name)
            os.replace(os.path.join(got, name), target)      # whole files only ever land in the wheelhouse
            chosen[_archive_key(name)] = target
    return chosen, failed


def _all_present(entries: list[Locked], dest: str) -> bool:
    """Whether the wheelhouse holds an archive of each entry's name and version (by file name)."""
    have = {_archive_key(n) for n in os.listdir(dest)}
    return all(any(k in have for k in _entry_keys(d)) for d in entries)


def _entry_keys(d: Locked) -> tuple[tuple[str, str], ...]:
    """The archive keys (_archive_key) a lock entry's files may have: its version as an archive's file
    name writes it (runs of '-', '_', '.' as '.'), or as the lock writes it."""
    return (dist_key(d.name), _norm_version(d.version)), (dist_key(d.name), d.version)


def _norm_version(version: str) -> str:
    return re.sub(r"[-_.]+", ".", version)


def _one_by_one(entries: list[Locked], dest: str, python: str, runner: Callable, timeout: float) -> list[str]:
    failed = []
    for d in entries:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write(d.requirement() + "\n")
        try:
            res = _pip(python, ["--require-hashes", "-r", f.name, "-d", dest], runner, timeout)
        finally:
            os.unlink(f.name)
        if res.returncode != 0:
            failed.append(f"{d.name}=={d.version} ({_why(res)})")
    return failed


def _why(res: subprocess.CompletedProcess) -> str:
    text = (res.stderr or res.stdout or "").strip()
    if "THESE PACKAGES DO NOT MATCH THE HASHES" in text:
        return "the index serves a file whose sha256 is not the locked one"
    m = re.search(r"(No matching distribution found for [^\n]+|Could not find a version[^\n]+)", text)
    return _short_versions(m.group(1)) if m else (text.splitlines()[-1][:200] if text else f"pip exit {res.returncode}")


def _short_versions(message: str) -> str:
    """pip's "(from versions: 1.3.0, ..., 2.3.5)" with its first and last three of a long list."""
    def cut(m: re.Match) -> str:
        versions = [v.strip() for v in m.group(1).split(",")]
        if len(versions) <= 8:
            return m.group(0)
        return f"(from {len(versions)} versions: {', '.join(versions[:3])}, ..., {', '.join(versions[-3:])})"
    return re.sub(r"\(from versions: ([^)]*)\)", cut, message)
