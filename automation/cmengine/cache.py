"""The cache store: entries keyed by the node key, never half-written, re-checked where a step said so.

Layout under the cache root:
  store/<alias>-<key12>-<nonce>/   an entry's files; the step runs with this as its cwd and
                                   never moves, so absolute paths inside (venvs) stay valid
  entries/<key>  -> ../store/...   published with an atomic rename once the entry is complete
  locks/<key>.lock                 flock held while an entry is checked and built
  runs/<run>/                      work dirs and logs of steps that are not cached
An entry is accepted only if `entries/<key>` resolves to a folder whose `cm-entry.json` has the
same key and `complete: true`. A build killed at any point leaves nothing published; its
orphan store folder is ignored and removed by `cm rm cache --orphans`.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import time

from typing import Callable, Iterator, NamedTuple, Optional

from cmcontract.places import cache_root as default_root

from . import env as envmod
from .fingerprint import changed_files

ENTRY_META = "cm-entry.json"


def _rmtree(path: str, ignore_errors: bool = False) -> None:
    import shutil  # imported on demand: it pulls in the compression modules
    shutil.rmtree(path, ignore_errors=ignore_errors)


class Entry(NamedTuple):
    """A complete cache entry: its key, folder and record (cm-entry.json)."""
    key: str
    path: str
    meta: dict

    @property
    def alias(self) -> str:
        return self.meta.get("alias", "")

    @property
    def tags(self) -> list[str]:
        return list(self.meta.get("tags", [])) + ["_" + v for v in self.meta.get("variations", [])]


class Verdict(NamedTuple):
    """The cache's decision for one node, with the reason it prints."""
    action: str      # "cached" | "run" | "skip" (only below cached steps: never reached)
    reason: str
    entry: Optional[Entry] = None
    forced: bool = False   # rebuild even if an entry appears meanwhile (--new/--renew, an entry
                           # whose found files changed or whose dependency is rebuilt)

    @property
    def cached(self) -> bool:
        return self.action == "cached"


def _warn(msg: str) -> None:
    print(msg, file=sys.stderr)


class Store:
    """The cache folder: entries/<key> links to complete store/<alias>-<key>-<id> folders."""

    def __init__(self, root: str = "", warn: Callable[[str], None] = _warn):
        self.root = root or default_root()
        self.warn = warn

    def _dir(self, name: str) -> str:
        d = os.path.join(self.root, name)
        os.makedirs(d, exist_ok=True)
        return d

    # -- lookup -----------------------------------------------------------------------------------
    def lookup(self, key: str) -> Optional[Entry]:
        link = os.path.join(self.root, "entries", key)
        if not os.path.lexists(link):
            return None
        path = os.path.realpath(link)
        try:
            with open(os.path.join(path, ENTRY_META), encoding="utf-8") as f:
                meta = json.load(f)
            if meta.get("key") == key and meta.get("complete") is True:
                return Entry(key, path, meta)
            problem = "its record names another key or is incomplete"
        except (OSError, ValueError) as e:
            problem = f"its record cannot be read ({e.__class__.__name__})"
        self.warn(f"warning: evicting a corrupt cache entry {link} -> {path}: {problem}")
        self._evict(link, path)
        return None

    def _evict(self, link: str, path: str) -> None:
        with contextlib.suppress(OSError):
            os.unlink(link)
        if path.startswith(os.path.join(os.path.realpath(self.root), "store") + os.sep):
            _rmtree(path, ignore_errors=True)

    def entries(self) -> list[Entry]:
        out = []
        edir = os.path.join(self.root, "entries")
        if not os.path.isdir(edir):
            return out
        for name in sorted(os.listdir(edir)):
            if name.startswith("."):
                continue
            e = self.lookup(name)
            if e:
                out.append(e)
        return out

    # -- building -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self, key: str, label: str) -> Iterator[None]:
        path = os.path.join(self._dir("locks"), key + ".lock")
        with open(path, "a+") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self.warn(f"waiting: another run is building the cache entry of {label} ...")
                fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def new_folder(self, alias: str, key: str) -> str:
        path = os.path.join(self._dir("store"), f"{alias}-{key[:12]}-{os.urandom(4).hex()}")
        os.makedirs(path)
        return path

    def publish(self, key: str, folder: str, meta: dict) -> Entry:
        """Write the entry record, then atomically point entries/<key> at the folder."""
        meta = dict(meta, key=key, complete=True, created=time.time(), path=folder)
        meta["new_env"] = {k: v for k, v in meta.get("new_env", {}).items()
                           if not envmod.is_secret(k)}
        tmp = os.path.join(folder, ENTRY_META + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=1, sort_keys=True, default=str)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, os.path.join(folder, ENTRY_META))
        edir = self._dir("entries")
        link = os.path.join(edir, key)
        old = os.path.realpath(link) if os.path.lexists(link) else None
        tmp_link = os.path.join(edir, f".{key}.{os.urandom(4).hex()}")
        os.symlink(os.path.relpath(folder, edir), tmp_link)
        os.replace(tmp_link, link)
        if old and old != folder:
            _rmtree(old, ignore_errors=True)
        return Entry(key, folder, meta)

    KEEP_FAILED = 3     # failed builds kept per step (a failed venv install can be gigabytes)

    def discard(self, folder: str) -> str:
        """Move a failed build aside (kept for its log, never accepted); of the failed builds of
        the same step only the KEEP_FAILED newest stay."""
        fdir = self._dir("failed")
        dest = os.path.join(fdir, os.path.basename(folder))
        with contextlib.suppress(OSError):
            _rmtree(dest, ignore_errors=True)
            os.replace(folder, dest)
            step = os.path.basename(folder).rsplit("-", 2)[0]
            others = [os.path.join(fdir, n) for n in os.listdir(fdir)
                      if n.rsplit("-", 2)[0] == step and n != os.path.basename(dest)]
            others.sort(key=lambda p: os.stat(p).st_mtime, reverse=True)
            for old in others[self.KEEP_FAILED - 1:]:
                _rmtree(old, ignore_errors=True)
            return dest
        return folder

    def drop(self, folder: str) -> None:
        """Remove a build folder that was never published (a result its step asked not to keep)."""
        if os.path.dirname(os.path.abspath(folder)) == os.path.abspath(self._dir("store")):
            _rmtree(folder, ignore_errors=True)

    def run_folder(self, label: str) -> str:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = os.path.join(self._dir("runs"), f"{stamp}-{label}-{os.urandom(3).hex()}")
        os.makedirs(path)
        return path

    # -- removal ------------------------------------------------------------------------------
    def remove(self, entry: Entry) -> None:
        self._evict(os.path.join(self.root, "entries", entry.key), entry.path)

    def orphans(self) -> list[str]:
        sdir = os.path.join(self.root, "store")
        if not os.path.isdir(sdir):
            return []
        live = {e.path for e in self.entries()}
        return [os.path.join(sdir, n) for n in sorted(os.listdir(sdir))
                if os.path.join(sdir, n) not in live]

    # -- explaining -----------------------------------------------------------------------------
    def explain_miss(self, alias: str, components: dict, code_files: dict | None = None) -> str:
        """Why there is no entry: compare with the closest entry of the same script."""
        same = [e for e in self.entries() if e.alias == alias]
        if not same:
            return "no entry yet for this script"
        diffs = min((diff_components(e.meta.get("components", {}), components,
                                     e.meta.get("code_files"), code_files) for e in same),
                    key=len)
        return "no entry for this key; the closest entry differs in: " + "; ".join(diffs[:4])


def diff_components(old: dict, new: dict, old_files: dict | None = None,
                    new_files: dict | None = None) -> list[str]:
    out = []
    if old.get("content") != new.get("content"):
        files = changed_files(old_files, new_files) if old_files and new_files else []
        if files:
            more = f" and {len(files) - 3} more" if len(files) > 3 else ""
            out.append("the step's code: " + ", ".join(files[:3]) + more)
        else:
            out.append("the step's code (its script folder or the library code it uses)")
    if old.get("variations") != new.get("variations"):
        out.append(f"variations {old.get('variations')} -> {new.get('variations')}")
    if old.get("version") != new.get("version"):
        out.append(f"version {old.get('version')} -> {new.get('version')}")
    oe, ne = old.get("env", {}), new.get("env", {})
    for k in sorted(set(oe) | set(ne)):
        if oe.get(k) != ne.get(k):
            if envmod.is_secret(k):
                out.append(f"env {k} (secret value changed)")
            else:
                out.append(f"env {k} {oe.get(k)!r} -> {ne.get(k)!r}")
    od = {d[1]: d[2] for d in old.get("deps", [])}
    for d in new.get("deps", []):
        if d[1] in od and od[d[1]] != d[2]:
            out.append(f"dependency {d[1]} changed")
        elif d[1] not in od:
            out.append(f"new dependency {d[1]}")
    if old.get("env_from_deps") != new.get("env_from_deps") and not out:
        out.append("env received from earlier dependencies")
    return out or ["an internal detail of the key"]


def found_files(env: dict, keys: list[str]) -> dict:
    """What an entry relies on outside the cache: {path: [real path, size, mtime_ns]} of the
    files named by the values of the env keys in `keys` (a step's `cache_recheck_env`: the
    interpreter get-python3 found, the pickle given to the dataset step). Recorded when the entry
    is published, re-checked on reuse."""
    out = {}
    for name, value in sorted(env.items()):
        if envmod.matches(name, keys) and isinstance(value, str) and os.path.isabs(value):
            state = _file_state(value)
            if state is not None:
                out[value] = state
    return out


def _file_state(path: str) -> Optional[list]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [os.path.realpath(path), st.st_size, st.st_mtime_ns]


def recheck(entry: Entry) -> str:
    """'' when every file the entry recorded (found_files) is as it was, else why not:
    '/usr/bin/python3.11 changed since entry 0a1b2c3d4e5f was cached (size 6 MB -> ...)'."""
    for path, was in sorted((entry.meta.get("recheck") or {}).items()):
        now = _file_state(path)
        if now == was:
            continue
        since = f"since entry {entry.key[:12]} was cached"
        if now is None:
            return f"{path} is gone {since}; the step looks again"
        if now[0] != was[0]:
            return f"{path} now resolves to {now[0]} (was {was[0]}) {since}"
        def when(ns: int) -> str:
            return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ns // 10**9)) + \
                f".{ns // 10**6 % 1000:03d}"
        if now[1] != was[1]:
            return f"{path} changed {since} (size {was[1]} -> {now[1]} bytes, modified {when(now[2])})"
        return f"{path} changed {since} (modified {when(now[2])}, was {when(was[2])})"
    return ""


def decide(plan, store: Store, renew_all: bool = False, new_root: bool = False) -> None:
    """Set node.verdict for every node of the plan, bottom-up."""
    done: set[str] = set()

    def visit(node) -> None:
        if node.key in done:
            return
        done.add(node.key)
        for e in node.edges:
            if e.node is not None:
                visit(e.node)
        if not node.manifest.cache:
            node.verdict = Verdict("run", "not cached (cache: false)")
            return
        if renew_all or (new_root and node is plan.root):
            node.verdict = Verdict("run", "a fresh entry was asked for (--renew/--new)",
                                   forced=True)
            return
        entry = store.lookup(node.key)
        if entry is None:
            node.verdict = Verdict("run", store.explain_miss(node.alias, node.components,
                                                             node.code_files))
            return
        changed = recheck(entry)
        if changed:     # something the entry found outside the cache is not what it was
            node.verdict = Verdict("run", changed, forced=True)
            return
        stale = [e.node for e in node.edges if e.node is not None and e.node.manifest.cache
                 and not e.node.verdict.cached and e.decided is not False]
        if stale:
            # forced: the executor must not take this same entry for one "built meanwhile"
            node.verdict = Verdict("run", f"entry {node.key[:12]} exists but its dependency "
                                   f"{stale[0].alias} will be rebuilt", forced=True)
            return
        node.verdict = Verdict("cached", f"entry {node.key[:12]} (same script, inputs and deps)",
                               entry)
    visit(plan.root)
    _skip_below_cached(plan)


def _skip_below_cached(plan) -> None:
    """A step reached only through steps that come from their entries never runs: a cached step
    replays its entry and runs nothing, its dependencies included. Such a step's verdict says so and
    names a cached step above it (it said "run", and the run did not run it)."""
    def below(node):
        return [e.node for e in node.edges if e.node is not None]

    reached, stack = set(), [plan.root]
    while stack:                                    # what the executor visits
        node = stack.pop()
        if node.key not in reached:
            reached.add(node.key)
            if node.verdict is None or not node.verdict.cached:
                stack += below(node)
    under: dict[str, str] = {}
    for key in sorted(reached):
        top = plan.nodes.get(key)
        if top is None or top.verdict is None or not top.verdict.cached:
            continue
        stack = below(top)
        while stack:
            node = stack.pop()
            if node.key in reached or node.key in under:
                continue
            under[node.key] = top.name
            stack += below(node)
    for key, above in under.items():
        node = plan.nodes[key]
        if node.verdict is not None and not node.verdict.cached:
            node.verdict = Verdict("skip", f"not run: {above} comes from its cache entry")
