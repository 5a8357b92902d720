"""Scripts across every registered repository: loading, tag search, did-you-mean.

Repositories are searched in precedence order (the user's local repo first, then this project,
then the others). A script alias present in several repositories resolves to the first; a tag
query matching scripts with different aliases is ambiguous and says how to choose.
"""
from __future__ import annotations

import os
import pickle
from typing import NamedTuple, Optional

from . import manifest as _manifest
from .errors import AmbiguousScript, ManifestError, ScriptNotFound, did_you_mean
from .fingerprint import code_key
from .manifest import SCRIPT_AUTOMATION_UID, Manifest, load_manifest

# The modules that turn a manifest into what the memo keeps (the import closure of
# cmengine.manifest among local modules; tests/unit/engine/test_importgraph.py checks this list
# against the ast import graph). The memo is keyed on their content and on PyYAML's version.
PARSER_MODULES = ("__init__.py", "errors.py", "manifest.py")
_memo_key_cache: list[str] = []


def _memo_key() -> str:
    if not _memo_key_cache:
        here = os.path.dirname(os.path.abspath(__file__))
        _memo_key_cache.append(code_key([os.path.join(here, m) for m in PARSER_MODULES],
                                        _manifest.yaml.__version__, _manifest._Loader.__name__))
    return _memo_key_cache[0]


class Repo(NamedTuple):
    alias: str
    path: str


class Query:
    """What a user or a dependency asks for with tags."""

    def __init__(self) -> None:
        self.tags: list[str] = []                # required plain tags
        self.exclude_tags: list[str] = []        # -tag
        self.variations: list[str] = []          # _x (without the underscore)
        self.exclude_variations: list[str] = []  # -_x
        self.alias = ""                          # cm run script ALIAS
        self.repo = ""                           # repo:ALIAS

    @classmethod
    def parse(cls, tags: list[str], alias: str = "") -> "Query":
        q = cls()
        for t in tags:
            t = t.strip()
            if not t:
                continue
            if t.startswith("-_"):
                q.exclude_variations.append(t[2:])
            elif t.startswith("-"):
                q.exclude_tags.append(t[1:])
            elif t.startswith("_"):
                q.variations.append(t[1:])
            else:
                q.tags.append(t)
        if alias:
            q.repo, _, q.alias = alias.rpartition(":")
        return q

    def describe(self) -> str:
        parts = ([f"alias '{self.alias}'"] if self.alias else []) + (
            [f"tags '{','.join(self.tags)}'"] if self.tags else [])
        return " and ".join(parts) or "no tags"


LISTED_BROKEN = 5   # newly broken manifests named one by one; more are summed up in one line


class Registry:
    def __init__(self, repos: list[Repo], memo_path: Optional[str] = None):
        self.repos = repos
        self.scripts: list[Manifest] = []
        self.broken: list[ManifestError] = []       # every manifest this engine cannot use
        self.new_broken: list[ManifestError] = []   # those not seen broken by an earlier run
        self._memo_path = memo_path
        self.note = ""   # why the last find/select took the script it took, when not obvious
        self._load()

    # -- loading ------------------------------------------------------------------------------
    def _load(self) -> None:
        memo = self._read_memo()
        new_memo: dict = {}
        seen_alias: set[str] = set()
        for repo in self.repos:
            sdir = os.path.join(repo.path, "script")
            try:
                entries = sorted(os.scandir(sdir), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                if not entry.is_dir():
                    continue
                folder = entry.path
                stamp = _stamp(folder)
                if stamp is None:
                    continue
                cached = memo.get(folder)
                if cached is not None and cached[0] == stamp:
                    result = cached[1]
                else:
                    try:
                        result = load_manifest(folder)
                    except ManifestError as e:
                        result = e
                        self.new_broken.append(e)
                new_memo[folder] = (stamp, result)
                if isinstance(result, ManifestError):
                    result.repo = repo.alias
                    self.broken.append(result)
                    continue
                if str(result.get("automation_uid", SCRIPT_AUTOMATION_UID)) != SCRIPT_AUTOMATION_UID \
                        and result.get("automation_alias", "script") != "script":
                    continue
                result.repo = repo.alias
                # the first repository with an alias wins; later copies stay reachable as repo:alias
                result.data["_shadowed"] = result.alias in seen_alias
                seen_alias.add(result.alias)
                self.scripts.append(result)
        # keep what other sessions memoised for repositories not scanned here (`cm show cache`
        # scans only this project): else each would forget the other's and warn again
        scanned = tuple(os.path.join(r.path, "script") + os.sep for r in self.repos)
        new_memo.update((k, v) for k, v in memo.items() if not k.startswith(scanned))
        if new_memo != memo:
            self._write_memo(new_memo)

    def _read_memo(self) -> dict:
        if not self._memo_path:
            return {}
        try:
            with open(self._memo_path, "rb") as f:
                version, memo = pickle.load(f)
            return memo if version == _memo_key() else {}
        except Exception:  # a missing or unreadable memo is only a slower start
            return {}

    def _write_memo(self, memo: dict) -> None:
        if not self._memo_path:
            return
        try:
            os.makedirs(os.path.dirname(self._memo_path), exist_ok=True)
            from cmcontract.publish import staged_file   # here: it imports shutil and tempfile
            with staged_file(self._memo_path) as tmp, open(tmp, "wb") as f:
                pickle.dump((_memo_key(), memo), f, protocol=pickle.HIGHEST_PROTOCOL)
        except OSError:
            pass

    # -- search -------------------------------------------------------------------------------
    def warnings(self) -> list[str]:
        """What to say about manifests this engine cannot use: each one newly broken (new or
        changed since the memo saw it) by name, or one line for many (a large foreign
        repository registered); nothing again on later runs (`cm check script` lists them)."""
        new = self.new_broken
        if len(new) <= LISTED_BROKEN:
            return [f"warning: ignoring a broken script manifest (other scripts are unaffected): "
                    f"{e}" for e in new]
        repos = ", ".join(sorted({getattr(e, "repo", "") for e in new} - {""}))
        return [f"warning: {len(new)} script manifests in {repos or 'the registered repositories'}"
                " cannot be used by this engine and are skipped (other scripts are unaffected; "
                "this is said once). List them with the reason: cm check script"]

    def check(self) -> list[str]:
        """One line per manifest this engine cannot use, with its reason (cm check script)."""
        return [_check_line(e) for e in self.broken]

    def skipped_for(self, q: Query) -> list[ManifestError]:
        """The manifests that were skipped and that the query names: by alias or folder name, or
        by tags they could still be read to have."""
        def named(e: ManifestError) -> bool:
            folder = e.path if os.path.isdir(e.path) else os.path.dirname(e.path)
            names = set(getattr(e, "names", ()) or ()) | {os.path.basename(folder)}
            if q.alias:
                return q.alias in names
            return bool(q.tags) and set(q.tags) <= names
        return [e for e in self.broken if named(e)]

    def all_tags(self) -> set[str]:
        return {t for m in self.scripts for t in m.tags}

    def find(self, q: Query) -> list[Manifest]:
        self.note = ""
        if q.alias:
            found = [m for m in self.scripts if q.alias in (m.alias, m.uid)
                     and (not q.repo or q.repo == m.repo)]
            if not q.repo:
                found = found[:1]
            return [m for m in found if set(q.tags) <= set(m.tags)]
        need, avoid = set(q.tags), set(q.exclude_tags)
        found = [m for m in self.scripts if not m.data.get("_shadowed")
                 and need <= set(m.tags) and not (avoid & set(m.tags))]
        if q.variations and need:
            found = [self._with_variations(m, q) for m in found]
        if len(found) > 1 and q.variations:
            with_vars = [m for m in found if all(_has_variation(m, v) for v in q.variations)]
            if with_vars:
                found = with_vars
        return found

    def _with_variations(self, m: Manifest, q: Query) -> Manifest:
        """A script that another repository's script of the same name shadows, asked for with
        variations only the shadowed one has (cm4mlops' get-generic-python-lib _pandas when ours
        comes first): the shadowed one answers, and says why."""
        if all(_has_variation(m, v) for v in q.variations):
            return m
        for other in self.scripts:
            if other.alias == m.alias and other is not m and set(q.tags) <= set(other.tags) \
                    and not (set(q.exclude_tags) & set(other.tags)) \
                    and all(_has_variation(other, v) for v in q.variations):
                missing = [v for v in q.variations if not _has_variation(m, v)]
                self.note = (
                    f"{other.repo}:{other.alias}, since {m.repo}:{m.alias} has no variation "
                    + ", ".join("_" + v for v in missing))
                return other
        return m

    def select(self, q: Query, quiet: bool = True, asked_by: str = "") -> Manifest:
        found = self.find(q)
        if len(found) == 1:
            return found[0]
        if len(found) > 1 and all("sort" in m.data for m in found):
            # cm4mlops orders such alternatives (get,compiler: get-llvm 100, get-gcc 500, get-cl
            # 1000) and takes the first in --quiet mode; so do we, and the plan says so
            ranked = sorted(found, key=lambda m: (_sort_key(m), m.folder))
            self.note = (f"{ranked[0].repo}:{ranked[0].alias}, the first by `sort` of "
                         + ", ".join(f"{m.alias} ({m.data['sort']})" for m in ranked)
                         + " (as cm4mlops' --quiet does); to choose another, add a tag only it "
                         "has, e.g. with --adr.NAME.tags=...")
            return ranked[0]
        who = f" (needed by {asked_by})" if asked_by else ""
        if not found:
            skipped = self.skipped_for(q)
            if skipped:
                raise ScriptNotFound(
                    f"no usable script matches {q.describe()}{who}: the manifest that does was "
                    "skipped, as `cm check script` says:\n" + "\n".join(
                        "  " + _check_line(e) for e in skipped),
                    "\n".join([e.hint for e in skipped if e.hint]
                              + ["Fix it there (the line named), then run again; `cm check script` "
                                 "lists every manifest that is still skipped"]))
            raise ScriptNotFound(f"no script matches {q.describe()}{who}.", self._hint(q))
        if not quiet:
            chosen = _prompt_choice(found)
            if chosen is not None:
                return chosen
        listing = "\n".join(f"  - {m.alias} ({m.repo}) tags: {','.join(m.tags)}" for m in found)
        raise AmbiguousScript(
            f"{len(found)} scripts match {q.describe()}{who}:\n{listing}",
            "Choose one by adding a tag that only it has, or run it by alias: "
            f"cm run script {found[0].alias}  (or repo:alias, e.g. {found[0].repo}:{found[0].alias}).")

    def _hint(self, q: Query) -> str:
        hints = []
        known = self.all_tags()
        for t in q.tags:
            if t not in known:
                hints.append(f"No script has the tag '{t}'." + did_you_mean(t, known))
        if q.alias:
            hints.append(f"No script has the alias '{q.alias}'."
                         + did_you_mean(q.alias, [m.alias for m in self.scripts]))
        if not hints and q.tags:
            partial = [m.alias for m in self.scripts if set(q.tags) & set(m.tags)]
            if partial:
                hints.append("Scripts with some of these tags: " + ", ".join(sorted(partial)[:8]))
        for e in self.broken[:LISTED_BROKEN]:
            hints.append(f"Note: a manifest was skipped: {_check_line(e)}")
        if len(self.broken) > LISTED_BROKEN:
            hints.append(f"Note: {len(self.broken)} manifests this engine cannot use were skipped; "
                         "list them with: cm check script")
        return "\n".join(hints) + f"\n({len(self.scripts)} scripts in {len(self.repos)} repositories; " \
            "list them with: cm find script)"


def _check_line(e: ManifestError) -> str:
    """How `cm check script` names a skipped manifest: repository, file:line, reason."""
    return f"{getattr(e, 'repo', '')}: {str(e).splitlines()[0]}"


def _sort_key(m: Manifest) -> float:
    try:
        return float(m.data.get("sort", 0))
    except (TypeError, ValueError):
        return 0.0


def _has_variation(m: Manifest, v: str) -> bool:
    if v in m.variations:
        return True
    prefix = v.split(".", 1)[0]
    return f"{prefix}.#" in m.variations


def _stamp(folder: str) -> Optional[tuple]:
    for name in ("_cm.yaml", "_cm.json"):
        try:
            st = os.stat(os.path.join(folder, name))
            return (name, st.st_mtime_ns, st.st_size)
        except OSError:
            continue
    return None


def _prompt_choice(found: list[Manifest]) -> Optional[Manifest]:
    import sys
    if not sys.stdin or not sys.stdin.isatty():
        return None
    print("Several scripts match; choose one:")
    for i, m in enumerate(found, 1):
        print(f"  {i}) {m.alias} ({m.repo})")
    try:
        answer = input("number> ").strip()
        return found[int(answer) - 1]
    except (ValueError, IndexError, EOFError):
        return None
