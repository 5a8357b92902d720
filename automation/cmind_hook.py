"""Helps cmind 4.2.0 serve a CM home where other repositories are registered beside this one.

cmind picks the automation that answers `cm <action> <automation>` by searching every registered
repository; it stops with "ambiguity" when two define one (cm4mlops also has `script` and
`cache`), and with its index on it silently takes whichever was indexed first. A repository
whose alphabetically first manifest in a folder cannot be read stops every command. This module
changes exactly four things, and only for the cmind version it was written against:

- **Which automation answers.** When several repositories define the requested automation:
  the one of the repository the user named for an enclosing command (`cm run
  mlcommons@cm4mlops:script ...` makes every nested `script`/`cache` access of that run go to
  cm4mlops), else this project's. Lookups bypass cmind's index (one slot per name).
- **`--dry-run` is never dropped.** An upstream `script` automation named explicitly with
  `--dry-run`/`--plan` is refused (it does not know those flags and would run for real).
- **Which scripts the named engine sees.** Under such a named engine, a search for scripts
  walks every repository (not cmind's index, which keeps one script per name) and, where two
  repositories have a script of the same alias, keeps the named repository's.
- **Unreadable manifests are skipped.** When one of cmind's own searches fails on a manifest it
  cannot read, the search is redone skipping it (with a warning), so other artifacts keep working.

`cm4mlperf_llm-cmind.pth` (setup.py) adds a four-line import finder to every Python process of
the environment; only when `cmind.core` is imported does it load this module, whose
`find_spec` loads cmind and patches it.
"""
from __future__ import annotations

import os
import sys

CMIND_VERSION = "4.2.0"            # the version whose internals this patch was written against
OUR_REPO_UID = "6d3f1c8e2a9b4f70"   # cmr.yaml
AUTOMATION = ("automation", "bbeb15d8f0a944a4")   # cmind's automation of automations
SCRIPT_UID = "5b4e0237da074764"   # the `script` automation's uid, ours and CM's
_UNREADABLE = "Can't load artifact meta in path "
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_frames: list = []   # one per CM.access / CM.x call in progress, innermost last


class _Frame:
    def __init__(self, i) -> None:
        self.input = i if isinstance(i, dict) else {}
        self.repo = None   # (alias, uid) of the repository this call named for its automation


# -- installing ------------------------------------------------------------------------------

def install() -> None:
    """Patch cmind now if it is loaded, else when `cmind.core` is first imported."""
    core = sys.modules.get("cmind.core")
    if core is not None:
        patch(core)
    elif not any(getattr(f, "cm4mlperf_hook", False) for f in sys.meta_path):
        # (a venv's lib64 -> lib link runs the .pth twice, each time as a new module)
        sys.meta_path.insert(0, _Finder())


def find_spec(name, path=None, target=None):
    """The spec of `cmind.core` as the path finder gives it, with a loader that patches it once
    it has executed (the finder that setup.py's .pth installs calls this)."""
    if name != "cmind.core":
        return None
    import importlib.machinery
    spec = importlib.machinery.PathFinder.find_spec(name, path)
    if spec is None or spec.loader is None:
        return None
    spec.loader = _Loader(spec.loader)
    return spec


class _Finder:
    cm4mlperf_hook = True

    def find_spec(self, name, path=None, target=None):
        return find_spec(name, path, target)


class _Loader:
    def __init__(self, loader) -> None:
        self._loader = loader

    def __getattr__(self, name):   # get_source, get_filename, ... for tracebacks and inspect
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        patch(module)


def patch(core) -> bool:
    """Apply the patch to `cmind.core` (and `cmind.automation`); False where it is not applied."""
    if getattr(core.CM, "_cm4mlperf_hook", False):
        return True
    version = sys.modules["cmind"].__version__ if "cmind" in sys.modules else ""
    if version != CMIND_VERSION:
        print(f"warning: cm4mlperf-llm's cmind hook was written for cmind {CMIND_VERSION}, not "
              f"{version}; it is off, so a second repository with a `script` automation (e.g. "
              f"cm4mlops) makes `cm run script` ambiguous. Fix: pip install cmind=={CMIND_VERSION}",
              file=sys.stderr)
        return False
    from cmind import automation as automation_module
    core.CM.access = _entry(core.CM.access, parse=True)
    core.CM.x = _entry(core.CM.x, parse=False)
    automation_module.Automation.search = _search(automation_module.Automation.search)
    core.CM._cm4mlperf_hook = True
    return True


# -- the patched functions -------------------------------------------------------------------

def _entry(original, parse: bool):
    """CM.access / CM.x: keep a frame per call, so nested calls know what their caller named."""

    def entry(self, i, out=None):
        if parse and isinstance(i, (str, list)):
            # what access() does first (its debug check looks at the raw input); done here to
            # see the parsed input
            if self.cfg["flag_debug"] in i:
                self.debug = True
            import cmind.cli
            r = cmind.cli.parse(i)
            if r["return"] > 0:
                return r
            i = r["cm_input"]
        _frames.append(_Frame(i))
        try:
            return original(self, i, out)
        finally:
            _frames.pop()

    entry.__doc__ = original.__doc__
    entry.__wrapped__ = original
    return entry


def _search(original):
    def search(self, i):
        if "action" in i or list(i.get("parsed_automation", [])) != [AUTOMATION]:
            preferred = _preferred()
            if preferred is not None and _is_script(i):
                i = dict(i, skip_index_search=True)   # the index keeps one script per name
            r = original(self, i)
            if _unreadable(r):
                r = tolerant_search(self, i, warn=True)
            if preferred is not None and _is_script(i) and r["return"] == 0:
                r["list"] = prefer_repo(r["list"], preferred)
            return r
        # cmind choosing the automation that serves an access() call
        ii = dict(i, skip_index_search=True)
        r = original(self, ii)
        if _unreadable(r):
            r = tolerant_search(self, ii, warn=False)   # the engine that runs reports them
        if r["return"] > 0:
            return r
        found = r["list"]
        frame = _frames[-1] if _frames else None
        if len(found) > 1:
            found = choose(found, _preferred())
        elif len(found) == 1 and frame is not None and len(i.get("parsed_artifact", [])) > 1:
            frame.repo = _repo_id(found[0])   # the user named this repository
        if frame is not None and len(found) == 1:
            refusal = _refuse_unknown_plan(found[0], frame.input)
            if refusal:
                return refusal
        return {"return": 0, "list": found}

    search.__doc__ = original.__doc__
    search.__wrapped__ = original
    return search


def _preferred():
    for f in reversed(_frames):
        if f.repo is not None:
            return f.repo
    return None


def _repo_id(artifact) -> tuple:
    meta = getattr(artifact, "repo_meta", None) or {}
    return (meta.get("alias", ""), meta.get("uid", ""))


def choose(found: list, preferred=None) -> list:
    """Of several automations with one name: the preferred repository's, else this project's
    (the copy holding this file first), else all of them (cmind then reports the ambiguity)."""
    if preferred is not None:
        mine = [a for a in found if _repo_id(a) == preferred]
        if len(mine) == 1:
            return mine
    ours = [a for a in found if _repo_id(a)[1] == OUR_REPO_UID]
    if len(ours) > 1:
        here = [a for a in ours if os.path.realpath(getattr(a, "repo_path", "") or "")
                == os.path.realpath(_ROOT)]
        ours = here or ours[:1]
    return ours if len(ours) == 1 else found


def _is_script(i: dict) -> bool:
    parsed = i.get("parsed_automation") or [("", "")]
    return parsed[0][0] == "script" or parsed[0][1] == SCRIPT_UID


def prefer_repo(found: list, preferred) -> list:
    """Where the preferred repository and another have a script of the same alias or uid, only
    the preferred repository's (a user naming cm4mlops' engine gets cm4mlops' detect-os)."""
    names = set()
    for a in found:
        if _repo_id(a) == preferred:
            names |= {a.meta.get("alias", ""), a.meta.get("uid", "")} - {""}
    return [a for a in found if _repo_id(a) == preferred
            or not ({a.meta.get("alias", ""), a.meta.get("uid", "")} & names)]


def _refuse_unknown_plan(artifact, i: dict):
    meta = getattr(artifact, "meta", None) or {}
    if meta.get("alias") != "script" or _repo_id(artifact)[1] == OUR_REPO_UID:
        return None
    if not (i.get("dry_run") or i.get("plan")):
        return None
    repo = _repo_id(artifact)[0]
    return {"return": 2, "error": (
        f"--dry-run/--plan are flags of the cm4mlperf-llm engine; the `script` automation of "
        f"{repo} named here does not know them and would run for real.\n"
        "Drop the repository name to plan with cm4mlperf-llm (it runs scripts of every "
        "registered repository): cm run script --tags=... --dry-run")}


def _unreadable(r: dict) -> bool:
    return r.get("return", 0) > 0 and str(r.get("error", "")).startswith(_UNREADABLE)


def tolerant_search(automation, i: dict, warn: bool) -> dict:
    """cmind 4.2.0's search without its index (Automation.search, the walk over repositories),
    except that an artifact whose meta cannot be read is skipped instead of ending the search,
    and the first readable artifact of a folder tells which automation the folder holds."""
    import copy

    from cmind import utils
    from cmind.artifact import Artifact
    cm = automation.cmind
    tags = utils.get_list_from_cli(i, key="tags")
    and_tags = [t.strip() for t in tags if t.strip() and not t.strip().startswith("-")]
    no_tags = [t.strip()[1:] for t in tags if t.strip().startswith("-")]
    ignore_inheritance = i.get("ignore_inheritance", False) is True
    parsed_automation = i.get("parsed_automation", [])
    automation_name = parsed_automation[0] if parsed_automation else ("", "")
    parsed_artifact = i.get("parsed_artifact", [])
    artifact_obj = parsed_artifact[0] if parsed_artifact else ("", "")
    artifact_repo = parsed_artifact[1] if len(parsed_artifact) > 1 else None
    console = i.get("out") == "con"
    found, skipped = [], []
    for repo in cm.repos.lst:
        if artifact_repo is not None:
            r = utils.match_objects(uid=repo.meta["uid"] or None, alias=repo.meta["alias"] or None,
                                    uid2=artifact_repo[1], alias2=artifact_repo[0])
            if r["return"] > 0:
                return r
            if not r["match"]:
                continue
        top = repo.path_with_prefix
        for folder in sorted(os.listdir(top)):
            path_folder = os.path.join(top, folder)
            if not os.path.isdir(path_folder):
                continue
            first = True
            for name in sorted(os.listdir(path_folder)):
                path = os.path.join(path_folder, name)
                if not os.path.isdir(path):
                    continue
                r = utils.is_file_json_or_yaml(file_name=os.path.join(path, cm.cfg["file_cmeta"]))
                if r["return"] > 0:
                    return r
                if not r["is_file"]:
                    continue
                artifact = Artifact(cmind=cm, path=path)
                artifact.repo_path = top
                artifact.repo_meta = copy.deepcopy(repo.meta)
                r = artifact.load(ignore_inheritance=True if first else ignore_inheritance)
                if _unreadable(r):
                    skipped.append(r["error"])
                    continue
                if r["return"] > 0:
                    return r
                meta = artifact.meta
                if first:
                    r = utils.match_objects(uid=meta.get("automation_uid"),
                                            alias=meta.get("automation_alias"),
                                            uid2=automation_name[1], alias2=automation_name[0],
                                            more_strict=True)
                    if r["return"] > 0:
                        return r
                    if not r["match"]:
                        break
                r = utils.match_objects(uid=meta.get("uid", "") or "",
                                        alias=meta.get("alias", "") or "",
                                        uid2=artifact_obj[1], alias2=artifact_obj[0])
                if r["return"] > 0:
                    return r
                if r["match"]:
                    if first:
                        r = artifact.load(ignore_inheritance=ignore_inheritance)
                        if r["return"] > 0:
                            return r
                    if cm.use_index or i.get("force_index_add", False):
                        cm.index.add(artifact.meta, path, (repo.meta["alias"], repo.meta["uid"]))
                    if utils.tags_matched(artifact.meta.get("tags", []), and_tags, no_tags):
                        found.append(artifact)
                        if console:
                            print(artifact.path)
                first = False
    if warn:
        for e in skipped:
            print(f"warning: skipped a manifest cmind cannot read (other artifacts are "
                  f"unaffected): {e}", file=sys.stderr)
    return {"return": 0, "list": found, "skipped": skipped}
