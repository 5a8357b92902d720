"""Content fingerprints of script folders, memoised on (size, mtime) so a cached run stays fast.

The fingerprint covers every file of the folder (manifest, hooks, native scripts, templates),
except byte-code and what a run leaves behind, plus files named by `cache_key_files`.
"""
from __future__ import annotations

import glob
import hashlib
import os
import pickle
import re
from typing import Iterable

_SKIP_DIRS = {"__pycache__", ".git", ".pytest_cache"}
_SKIP_SUFFIXES = (".pyc", ".pyo", ".swp", "~")
_SKIP_PREFIXES = ("tmp-run", ".")


_LIB_IMPORT = re.compile(r"\bmlperf_llm((?:\.[A-Za-z_][A-Za-z0-9_]*)*)")


def library_globs(folder: str, automation_dir: str) -> list[str]:
    """The project library code a step's hooks and native scripts use: for each `mlperf_llm.AREA`
    they import or run, every file of that area (so editing the library renews the entry)."""
    areas = set()
    for name in ("customize.py", "run.sh"):
        try:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        if "mlperf_llm" not in text:
            continue
        for m in _LIB_IMPORT.finditer(text):
            parts = [p for p in m.group(1).split(".") if p]
            areas.add(parts[0] if parts else "")
    out = []
    for area in sorted(areas):
        base = os.path.join(automation_dir, "mlperf_llm", area)
        if os.path.isdir(base):
            out.append(os.path.join(base, "**", "*"))
        elif os.path.isfile(base + ".py"):
            out.append(base + ".py")
    return out


class Fingerprints:
    def __init__(self, memo_path: str | None = None):
        self.memo_path = memo_path
        self._memo: dict = {}
        self._dirty = False
        if memo_path:
            try:
                with open(memo_path, "rb") as f:
                    self._memo = pickle.load(f)
            except Exception:
                self._memo = {}

    def file(self, path: str) -> str:
        st = os.stat(path)
        stamp = (st.st_size, st.st_mtime_ns)
        hit = self._memo.get(path)
        if hit and hit[0] == stamp:
            return hit[1]
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        digest = h.hexdigest()
        self._memo[path] = (stamp, digest)
        self._dirty = True
        return digest

    def folder(self, folder: str, extra_globs: Iterable[str] = ()) -> dict[str, str]:
        """{relative path: sha256} of the folder's files and of extra glob matches."""
        out = {}
        for root, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
            for name in sorted(files):
                if name.endswith(_SKIP_SUFFIXES) or name.startswith(_SKIP_PREFIXES):
                    continue
                p = os.path.join(root, name)
                out[os.path.relpath(p, folder)] = self.file(p)
        for pattern in extra_globs:
            for p in sorted(glob.glob(os.path.join(folder, pattern), recursive=True)):
                if os.path.isfile(p) and "__pycache__" not in p:
                    out[os.path.relpath(p, folder)] = self.file(p)
        return out

    def library_globs(self, folder: str, automation_dir: str) -> list[str]:
        """library_globs(), memoised on the size and mtime of the files it reads (cached runs
        plan every step: the hooks are not re-read unless they changed)."""
        stamp = []
        for name in ("customize.py", "run.sh"):
            try:
                st = os.stat(os.path.join(folder, name))
                stamp.append((name, st.st_size, st.st_mtime_ns))
            except OSError:
                pass
        key = ("library_globs", folder, automation_dir)
        hit = self._memo.get(key)
        if hit and hit[0] == tuple(stamp):
            return list(hit[1])
        globs = library_globs(folder, automation_dir)
        self._memo[key] = (tuple(stamp), tuple(globs))
        self._dirty = True
        return globs

    def digest(self, folder: str, extra_globs: Iterable[str] = ()) -> str:
        files = self.folder(folder, extra_globs)
        h = hashlib.sha256()
        for rel, d in sorted(files.items()):
            h.update(f"{rel}\0{d}\n".encode())
        return h.hexdigest()

    def save(self) -> None:
        if not (self.memo_path and self._dirty):
            return
        try:
            os.makedirs(os.path.dirname(self.memo_path), exist_ok=True)
            tmp = f"{self.memo_path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as f:
                pickle.dump(self._memo, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.memo_path)
            self._dirty = False
        except OSError:
            pass
