"""Content fingerprints of script folders, memoised on (size, mtime) so a cached run stays fast.

The fingerprint covers every file of the folder (manifest, hooks, native scripts, templates),
except byte-code and what a run leaves behind, the local modules its code imports or runs (the
`ast` import graph of `importgraph.py`), and the files named by `cache_key_files`.
"""
from __future__ import annotations

import os
import pickle
import re
from typing import Iterable

from .importgraph import Graph, Record, read_records

try:    # the built-in SHA-256 that hashlib wraps: importing hashlib loads OpenSSL (~5 ms per `cm run`)
    from _sha256 import sha256          # Python 3.11
except ImportError:                     # pragma: no cover - other Pythons
    try:
        from _sha2 import sha256        # Python 3.12+
    except ImportError:
        from hashlib import sha256

_SKIP_DIRS = {"__pycache__", ".git", ".pytest_cache"}
_SKIP_SUFFIXES = (".pyc", ".pyo", ".swp", "~")
_SKIP_PREFIXES = ("tmp-run", ".")


_HERE = os.path.dirname(os.path.abspath(__file__))
# the code whose output the memo keeps (file digests, import records): the memo is keyed on it
_MEMO_CODE = (os.path.join(_HERE, "fingerprint.py"), os.path.join(_HERE, "importgraph.py"))


def code_key(paths: Iterable[str], *extra: str) -> str:
    """A memo's key: the sha256 of the code that computes the memo's values (and of `extra`
    facts, e.g. a parser library's version), so that editing that code empties the memo without
    anyone remembering to bump a number. A file that cannot be read gives a key no memo has."""
    import sys
    h = sha256(f"{sys.version_info[:2]}\0{chr(0).join(extra)}\0".encode())
    for path in paths:
        try:
            with open(path, "rb") as f:
                h.update(f.read())
        except OSError:
            h.update(os.urandom(16))
        h.update(b"\0")
    return h.hexdigest()


def step_sources(folder: str) -> list[str]:
    """The step's own code that runs: the Python files and shell scripts at the top of its folder
    (customize.py, run.sh, ...), where the walk of its imports starts."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [os.path.join(folder, n) for n in names
            if n.endswith((".py", ".sh")) and not n.startswith(_SKIP_PREFIXES)
            and os.path.isfile(os.path.join(folder, n))]


def library_files(folder: str, automation_dir: str, records=read_records) -> list[str]:
    """The local modules (under `automation_dir`: mlperf_llm, cmengine) that a step's hooks and
    native scripts import or run, transitively (importgraph's rule). Editing one of them renews
    the step's entry; editing a module the step never reaches, or only names in text, does not."""
    return Graph([automation_dir], records).closure(step_sources(folder))


class Fingerprints:
    def __init__(self, memo_path: str | None = None):
        self.memo_path = memo_path
        self._memo: dict = {}
        self._dirty = False
        self._code = code_key(_MEMO_CODE) if memo_path else ""
        if memo_path:
            try:
                with open(memo_path, "rb") as f:
                    memo = pickle.load(f)
                code, memo = memo
                if code == self._code:
                    self._memo = memo
            except Exception:   # a missing, unreadable or older memo is only a slower start
                self._memo = {}
        self._graphs: dict[str, Graph] = {}

    def file(self, path: str) -> str:
        st = os.stat(path)
        stamp = (st.st_size, st.st_mtime_ns)
        hit = self._memo.get(path)
        if hit and hit[0] == stamp:
            return hit[1]
        h = sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        digest = h.hexdigest()
        self._memo[path] = (stamp, digest)
        self._dirty = True
        return digest

    def folder(self, folder: str, extra_globs: Iterable[str] = (),
               library: Iterable[str] = ()) -> dict[str, str]:
        """{relative path: sha256} of the folder's files, of extra glob matches (relative to the
        folder) and of `library` (absolute paths: the library modules the step reaches)."""
        out = {}
        for root, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
            for name in sorted(files):
                if name.endswith(_SKIP_SUFFIXES) or name.startswith(_SKIP_PREFIXES):
                    continue
                p = os.path.join(root, name)
                out[os.path.relpath(p, folder)] = self.file(p)
        if extra_globs:
            import glob  # cache_key_files only: most steps have none
        for pattern in extra_globs:
            for p in sorted(glob.glob(os.path.join(folder, pattern), recursive=True)):
                if os.path.isfile(p) and "__pycache__" not in p:
                    out[os.path.relpath(p, folder)] = self.file(p)
        for p in library:
            out[os.path.relpath(p, folder)] = self.file(p)
        return out

    def records(self, path: str) -> tuple[Record, ...]:
        """importgraph's records of one file, memoised on its (size, mtime)."""
        st = os.stat(path)
        stamp = (st.st_size, st.st_mtime_ns)
        key = ("imports", path)
        hit = self._memo.get(key)
        if hit and hit[0] == stamp:
            return hit[1]
        recs = read_records(path)
        self._memo[key] = (stamp, recs)
        self._dirty = True
        return recs

    def library_files(self, folder: str, automation_dir: str) -> list[str]:
        """library_files() with each file's imports memoised on its (size, mtime): a cached run
        stats the files a step reaches and parses none of them."""
        graph = self._graphs.get(automation_dir)
        if graph is None:
            graph = self._graphs[automation_dir] = Graph([automation_dir], self.records)
        return graph.closure(step_sources(folder))

    def save(self) -> None:
        if not (self.memo_path and self._dirty):
            return
        try:
            os.makedirs(os.path.dirname(self.memo_path), exist_ok=True)
            from cmcontract.publish import staged_file   # here: it imports shutil and tempfile
            with staged_file(self.memo_path) as tmp, open(tmp, "wb") as f:
                pickle.dump((self._code, self._memo), f, protocol=pickle.HIGHEST_PROTOCOL)
            self._dirty = False
        except OSError:
            pass


def files_digest(files: dict[str, str]) -> str:
    """One hash for {relative path: sha256}: the `content` component of a step's key."""
    h = sha256()
    for rel, d in sorted(files.items()):
        h.update(f"{rel}\0{d}\n".encode())
    return h.hexdigest()


def changed_files(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """What differs between two {path: sha256} maps, as 'changed x', 'new y', 'removed z'
    (paths shown from the repository: `../../automation/mlperf_llm/a.py` -> `automation/...`)."""
    def show(rel: str) -> str:
        return re.sub(r"^(\.\./)+", "", rel)
    out = [f"changed {show(p)}" for p in sorted(set(old) & set(new)) if old[p] != new[p]]
    out += [f"new {show(p)}" for p in sorted(set(new) - set(old))]
    out += [f"removed {show(p)}" for p in sorted(set(old) - set(new))]
    return out
