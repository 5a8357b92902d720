"""From cmind's input dict to an engine request, and from engine results to cmind's return dict.

`run`, `plan` and `find` for scripts; `show` and `rm` for the cache. User mistakes come back as
`{'return': N, 'error': text}` (no traceback); engine bugs keep their traceback.
"""
from __future__ import annotations

import fnmatch
import json
import os
import sys
import time
from typing import Optional

from . import cache as cachemod
from . import env as envmod
from .errors import EngineError, InputError
from .fingerprint import Fingerprints
from .graph import Planner, Request
from .plantext import render
from .registry import Registry, Repo
from .versions import Constraint

# keys of cmind's input that are not script inputs
CONTROL_KEYS = {
    "action", "automation", "artifact", "artifacts", "tags", "out", "cmd", "parsed_automation",
    "parsed_artifact", "parsed_artifacts", "quiet", "silent", "s", "v", "verbose", "new", "renew",
    "dry_run", "plan", "j", "json", "env", "adr", "add_deps_recursive", "version", "version_min",
    "version_max", "debug", "help", "h", "save_to_json", "f", "force", "orphans", "unparsed_cmd",
    "common", "ignore_inheritance", "repos", "cache_dir",
    # CM's daily flags (docs/cm4mlops.md): fake_run/prepare, print_env, print_deps, silent,
    # extra_cache_tags; skip_remembered_selections is accepted (no selection is remembered here)
    "fake_run", "prepare", "print_env", "print_deps", "extra_cache_tags",
    "skip_remembered_selections", "control", "time", "help_script",
}


def this_repo() -> Repo:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return Repo("cm4mlperf-llm", root)


def order_repos(repos: list[Repo]) -> list[Repo]:
    """The user's local repo first, then this project, then the rest in their order."""
    ours = this_repo()
    local = [r for r in repos if r.alias == "local"]
    rest = [r for r in repos if r.alias != "local" and os.path.realpath(r.path)
            != os.path.realpath(ours.path)]
    return local + [ours] + rest


def _interactive() -> bool:
    return bool(sys.stdin) and sys.stdin.isatty()


def _tags(i: dict) -> list[str]:
    t = i.get("tags", "")
    if isinstance(t, list):
        return [x.strip() for x in t if str(x).strip()]
    return [x.strip() for x in str(t).replace(" ", ",").split(",") if x.strip()]


def request_from(i: dict) -> Request:
    env = i.get("env") or {}
    if not isinstance(env, dict):
        raise InputError("--env must be given as --env.NAME=VALUE")
    env = {str(k): ("yes" if v is True else "no" if v is False else str(v)) for k, v in env.items()}
    adr = i.get("adr") or i.get("add_deps_recursive") or {}
    if not isinstance(adr, dict):
        raise InputError("--adr must be given as --adr.NAME.tags=...")
    inputs = {k: v for k, v in i.items() if k not in CONTROL_KEYS}
    artifact = i.get("artifact", "") or ""
    tags = _tags(i)
    if " " in artifact.strip() or "," in artifact:   # cmr "detect os _var" passes tags this way
        tags = [t for t in artifact.replace(",", " ").split() if t] + tags
        artifact = ""
    if not tags and not artifact:
        raise InputError("no script named: give --tags=... or a script alias",
                         "Example: cm run script --tags=detect,os")
    ect = i.get("extra_cache_tags") or ""
    ect = ect if isinstance(ect, list) else str(ect).split(",")
    return Request(tags=tags, alias=artifact, inputs=inputs, env=env, adr=adr,
                   extra_cache_tags=[str(t).strip() for t in ect if str(t).strip()],
                   version=Constraint(str(i.get("version", "") or ""),
                                      str(i.get("version_min", "") or ""),
                                      str(i.get("version_max", "") or "")),
                   quiet=bool(i.get("quiet", False)) or not _interactive())


def typed_secrets(inputs: dict, env: dict, argv: list[str], descriptions: dict) -> list[str]:
    """A warning for each secret (cmcontract.secret) typed on this process's command line (`cm run ...
    --api_key=KEY`): every user of the machine can read it there (ps) while the run lasts, and the shell's
    history keeps it. Where the top step also reads one from the environment (its input_description's
    `environment: NAME`), that way is named. A secret handed in through cmind's Python API is on no
    command line and is not warned about."""
    out = []
    typed = [(f"--{k}", k, k) for k in inputs] + [(f"--env.{k}", k, "") for k in env]
    for flag, name, an_input in typed:
        if not envmod.is_secret(name) or not any(a == flag or a.startswith(flag + "=") for a in argv):
            continue
        d = descriptions.get(an_input) if an_input else None
        instead = d.get("environment") if isinstance(d, dict) else None
        fix = (f"export {instead}=... instead (this step reads it there)" if instead else
               "give it through the environment where the step reads one (see --help)")
        out.append(f"warning: {flag} is a secret on the command line, which every user of this machine can read "
                   f"(ps) while the run lasts and your shell's history keeps; {fix}")
    return out


class Session:
    """One engine invocation: registry, fingerprints and the cache store."""

    def __init__(self, repos: list[Repo], cache_dir: Optional[str] = None, out=None):
        self.store = cachemod.Store(cache_dir or cachemod.default_root())
        memo = os.path.join(self.store.root, "memo")
        self.registry = Registry(order_repos(repos), os.path.join(memo, "registry.pickle"))
        self.fp = Fingerprints(os.path.join(memo, "fingerprints.pickle"))
        self.out = out or sys.stdout
        self.store.warn = lambda msg: print(msg, file=sys.stderr)
        # another CM engine's cache (foreign_cache.py): the repositories that may hold its
        # entries and the ones whose `cache` automation made them; set by the cache adapter
        self.foreign_repos: list[str] = []
        self.foreign_engines: list[str] = []

    def warn_broken(self) -> None:
        for w in self.registry.warnings():
            print(w, file=sys.stderr)

    def plan(self, i: dict):
        from .executor import validate
        req = request_from(i)
        plan = Planner(self.registry, self.fp, req).plan()
        planned = len(plan.warnings)
        settled = validate(plan)
        if settled:        # defaults the top step settled from its inputs: plan as if asked for
            notes = plan.warnings[planned:]
            req.tags = list(req.tags) + ["_" + v for v in settled.variations]
            req.settled_env = dict(settled.env)
            plan = Planner(self.registry, self.fp, req).plan()
            validate(plan)
            plan.warnings.extend(notes)
        cachemod.decide(plan, self.store, renew_all=bool(i.get("renew")),
                        new_root=bool(i.get("new")))
        self.fp.save()
        return plan

    def run(self, i: dict) -> dict:
        from .executor import Executor
        if i.get("help") or i.get("h"):
            from .helptext import script_help
            print(script_help(self.registry, request_from(i)), file=self.out)
            return {"return": 0, "skip_delayed_help": True}
        # -j: we print the JSON; --out=json and cmx (-j in its control): cmind prints it
        control = i.get("control") if isinstance(i.get("control"), dict) else {}
        cmind_prints = str(i.get("out", "")) == "json" or bool(control.get("j")
                                                               or control.get("json"))
        as_json = bool(i.get("j") or i.get("json")) or cmind_prints
        out = sys.stderr if as_json else self.out
        self.warn_broken()
        t0 = time.time()
        plan = self.plan(i)
        for w in plan.warnings + typed_secrets(plan.request.inputs, plan.request.env, sys.argv,
                                               plan.root.manifest.get("input_description") or {}):
            print(w, file=sys.stderr)
        if i.get("dry_run") or i.get("plan") or i.get("action") == "plan":
            from .executor import preview
            text = render(plan)
            said = preview(plan)            # the top step's own words, where it has a preview hook
            print(text + (f"\n\n{said}" if said else ""), file=out)
            result = {"return": 0, "plan": _plan_json(plan), "key": plan.root.key}
        else:
            ex = Executor(plan, self.store, out=out, inputs=plan.request.inputs,
                          fake_run=bool(i.get("fake_run") or i.get("prepare")),
                          print_env=bool(i.get("print_env")),
                          silent=bool(i.get("s") or i.get("silent")),
                          verbose=bool(i.get("v") or i.get("verbose")))
            # a hook may run another chain in this session (same repositories, cache, output)
            ex.run_script = lambda sub: guarded(self.run, {**sub, "action": "run", "j": False})
            if as_json:   # what hooks print must not corrupt the JSON on stdout
                import contextlib
                with contextlib.redirect_stdout(sys.stderr):
                    outcome = ex.run()
            else:
                outcome = ex.run()
            if not ex.silent:
                print(f"done: {plan.root.name} in {time.time() - t0:.2f} s"
                      + (" (cached)" if outcome.cached else ""), file=out)
            new_state = outcome.state
            if i.get("print_deps"):
                cmds = [e.node.rerun_command({}) for e in plan.root.edges if e.node is not None]
                print("Direct dependencies of " + plan.root.name + ":\n" +
                      "\n".join("  " + c for c in cmds), file=out)
                new_state = dict(new_state, print_deps=cmds)
            result = {"return": 0, "new_env": outcome.env, "new_state": new_state,
                      "env": outcome.env, "cached": outcome.cached, "key": plan.root.key,
                      "work_dir": outcome.work_dir, "steps": ex.log}
        if as_json and not cmind_prints:
            json.dump(result, sys.stdout, indent=2, sort_keys=True, default=str)
            print()
        return result

    def find(self, i: dict) -> dict:
        from .registry import Query
        q = Query.parse(_tags(i), i.get("artifact", "") or "")
        found = self.registry.find(q) if (q.tags or q.alias) else self.registry.scripts
        for m in found if i.get("out") == "con" else ():   # the CLI lists; the API returns
            print(f"{m.alias:45s} {m.repo:16s} {','.join(m.tags)}", file=self.out)
        self.warn_broken()
        return {"return": 0, "list": [{"alias": m.alias, "repo": m.repo, "tags": m.tags,
                                       "path": m.folder, "meta": _public_meta(m)} for m in found]}

    def check(self, i: dict) -> dict:
        """cm check script: every manifest this engine cannot use, with the reason."""
        problems = self.registry.check()
        for line in problems:
            print(line, file=self.out)
        print(f"{len(self.registry.scripts)} scripts usable, {len(problems)} manifest"
              f"{'' if len(problems) == 1 else 's'} skipped, in {len(self.registry.repos)} "
              "repositories", file=self.out)
        return {"return": 0, "usable": len(self.registry.scripts), "skipped": problems}

    # -- cache actions ------------------------------------------------------------------------
    def cache_matches(self, i: dict) -> list[cachemod.Entry]:
        tags = _tags(i)
        want = [t for t in tags if not t.startswith("-")]
        avoid = [t[1:] for t in tags if t.startswith("-")]
        artifact = i.get("artifact", "") or ""
        out = []
        for e in self.store.entries():
            have = set(e.tags) | {e.alias}
            if artifact and not (fnmatch.fnmatch(e.alias, artifact) or e.key.startswith(artifact)):
                continue
            if all(t in have for t in want) and not any(t in have for t in avoid):
                out.append(e)
        return out

    def foreign_matches(self, i: dict) -> list:
        from . import foreign_cache
        tags = _tags(i)
        return foreign_cache.matching(foreign_cache.scan(self.foreign_repos),
                                      [t for t in tags if not t.startswith("-")],
                                      [t[1:] for t in tags if t.startswith("-")],
                                      i.get("artifact", "") or "")

    def show_cache(self, i: dict) -> dict:
        from . import foreign_cache
        entries = self.cache_matches(i)
        for e in entries:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.meta.get("created", 0)))
            v = ",".join("_" + x for x in e.meta.get("variations", []))
            print(f"{e.key[:12]}  {when}  {e.alias} {v}\n    path: {e.path}", file=self.out)
            if i.get("v") or i.get("verbose"):
                for k, val in sorted(e.meta.get("new_env", {}).items()):
                    print(f"    {k}={val}", file=self.out)
        print(f"{len(entries)} cache entr{'y' if len(entries) == 1 else 'ies'} in "
              f"{self.store.root}", file=self.out)
        foreign = self.foreign_matches(i)
        for line in foreign_cache.render(foreign, self.foreign_engines,
                                         bool(i.get("v") or i.get("verbose"))):
            print(line, file=self.out)
        return {"return": 0, "list": [{"key": e.key, "alias": e.alias, "path": e.path,
                                       "tags": e.tags} for e in entries]
                + [{"key": f.uid, "alias": f.script, "path": f.path, "tags": f.tags,
                    "other_engine": True} for f in foreign]}

    def rm_cache(self, i: dict) -> dict:
        if i.get("orphans"):
            gone = self.store.orphans()
            for p in gone:
                import shutil
                shutil.rmtree(p, ignore_errors=True)
            print(f"removed {len(gone)} orphan folder(s) left by interrupted builds", file=self.out)
            return {"return": 0, "removed": gone}
        entries = self.cache_matches(i)
        if not (_tags(i) or i.get("artifact")) and not (i.get("f") or i.get("force")):
            raise InputError("cm rm cache without --tags would remove every entry",
                             "Add --tags=... to choose entries, or -f to remove all of them.")
        if entries and not (i.get("f") or i.get("force")):
            for e in entries:
                print(f"  {e.key[:12]} {e.alias} {e.path}", file=self.out)
            if i.get("quiet") or not _interactive():
                raise InputError(f"{len(entries)} entries match; add -f to remove them")
            if input(f"Remove these {len(entries)} entries? [y/N] ").strip().lower() not in ("y",
                                                                                          "yes"):
                return {"return": 0, "removed": []}
        for e in entries:
            self.store.remove(e)
        print(f"removed {len(entries)} cache entr{'y' if len(entries) == 1 else 'ies'}",
              file=self.out)
        from . import foreign_cache
        note = foreign_cache.removal_note(self.foreign_matches(i), self.foreign_engines,
                                          ",".join(_tags(i)))
        if note:
            print(note, file=self.out)
        return {"return": 0, "removed": [e.key for e in entries]}


def _public_meta(m) -> dict:
    """The manifest as a CM user's code reads it (`artifact.meta`), without our own markers."""
    meta = {k: v for k, v in m.data.items() if not k.startswith("_")}
    meta.setdefault("alias", m.alias)
    meta.setdefault("uid", m.uid)
    meta.setdefault("tags", list(m.tags))
    return meta


def _plan_json(plan) -> list[dict]:
    return [{"script": n.alias, "variations": n.selection.names, "key": n.key,
             "depth": depth, "verdict": n.verdict.action if n.verdict else "",
             "reason": n.verdict.reason if n.verdict else "", "shared": not first}
            for depth, _, n, first in plan.walk()]


def guarded(fn, *args) -> dict:
    """Call an engine action; user-facing errors become cmind return dicts."""
    try:
        return fn(*args)
    except EngineError as e:
        return {"return": e.exit_code, "error": str(e)}
    except KeyboardInterrupt as e:   # interrupt.Interrupted carries the signal (SIGTERM, SIGHUP, SIGINT)
        name = getattr(e, "name", "SIGINT")
        code = getattr(e, "exit_code", 130)
        how = " (Ctrl-C)" if name == "SIGINT" else ""
        return {"return": code, "error": f"interrupted by {name}{how}, exit code {code}: the steps' cleanups "
                                         "ran (what they stopped is printed above) and nothing incomplete "
                                         "was published to the cache"}
