"""Content fingerprints of script folders, memoised on (size, mtime) so a cached run stays fast.

The fingerprint covers every file of the folder (manifest, hooks, native scripts, templates),
except byte-code and what a run leaves behind, plus files named by `cache_key_files`.
"""
from __future__ import annotations

import os
import pickle
import re
from typing import Iterable

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


# `mlperf_llm.a.b` anywhere (imports, `python -m mlperf_llm.a.b` in run.sh or in library code)
_LIB_REF = re.compile(r"\bmlperf_llm((?:\.[A-Za-z_][A-Za-z0-9_]*)*)")
# `from X import names` with X absolute (mlperf_llm...) or relative (.x, ..x, .); names may be submodules
_FROM_IMPORT = re.compile(r"^\s*from\s+(\.+[A-Za-z0-9_.]*|mlperf_llm[A-Za-z0-9_.]*)\s+import\s+"
                          r"(\([^)]*\)|[^\n#]+)", re.M)


def _module_paths(lib_root: str, parts: list[str]) -> list[str]:
    """Files that run when `mlperf_llm.<parts>` is imported or run with -m: the package
    `__init__.py` files on the way, then the module file (or the package's `__init__`/`__main__`).
    A name that is not a module (`mlperf_llm.vllm.install.choose_package`) stands for the longest
    prefix that is one."""
    while parts and not (os.path.isfile(os.path.join(lib_root, *parts) + ".py")
                         or os.path.isdir(os.path.join(lib_root, *parts))):
        parts = parts[:-1]
    out = [os.path.join(lib_root, "__init__.py")]
    for i in range(1, len(parts)):
        out.append(os.path.join(lib_root, *parts[:i], "__init__.py"))
    base = os.path.join(lib_root, *parts)
    if parts and os.path.isfile(base + ".py"):
        return [q for q in out if os.path.isfile(q)] + [base + ".py"]
    return [q for q in out + [os.path.join(base, "__init__.py"), os.path.join(base, "__main__.py")]
            if os.path.isfile(q)]


def _references(text: str, package: list[str]) -> list[list[str]]:
    """Module names (relative to mlperf_llm) that a file's text refers to; `package` is the
    file's own package inside the library (for relative imports), None outside it."""
    refs = []
    for m in _FROM_IMPORT.finditer(text):
        source, names = m.group(1), m.group(2).strip("() \n")
        if source.startswith("."):
            if package is None:
                continue
            dots = len(source) - len(source.lstrip("."))
            base = package[:len(package) - (dots - 1)] if dots - 1 <= len(package) else []
            rest = [q for q in source.lstrip(".").split(".") if q]
        else:
            base, rest = [], [q for q in source.split(".")[1:] if q]
        mod = base + rest
        refs.append(mod)
        for name in names.replace("\n", " ").split(","):
            name = name.split(" as ")[0].strip()
            if name.isidentifier():
                refs.append(mod + [name])            # a submodule, if such a file exists
    for m in _LIB_REF.finditer(text):
        refs.append([q for q in m.group(1).split(".") if q])
    return refs


def library_files(folder: str, automation_dir: str) -> tuple[list[str], list[str]]:
    """The project library code a step's hooks and native scripts use: the modules of
    `automation/mlperf_llm` they import or run (`python -m`), and the modules those import in turn.
    Returns (library files, every file read to find them). Editing one of those files renews the
    step's entry; editing a module the step never reaches does not."""
    lib_root = os.path.join(automation_dir, "mlperf_llm")
    read = []
    todo = []
    for name in ("customize.py", "run.sh"):
        path = os.path.join(folder, name)
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        read.append(path)
        if "mlperf_llm" in text:
            todo += _references(text, None)
    found: set[str] = set()
    while todo:
        parts = todo.pop()
        for path in _module_paths(lib_root, parts):
            if path in found:
                continue
            found.add(path)
            read.append(path)
            package = os.path.relpath(path, lib_root).split(os.sep)[:-1]
            with open(path, encoding="utf-8", errors="replace") as f:
                todo += _references(f.read(), package)
    return sorted(found), read


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
        h = sha256()
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
        if extra_globs:
            import glob  # cache_key_files only: most steps have none
        for pattern in extra_globs:
            for p in sorted(glob.glob(os.path.join(folder, pattern), recursive=True)):
                if os.path.isfile(p) and "__pycache__" not in p:
                    out[os.path.relpath(p, folder)] = self.file(p)
        return out

    def library_files(self, folder: str, automation_dir: str) -> list[str]:
        """library_files(), memoised on the size and mtime of every file it read (cached runs plan
        every step: nothing is re-read unless a hook or a library module it reached changed, or a
        hook appeared)."""
        key = ("library_files", folder, automation_dir)
        hit = self._memo.get(key)
        if hit and hit[0] == _stamps(hit[0], folder):
            return list(hit[1])
        files, read = library_files(folder, automation_dir)
        self._memo[key] = (_stamps([(p, 0, 0) for p in read], folder), tuple(files))
        self._dirty = True
        return files

    def digest(self, folder: str, extra_globs: Iterable[str] = ()) -> str:
        return files_digest(self.folder(folder, extra_globs))

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


def _stamps(previous, folder: str) -> tuple:
    """(path, size, mtime) of the files read last time, plus the step's hooks (one may be new)."""
    paths = [p for p, _, _ in previous]
    for name in ("customize.py", "run.sh"):
        hook = os.path.join(folder, name)
        if hook not in paths:
            paths.append(hook)
    out = []
    for path in paths:
        try:
            st = os.stat(path)
            out.append((path, st.st_size, st.st_mtime_ns))
        except OSError:
            pass
    return tuple(out)
