"""Runs a plan: dependencies, `customize.py` hooks, the native `run.sh`, cache entries.

Order per node: deps -> preprocess -> prehook_deps -> run.sh -> posthook_deps -> postprocess ->
post_deps. A cached node replays the env and state recorded in its entry and runs nothing.
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from typing import Optional, TextIO

from cmcontract.secret import is_secret

from . import conditions, env as envmod
from .cache import Store, found_files
from .errors import EngineError, HookError, InputError, ScriptFailed
from .graph import Node, Plan


def select_state(state: dict, patterns: list) -> dict:
    if not patterns or not state:
        return {}
    from .cmapi import select_state as select
    return select(state, patterns)

AUTOMATION_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Outcome:
    """What one node produced: the env and state it passes on, where it ran, how long it took."""

    def __init__(self, env: dict, state: dict, cached: bool, work_dir: str, seconds: float = 0.0):
        self.env = env              # what leaves the node (filtered by new_env_keys)
        self.state = state
        self.cached = cached
        self.work_dir = work_dir
        self.seconds = seconds


class Executor:
    """Walks a plan from its root: each node once, cached nodes replayed from their entries."""

    def __init__(self, plan: Plan, store: Store, out: Optional[TextIO] = None,
                 inputs: Optional[dict] = None, fake_run: bool = False, print_env: bool = False,
                 silent: bool = False, verbose: bool = False):
        self.plan = plan
        self.fake_run = fake_run      # --fake_run: the top step's hooks and run.sh do not run
        self.print_env = print_env    # --print_env: the env before each native script
        self.silent = silent          # -s: no progress lines (scripts' own output stays)
        self.verbose = verbose        # --v: the env each step passes on
        self.store = store
        self.out = out if out is not None else sys.stdout
        self.inputs = inputs if inputs is not None else {}
        self.results: dict[str, Outcome] = {}   # node key -> outcome
        self.run_dir = ""
        self.log: list[dict] = []                # one record per node, for the run's summary
        self.cleanups: list = []                 # (node, hooks, env, state, folder) with cleanup()
        self.not_kept: dict[str, str] = {}       # node key -> why its hook asked not to cache it
        self.unkept_folders: list[str] = []      # their build folders, removed when the run ends
        self.run_script = None                   # set by cli.Session: a hook's sub-run (cmind input dict)
        self.added_tags: dict[str, list[str]] = {}   # node key -> add_extra_cache_tags of hooks

    def say(self, msg: str) -> None:
        if not self.silent:
            print(msg, file=self.out, flush=True)

    def run(self) -> Outcome:
        """Run the plan. SIGTERM, SIGHUP and SIGINT raise interrupt.Interrupted: the cleanups run (a
        second signal waits for them), nothing incomplete is published, and the caller exits 128 + N."""
        from . import interrupt   # the signal module: only a run pays for it
        if hooks_need_path():
            sys.path.insert(0, AUTOMATION_DIR)
        with interrupt.raising():
            try:
                return self._exec(self.plan.root, dict(self.plan.base_env), {}, 0)
            except interrupt.Interrupted as e:
                self.say(f"! {e.name} received: stopping what this run started")
                raise
            finally:
                with interrupt.deferred(self.say):
                    self._cleanup()
                    for folder in self.unkept_folders:
                        self.store.drop(folder)

    def _cleanup(self) -> None:
        """`cleanup(i)` hooks of the steps that ran, newest first, whether the run failed or not
        (a server a step started is stopped even when the benchmark after it fails)."""
        while self.cleanups:
            node, module, env, state, folder = self.cleanups.pop()
            try:
                self._hook(node, module, "cleanup", env, state, folder)
            except EngineError as e:
                self.say(f"! cleanup of {node.name} failed: {e}")

    # -- one node -----------------------------------------------------------------------------
    def _exec(self, node: Node, inbound: dict, state: dict, depth: int) -> Outcome:
        if node.key in self.results:
            return self.results[node.key]
        pad = "  " * depth
        v = node.verdict
        fake = self.fake_run and node is self.plan.root
        if fake:
            return self._fake(node, inbound, state, depth)
        if v is not None and v.cached:
            meta = v.entry.meta
            self.say(f"{pad}= {node.name}: cached ({v.entry.path})")
            outcome = Outcome(dict(meta.get("new_env", {})), dict(meta.get("new_state", {})),
                              True, v.entry.path)
            self.results[node.key] = outcome
            self.log.append(_step_record(node, outcome))
            return outcome
        t0 = time.time()
        self.say(f"{pad}> {node.name}" + (f"  ({v.reason})" if v and node.manifest.cache else ""))
        if node.manifest.cache:
            with self.store.lock(node.key, node.name):
                again = None if (v is not None and v.forced) else self.store.lookup(node.key)
                if again is not None:   # built by a concurrent run while we waited
                    self.say(f"{pad}= {node.name}: built meanwhile by another run ({again.path})")
                    outcome = Outcome(dict(again.meta.get("new_env", {})),
                                      dict(again.meta.get("new_state", {})), True, again.path)
                else:
                    folder = self.store.new_folder(node.alias, node.key)
                    try:
                        env, st = self._steps(node, inbound, state, folder, depth)
                    except BaseException:
                        kept = self.store.discard(folder)
                        self.say(f"{pad}! {node.name}: failed; its files are kept in {kept}")
                        raise
                    new_env = envmod.select(env, node.new_env_keys)
                    new_state = _published_state(node, st)
                    if node.key in self.not_kept:   # a fallback: used by this run, retried by the next
                        self.say(f"{pad}  {node.name}: not kept in the cache ({self.not_kept[node.key]})")
                        self.unkept_folders.append(folder)
                    else:
                        self.store.publish(node.key, folder, {
                            "alias": node.alias, "repo": node.manifest.repo,
                            "tags": node.manifest.tags + [
                                t for t in node.extra_tags(env) + self.added_tags.get(node.key, [])
                                if t not in node.manifest.tags],
                            "variations": node.selection.names,
                            "version": node.version, "components": node.components,
                            "code_files": node.code_files,
                            "recheck": found_files(env, node.manifest.get("cache_recheck_env")
                                                   or []),
                            "new_env": new_env, "new_state": new_state})
                    outcome = Outcome(envmod.select(new_env, ["*"]), new_state, False, folder)
        else:
            folder = os.path.join(self._run_dir(), f"{node.alias}-{node.key[:8]}")
            os.makedirs(folder, exist_ok=True)
            env, st = self._steps(node, inbound, state, folder, depth)
            outcome = Outcome(envmod.select(env, node.new_env_keys), _published_state(node, st), False, folder)
        if self.verbose:
            for k, val in sorted(envmod.redacted(outcome.env).items()):
                self.say(f"{pad}  {k}={val}")
        outcome.seconds = time.time() - t0
        self.results[node.key] = outcome
        self.log.append(dict(_step_record(node, outcome), seconds=round(outcome.seconds, 3)))
        return outcome

    def _fake(self, node: Node, inbound: dict, state: dict, depth: int) -> Outcome:
        """--fake_run (CM's meaning): the top step's deps and prehook_deps run; its preprocess,
        run.sh, posthook_deps, postprocess and post_deps do not, and nothing is cached."""
        self.say(f"{'  ' * depth}> {node.name}  (fake run: its hooks and native script are not run)")
        folder = os.path.join(self._run_dir(), f"{node.alias}-{node.key[:8]}")
        os.makedirs(folder, exist_ok=True)
        env = node.build_env(inbound, self.plan.request.run_env)
        env["CM_TMP_FAKE_RUN"] = "yes"
        st = dict(state)
        self._deps(node, "deps", env, st, depth)
        self._deps(node, "prehook_deps", env, st, depth)
        if self.print_env:
            self._show_env(node, env)
        outcome = Outcome(envmod.select(env, node.new_env_keys),
                          select_state(st, node.new_state_keys), False, folder)
        self.results[node.key] = outcome
        self.log.append({"script": node.alias, "key": node.key, "cached": False, "path": folder,
                         "fake_run": True})
        return outcome

    def _show_env(self, node: Node, env: dict) -> None:
        print(f"env of {node.name}:\n" + json.dumps(envmod.redacted(env), indent=2, sort_keys=True,
                                                     default=str), file=self.out, flush=True)

    def _rerun(self, node: Node) -> str:
        return node.rerun_command(self.inputs if node is self.plan.root else {})

    def _run_dir(self) -> str:
        if not self.run_dir:
            self.run_dir = self.store.run_folder(self.plan.root.alias)
        return self.run_dir

    def _steps(self, node: Node, inbound: dict, parent_state: dict, folder: str,
               depth: int) -> tuple[dict, dict]:
        env = node.build_env(inbound, self.plan.request.run_env)
        state = {k: v for k, v in parent_state.items()}
        if node.static_state:
            from .graph import _merged_state
            state = _merged_state(state, node.static_state)
        try:
            self._deps(node, "deps", env, state, depth)
            hooks = _load_hooks(node)
            cwd = os.getcwd()
            os.chdir(folder)
            try:
                skip_run = False
                if hooks and hasattr(hooks, "preprocess"):
                    r = self._hook(node, hooks, "preprocess", env, state, folder)
                    skip_run = bool(r.get("skip"))
                self._deps(node, "prehook_deps", env, state, depth)
                if not skip_run:
                    self._native(node, env, state, folder)
                self._deps(node, "posthook_deps", env, state, depth)
                if hooks and hasattr(hooks, "postprocess"):
                    self._hook(node, hooks, "postprocess", env, state, folder)
            finally:
                if hooks and hasattr(hooks, "cleanup"):
                    self.cleanups.append((node, hooks, env, state, folder))
                os.chdir(cwd)
            self._deps(node, "post_deps", env, state, depth)
        except EngineError as e:
            # what the step put in its new_state_keys before it failed (a checker's FAIL verdict):
            # a caller that goes on without it (continue_on_error) still gets it, as in CM,
            # where state is one dict. Never cached: a failed step publishes no entry.
            published = e.__dict__.setdefault("published_state", {})
            if node.key not in published:
                try:
                    published[node.key] = _published_state(node, state)
                except EngineError:
                    published[node.key] = {}
            raise
        return env, state

    def _deps(self, node: Node, phase: str, env: dict, state: dict, depth: int) -> None:
        for edge in node.deps(phase):
            if edge.node is None:
                if edge.decided is None and conditions.evaluate(edge.dep.conditions, env):
                    raise EngineError(f"{node.alias}: dependency {','.join(edge.dep.tags)} "
                                      f"was {edge.reason}")
                continue
            if edge.dep.skip_if_fake_run and self.fake_run:
                self.say(f"{'  ' * (depth + 1)}- {edge.node.name}: skipped (skip_if_fake_run)")
                continue
            if edge.decided is None:
                if not conditions.evaluate(edge.dep.conditions, env):
                    self.say(f"{'  ' * (depth + 1)}- {edge.node.name}: skipped "
                             f"({conditions.describe(edge.dep.conditions)})")
                    continue
            inbound = dict(env)
            envmod.merge(inbound, {k: envmod.substitute(v, env) for k, v in edge.dep.env})
            try:
                out = self._exec(edge.node, inbound, state, depth + 1)
            except EngineError as e:
                if edge.dep.continue_on_error:
                    reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                    self.say(f"{'  ' * (depth + 1)}! {edge.node.name} failed: {reason}\n"
                             f"{'  ' * (depth + 1)}  continuing without it (continue_on_error)")
                    state.update(getattr(e, "published_state", {}).get(edge.node.key, {}))
                    continue
                raise
            if edge.node.key in self.not_kept and node.key not in self.not_kept:
                self.not_kept[node.key] = f"it used {edge.node.name}, which was not kept"
            envmod.merge(env, out.env)
            state.update(out.state)

    # -- hooks and native scripts -------------------------------------------------------------
    def _hook(self, node: Node, module, fn: str, env: dict, state: dict, folder: str) -> dict:
        inputs = dict(self.inputs) if node is self.plan.root else {}
        i = {"env": env, "state": state, "meta": node.manifest.data, "input": inputs,
             "script_path": node.manifest.folder, "work_dir": folder,
             "run_script_input": {"path": node.manifest.folder},
             "variation_tags": node.selection.names, "version": node.version,
             "steps": list(self.log), "plan_key": self.plan.root.key,
             "request": _request_record(self.plan.request, self.plan.paths), "run_script": self.run_script}
        from . import cmapi
        facade = cmapi.Facade(node.manifest.folder, node.manifest.data,
                              lambda script, e, s: self._native(node, e, s, folder, script),
                              os.path.join(AUTOMATION_DIR, "script"))
        i = cmapi.hook_input(i, facade, module, node.manifest.tags)
        path = os.path.join(node.manifest.folder, "customize.py")
        try:
            r = getattr(module, fn)(i)
        except EngineError:
            raise
        except Exception as e:  # name the hook's file and line, not the engine's
            line = _line_in(e, path)
            raise HookError(f"{fn}() in {path}{':' + str(line) if line else ''} of script "
                            f"'{node.alias}' raised {e.__class__.__name__}: {e}",
                            f"Rerun just this step with:\n  {self._rerun(node)}"
                            ) from None
        if r is None:
            r = {"return": 0}
        if not isinstance(r, dict):
            raise HookError(f"{fn}() in {path} of script '{node.alias}' returned {type(r).__name__}"
                            ", not a dict with 'return'")
        if r.get("return", 0) > 0:
            raise HookError(f"{node.alias}: {r.get('error', 'failed without a message')}",
                            f"(reported by {fn}() in {path})")
        if r.get("add_extra_cache_tags"):   # CM: tags for this step's cache entry
            self.added_tags.setdefault(node.key, []).extend(
                str(t) for t in r["add_extra_cache_tags"] if t)
        if r.get("cache") is False:     # {'return': 0, 'cache': False, 'reason': ...}
            self.not_kept[node.key] = r.get("reason") or f"{fn}() of {node.alias} said so"
        return r

    def _native(self, node: Node, env: dict, state: dict, folder: str,
                script: str = "") -> None:
        if not script:
            from .cmapi import script_file
            name = node.manifest.get("script_name") or "run"
            script = os.path.join(node.manifest.folder,
                                  script_file(env, node.manifest.folder, name))
        if not os.path.isfile(script):
            return
        if self.print_env:
            self._show_env(node, env)
        env_out = os.path.join(folder, "tmp-run-env.out")
        state_out = os.path.join(folder, "tmp-run-state.json")
        for p in (env_out, state_out):
            if os.path.exists(p):
                os.unlink(p)
        penv = envmod.for_process(env)
        penv["CM_TMP_CURRENT_SCRIPT_PATH"] = node.manifest.folder
        penv["CM_TMP_CURRENT_PATH"] = folder
        penv["CM_TMP_CURRENT_SCRIPT_WORK_PATH"] = folder
        penv["PYTHONPATH"] = os.pathsep.join(
            [AUTOMATION_DIR] + ([penv["PYTHONPATH"]] if penv.get("PYTHONPATH") else []))
        import subprocess
        log_path = os.path.join(folder, f"{node.alias}.log")
        command = f"bash {script}"
        with open(log_path, "ab") as log:
            log.write(f"# {command}\n# cwd: {folder}\n".encode())
            proc = subprocess.Popen(["bash", script], cwd=folder, env=penv,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)
            assert proc.stdout is not None
            try:
                for chunk in iter(proc.stdout.readline, b""):
                    log.write(chunk)
                    log.flush()
                    self.out.write(chunk.decode(errors="replace"))
                    self.out.flush()
                rc = proc.wait()
            except BaseException:   # interrupted: the step's processes go too (SIGTERM, then SIGKILL)
                from cmcontract.proctree import STOP_GRACE_S, stop_tree
                stop_tree(proc, STOP_GRACE_S)
                raise
        if rc != 0:
            raise ScriptFailed(node.alias, command, rc, log_path, _tail(log_path),
                               self._rerun(node))
        if os.path.isfile(env_out):
            with open(env_out, encoding="utf-8", errors="replace") as f:
                for line in f:
                    line = line.rstrip("\n")
                    if "=" in line and not line.startswith("#"):
                        k, _, val = line.partition("=")
                        envmod.merge(env, {k.strip(): val})
        if os.path.isfile(state_out):
            with open(state_out, encoding="utf-8") as f:
                state.update(json.load(f))


def _published_state(node: Node, state: dict) -> dict:
    """The node's new_state_keys (select_state: names, wildcards, <<<VAR>>>), as plain JSON: a step
    hands its callers the same values whether it ran now or is replayed from its cache entry
    (where state is stored as JSON)."""
    out = {}
    for k, v in select_state(state, node.new_state_keys).items():
        try:
            out[k] = json.loads(json.dumps(v))
        except (TypeError, ValueError) as e:
            raise HookError(f"{node.alias}: state[{k!r}] cannot be handed on ({e}): state must be "
                            "plain JSON (dicts, lists, strings, numbers, booleans, null)",
                            "Convert it in the step's hooks (a record's to_json(), a path as a string).")
    return out


def _step_record(node: Node, outcome: Outcome) -> dict:
    """What `steps` tells a hook about a finished step: enough to record how a result was made
    (the env is the part of its key that came from env; secrets appear only as hashes), and a
    digest of what it passed on, so that a cached replay can be checked against its fresh run."""
    return {"script": node.alias, "key": node.key, "cached": outcome.cached, "kept": bool(node.manifest.cache),
            "path": outcome.work_dir,
            "variations": list(node.selection.names), "version": node.version,
            "env": dict(node.components.get("env", {})), "outputs_sha256": outputs_digest(outcome)}


def outputs_digest(outcome: Outcome) -> str:
    """sha256 of what a step passed on to the steps after it: its env (secrets left out: they are
    never cached, on purpose) and its state. A fresh run and every cached replay of it agree."""
    from .fingerprint import sha256     # the built-in one: hashlib loads OpenSSL at import
    env = {k: v for k, v in outcome.env.items() if not is_secret(k)}
    text = json.dumps({"env": env, "state": outcome.state}, sort_keys=True, default=str)
    return sha256(text.encode()).hexdigest()


def _request_record(req, paths: dict) -> dict:
    """The run's request as the user gave it (tags, inputs, --env.*, --adr.*), for hooks (which
    see secrets in env anyway; whoever writes it down must leave them out), and beside the inputs
    as typed, `paths`: those that name files or folders (path_inputs) as the steps got them,
    absolute."""
    return {"tags": list(req.tags), "alias": req.alias, "inputs": dict(req.inputs), "paths": dict(paths),
            "env": dict(req.env),
            "adr": json.loads(json.dumps(req.adr, default=str)),
            "version": list(req.version)}


class Settled:
    """What the top step's validate settled from its inputs: variations to select and env values
    (a default the step derives, e.g. the data set of a benchmark), for the run to be planned again
    as if they had been asked for (`--env.NAME=VALUE`). A plain class: the engine's import leaves
    dataclasses out (tests/integration/engine/test_import_cost.py)."""
    __slots__ = ("variations", "env")

    def __init__(self) -> None:
        self.variations: list[str] = []
        self.env: dict[str, str] = {}

    def __bool__(self) -> bool:
        return bool(self.variations or self.env)


def _plan_hook(plan: Plan, node: Node, name: str, **extra) -> Optional[dict]:
    """Call the plan-time hook `name` (validate, preview) of a step's customize.py with its static
    env; None when the step has none. A hook that raises is a HookError naming the line; a hook
    that returns an error is an InputError."""
    path = os.path.join(node.manifest.folder, "customize.py")
    try:
        with open(path, encoding="utf-8") as f:
            if f"def {name}(" not in f.read():
                return None
    except OSError:
        return None
    if hooks_need_path():
        sys.path.insert(0, AUTOMATION_DIR)
    module = _load_hooks(node)
    i = {"env": dict(node.env), "state": {}, "meta": node.manifest.data,
         "input": dict(plan.request.inputs) if node is plan.root else {},
         "script_path": node.manifest.folder, "variation_tags": node.selection.names,
         "version": node.version, **extra}
    try:
        r = getattr(module, name)(i) or {"return": 0}
    except Exception as e:
        line = _line_in(e, path)
        raise HookError(f"{name}() in {path}{':' + str(line) if line else ''} of script "
                        f"'{node.alias}' raised {e.__class__.__name__}: {e}") from None
    if r.get("return", 0) > 0:
        raise InputError(f"{node.alias}: {r.get('error', 'invalid input')}")
    return r


def validate(plan: Plan) -> Settled:
    """Call `validate(i)` of every planned step that has one, with its static env, before
    anything runs: a bad input stops the run before a server starts or a download begins.
    The top step's validate may settle defaults that depend on its inputs by returning
    `'variations': [names]` and `'env': {NAME: VALUE}` (with a `'note'` saying why when the user
    should know): they are returned, for the caller to plan the run again as if they had been
    asked for. An env value the request already sets is kept as given."""
    settled = Settled()
    for node in [plan.root] + [n for n in plan.nodes.values() if n is not plan.root]:   # the top step speaks first
        r = _plan_hook(plan, node, "validate")
        if r is not None and node is plan.root:
            settled.variations += [str(v).lstrip("_") for v in r.get("variations") or []]
            changed = {str(k): str(v) for k, v in (r.get("env") or {}).items()
                       if str(k) not in plan.request.env and node.env.get(str(k)) != str(v)}
            settled.env.update(changed)
            if r.get("note") and (r.get("variations") or changed):     # said once: not again when replanned
                plan.warnings.append(f"{node.alias}: {r['note']}")
    return settled


def preview(plan: Plan) -> str:
    """--dry-run: the top step's `preview(i)` hook, if it has one, says in its own words what it would
    do (e.g. the replay of a published folder); it may read, never write (its `work_dir` is a
    temporary folder, removed after). '' when the step has none."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix=f"cm-preview-{plan.root.alias}-") as tmp:
        r = _plan_hook(plan, plan.root, "preview", work_dir=tmp)
    return str((r or {}).get("text") or "")


def hooks_need_path() -> bool:
    return AUTOMATION_DIR not in sys.path


def _load_hooks(node: Node):
    path = os.path.join(node.manifest.folder, "customize.py")
    if not os.path.isfile(path):
        return None
    name = f"cm_customize_{node.alias.replace('-', '_')}_{node.key[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        line = _line_in(e, path)
        raise HookError(f"{path}{':' + str(line) if line else ''} of script '{node.alias}' cannot be"
                        f" loaded: {e.__class__.__name__}: {e}") from None
    return module


def _line_in(exc: BaseException, path: str) -> Optional[int]:
    import traceback
    if isinstance(exc, SyntaxError) and exc.filename == path:
        return exc.lineno
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.abspath(frame.filename) == os.path.abspath(path):
            line = frame.lineno
    if line is None:
        tb = traceback.extract_tb(exc.__traceback__)
        if tb:
            return None
    return line


def _tail(path: str, n: int = 20) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 8192))
            lines = f.read().decode(errors="replace").splitlines()
        return "\n".join(lines[-n:])
    except OSError:
        return "(log unreadable)"
