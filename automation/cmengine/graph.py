"""The dependency graph: every node resolved, keyed and checked for cycles before anything runs.

A node is one script with its selected variations, version constraint and static env. Its key
names its result (what the key covers: keys.py; what it is used for: cache.py). Identical nodes
share one object, so `detect,os` runs once.
"""
from __future__ import annotations

import copy
import os
from typing import Any, NamedTuple, Optional

from cmcontract.places import RUN_CWD_ENV, RUN_PYTHON_ENV, from_run_cwd, running_python

from . import conditions, env as envmod, keys
from .errors import CycleError, EngineError, InputError, did_you_mean
from .fingerprint import Fingerprints
from .keys import LOCAL_TO_STEP, canon, const_env, overlap
from .manifest import DEP_LISTS, Dep, Manifest
from .registry import Query, Registry
from .variations import Selection, select
from .versions import Constraint, choose

MAX_DEPTH = 64


class Request:
    """What the user asked for: tags or an alias, inputs, --env.*, --adr.*, a version."""

    def __init__(self, tags: Optional[list[str]] = None, alias: str = "",
                 inputs: Optional[dict[str, Any]] = None, env: Optional[dict[str, Any]] = None,
                 adr: Optional[dict[str, dict]] = None, version: Constraint = Constraint(),
                 quiet: bool = True, extra_cache_tags: Optional[list[str]] = None):
        self.tags = tags if tags is not None else []
        self.alias = alias
        self.inputs = inputs if inputs is not None else {}
        self.env = env if env is not None else {}
        self.adr = adr if adr is not None else {}
        self.version = version
        self.quiet = quiet
        self.extra_cache_tags = extra_cache_tags if extra_cache_tags is not None else []
        # env values the top step's validate settled (executor.Settled): applied as --env.* are,
        # never recorded as asked for
        self.settled_env: dict[str, str] = {}

    @property
    def run_env(self) -> dict[str, Any]:
        """--env.* over what validate settled: the env every step of the run starts from."""
        return {**self.settled_env, **self.env}


class Edge(NamedTuple):
    """One dependency of a node: its phase, the manifest's dependency entry, the node that answers it."""
    phase: str
    dep: Dep
    node: Optional[Node]
    decided: Optional[bool]   # True: runs, False: skipped, None: decided when reached
    reason: str = ""


class Node:
    """One script with its selected variations, version and static env; `key` names its result.
    Nodes are compared by identity: identical requests share one Node."""

    def __init__(self, manifest: Manifest, selection: Selection, constraint: Constraint,
                 version: str, layers: list[tuple[str, dict]], env: dict,
                 new_env_keys: list[str], new_state_keys: list[str], declared: list[str],
                 chain: list[str]):
        self.manifest = manifest
        self.selection = selection
        self.constraint = constraint
        self.version = version
        self.layers = layers
        self.env = env                      # static env (what is known before execution)
        self.new_env_keys = new_env_keys
        self.new_state_keys = new_state_keys
        self.declared = declared
        self.chain = chain
        self.edges: list[Edge] = []
        self.components: dict = {}
        self.code_files: dict = {}          # {path: sha256} behind components["content"]
        self.key = ""
        self.verdict: Any = None            # cache.Verdict, set by the cache planner
        self.extra_cache_tags: list[str] = []   # --extra_cache_tags, a dependency's extra_cache_tags
        self.static_state: dict = {}        # the manifest's and its variations' `state` (CM)

    def extra_tags(self, env: dict) -> list[str]:
        """Tags for this step's cache entry besides the script's (CM's extra cache tags): they
        make the entry findable with `cm show cache --tags=...`; they are not part of its key."""
        tags = list(self.extra_cache_tags)
        tags += [t for t in str(env.get("CM_EXTRA_CACHE_TAGS", "")).split(",") if t.strip()]
        if str(env.get("CM_NAME", "")).strip():
            tags.append("name-" + str(env["CM_NAME"]).strip().lower())
        for item in self.manifest.get("extra_cache_tags_from_env") or []:
            value = str(env.get(item.get("env", ""), "")).strip()
            tags += ["deps-" + item.get("prefix", "") + t for t in value.split(",") if t]
        return [str(envmod.substitute(t.strip(), env)) for t in dict.fromkeys(tags)]

    @property
    def alias(self) -> str:
        return self.manifest.alias

    @property
    def name(self) -> str:
        v = ",".join(self.selection.tags)
        return f"{self.alias} {v}" if v else self.alias

    def deps(self, phase: str) -> list[Edge]:
        return [e for e in self.edges if e.phase == phase]

    def build_env(self, inbound: dict, user_env: dict) -> dict:
        """The node's env from the env it receives (at plan time or at run time)."""
        out = {k: copy.copy(v) for k, v in inbound.items() if not k.startswith(LOCAL_TO_STEP)}
        for op, layer in self.layers:
            (envmod.fill_defaults if op == "defaults" else envmod.merge)(out, layer)
        envmod.merge(out, user_env)
        envmod.substitute_all(out)
        return out

    def rerun_command(self, inputs: dict) -> str:
        tags = ",".join(self.selection.tags)
        parts = ["cm run script", self.alias] + ([f"--tags={tags}"] if tags else [])
        im = self.manifest.get("input_mapping") or {}
        given = {im[k] for k in inputs if k in im}
        for k, v in sorted(inputs.items()):
            if k in im and not envmod.is_secret(im[k]):
                parts.append(f"--{k}={v}")
        own = {**(self.manifest.get("default_env") or {}), **(self.manifest.get("env") or {})}
        for k, v in sorted(self.declared_env().items()):
            if k not in given and not envmod.is_secret(k) and not k.startswith("+") \
                    and not k.startswith("CM_VERSION") and own.get(k) != v:
                parts.append(f"--env.{k}={v}")
        return " ".join(parts) + " --quiet"

    def declared_env(self) -> dict:
        return {k: v for k, v in self.env.items() if envmod.matches(k, self.declared)}


class Plan(NamedTuple):
    """The whole resolved graph, built before anything runs."""
    root: Node
    nodes: dict[str, Node]          # by key
    request: Request
    warnings: list[str]
    base_env: dict                  # what the top step receives (RUN_CWD_ENV, RUN_PYTHON_ENV)
    paths: dict                     # input -> its value made absolute (path_inputs), beside the typed one

    def walk(self) -> list[tuple[int, Edge | None, Node, bool]]:
        """(depth, edge, node, first time seen) in execution order: -j and the plan's #N (plantext.py)."""
        out, seen = [], set()

        def visit(node: Node, edge: Optional[Edge], depth: int) -> None:
            first = node.key not in seen
            seen.add(node.key)
            if first:
                for e in node.edges:
                    if e.phase == "deps" and e.node is not None:
                        visit(e.node, e, depth + 1)
            out.append((depth, edge, node, first))
            if first:
                for e in node.edges:
                    if e.phase != "deps" and e.node is not None:
                        visit(e.node, e, depth + 1)
        visit(self.root, None, 0)
        return out


def _input_value(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    if isinstance(v, dict):
        raise InputError(f"input value {v!r} is a mapping; a script input takes a single value")
    return str(v)


class Planner:
    def __init__(self, registry: Registry, fingerprints: Fingerprints, request: Request):
        self.registry = registry
        self.keys = keys.Keys(fingerprints)
        self.req = request
        self.nodes: dict[str, Node] = {}
        self.used_inputs: set[str] = set()
        self.cwd = os.getcwd()               # where cm was started: paths typed relative are from there
        self.known_inputs: set[str] = set()
        self._memo: dict[str, Node] = {}
        self.dep_names: set[str] = set()
        self.warnings: list[str] = []
        self.root_inputs: set[str] = set()   # the inputs the top script takes itself
        self.dep_inputs: dict[str, list[str]] = {}   # input -> the dependencies it went to
        self.paths: dict[str, str] = {}      # input naming a file or folder -> its absolute value

    # -- entry point ----------------------------------------------------------------------------
    def plan(self) -> Plan:
        q = Query.parse(self.req.tags, self.req.alias)
        m = self.registry.select(q, quiet=self.req.quiet)
        if self.registry.note:
            self.warnings.append("note: " + m.alias + " is " + self.registry.note)
        base = {RUN_CWD_ENV: self.cwd,      # where cm was started: default output folders
                RUN_PYTHON_ENV: running_python()}   # the interpreter running cm, one path per environment
        root = self._resolve(m, q, self.req.version, base, [], dict(self.req.adr), [], [])
        root.extra_cache_tags += [t for t in self.req.extra_cache_tags
                                  if t not in root.extra_cache_tags]
        self._check_inputs()
        for name, scripts in sorted(self.dep_inputs.items()):
            self.warnings.append(f"note: --{name} is not an input of '{root.alias}'; it was passed "
                                 f"to the dependenc{'y' if len(scripts) == 1 else 'ies'} that take"
                                 f"{'s' if len(scripts) == 1 else ''} it: "
                                 + ", ".join(sorted(set(scripts))))
        for name in sorted(set(self.req.adr) - self.dep_names):
            self.warnings.append(f"note: --adr.{name} matched no dependency of this run and has no "
                                 "effect." + did_you_mean(name, self.dep_names))
        return Plan(root=root, nodes=self.nodes, request=self.req, warnings=self.warnings,
                    base_env=base, paths=dict(sorted(self.paths.items())))

    def _check_inputs(self) -> None:
        unknown = sorted(set(self.req.inputs) - self.used_inputs)
        if unknown:
            k = unknown[0]
            raise InputError(
                f"unknown input --{k}: script '{self.req.alias or ','.join(self.req.tags)}' does "
                "not take it, nor does any of its dependencies." + did_you_mean(k, self.known_inputs),
                "Inputs it takes: " + (", ".join("--" + i for i in sorted(
                    self.known_inputs)) or "none") + ". Set any env value with --env.NAME=VALUE.")

    # -- one node -------------------------------------------------------------------------------
    def _resolve(self, m: Manifest, q: Query, constraint: Constraint, inbound: dict,
                 dep_env_keys: list[str], adr: dict, pending: list, stack: list,
                 dep_inputs: tuple = ()) -> Node:
        sel = select(m, q.variations, q.exclude_variations)
        ident = (m.repo, m.alias, tuple(sel.names))
        memo_key = canon([ident, constraint, inbound, dep_env_keys, adr, pending, dep_inputs])
        if memo_key in self._memo:
            return self._memo[memo_key]
        chain = [s[1] for s in stack] + [m.alias]
        if ident in stack:
            raise CycleError(chain)
        if len(stack) >= MAX_DEPTH:
            raise EngineError(f"dependencies nest deeper than {MAX_DEPTH}: " + " -> ".join(chain))

        layers: list[tuple[str, dict]] = [("defaults", m.get("default_env") or {}),
                                          ("merge", m.get("env") or {})]
        im = m.get("input_mapping") or {}
        paths = set(m.get("path_inputs") or ())

        def typed(name, value) -> str:
            """An input's value; one that names a file or folder (path_inputs) absolute, from where cm
            was started: the step runs in a folder of its own."""
            text = _input_value(value)
            if name not in paths:
                return text
            self.paths[name] = from_run_cwd(text, self.cwd)
            return self.paths[name]
        mapped = {}
        if not stack:   # inputs are the top script's (as in CM); its env carries them down
            self.known_inputs.update(im)
            self.root_inputs = set(im)
            for name, value in self.req.inputs.items():
                if name in im:
                    mapped[im[name]] = typed(name, value)
                    self.used_inputs.add(name)
            if self.req.extra_cache_tags:   # CM: --extra_cache_tags is the top step's local env
                mapped.setdefault("CM_EXTRA_CACHE_TAGS", ",".join(self.req.extra_cache_tags))
        else:           # an input the top script does not take goes to the deps that take it
            self.known_inputs.update(im)
            for name, value in self.req.inputs.items():
                if name in im and name not in self.root_inputs:
                    mapped[im[name]] = typed(name, value)
                    self.used_inputs.add(name)
                    self.dep_inputs.setdefault(name, []).append(m.alias)
        for name, value in dep_inputs:   # a dependency entry's other keys are inputs (as in CM)
            if name not in im:
                raise InputError(
                    f"{' -> '.join(s[1] for s in stack)}: its dependency entry for '{m.alias}' has "
                    f"the key '{name}', which is neither a dependency key nor an input of "
                    f"'{m.alias}'." + did_you_mean(name, im),
                    f"Inputs '{m.alias}' takes: " + (", ".join(sorted(im)) or "none"))
            mapped[im[name]] = _input_value(value)
        layers.append(("merge", mapped))
        new_env_keys = list(m.get("new_env_keys") or [])
        new_state_keys = list(m.get("new_state_keys") or [])
        dep_lists = {p: list(m.deps[p]) for p in DEP_LISTS}
        child_adr = _merge_adr(m.get("add_deps_recursive") or m.get("adr") or {}, adr)
        static_state = _merged_state({}, m.get("state"))
        for v in sel.applied:
            layers.append(("defaults", v.get("default_env") or {}))
            layers.append(("merge", v.get("env") or {}))
            # CM's `const` (env no later layer of this step may change) and `state`
            layers.append(("merge", const_env(v.get("const"))))
            static_state = _merged_state(static_state, v.get("state"))
            new_env_keys += list(v.get("new_env_keys") or [])
            new_state_keys += list(v.get("new_state_keys") or [])
            for p in DEP_LISTS:
                dep_lists[p] += v["_deps"][p]
            child_adr = _merge_adr(v.get("add_deps_recursive") or v.get("adr") or {}, child_adr)
            _apply_add_deps(dep_lists, v.get("add_deps") or v.get("ad") or {})
        versions = m.get("versions") or {}
        version = choose(list(versions), str(m.get("default_version") or ""), constraint)
        version_env = versions[version]["env"] if version in versions else {}
        if version in versions:
            layers.append(("merge", version_env))
            for p in DEP_LISTS:
                dep_lists[p] += versions[version]["_deps"][p]
        layers.append(("merge", const_env(m.get("const"))))
        vconstraint = Constraint(version or constraint.version, constraint.version_min,
                                 constraint.version_max)
        layers.append(("merge", vconstraint.env()))
        declared = keys.declared(m, sel.applied, version_env, mapped, dep_env_keys)

        node = Node(manifest=m, selection=sel, constraint=vconstraint, version=version,
                    layers=layers, env={}, new_env_keys=new_env_keys,
                    new_state_keys=new_state_keys, declared=declared, chain=chain)
        node.static_state = static_state
        node.env = node.build_env(inbound, self.req.run_env)
        # the node's own outputs coming back to it (from an earlier run of the same step) are
        # not inputs: only other producers count, for its key and for its deps' conditions
        pending = keys.received_from_others(pending, new_env_keys)
        pre_key = self.keys.key(node, pending, [])
        stack = stack + [ident]

        own_pending = list(pending)
        # read customize.py only for a step with dependencies after its hooks (few have any)
        setters = keys.env_setters(m.folder) if any(dep_lists[p] for p in DEP_LISTS[1:]) else set()
        for phase in DEP_LISTS:
            if keys.SET_BEFORE[phase] & setters:
                # what its preprocess (run.sh, postprocess) may set for the later dependencies:
                # its outputs and the keys it names in hook_env_keys
                own_pending.append((new_env_keys + list(m.get("hook_env_keys") or []), pre_key))
            for dep in dep_lists[phase]:
                edge = self._edge(node, dep, phase, child_adr, own_pending, stack)
                node.edges.append(edge)
                if edge.node is not None:
                    own_pending.append((edge.node.new_env_keys, edge.node.key))
        node.key = self.keys.key(node, pending, node.edges)
        node = self.nodes.setdefault(node.key, node)
        self._memo[memo_key] = node
        return node

    def _edge(self, parent: Node, dep: Dep, phase: str, adr: dict, pending: list,
              stack: list) -> Edge:
        self.dep_names.update(dep.names)
        dep = _apply_adr(dep, adr)
        penv = parent.env

        def is_pending(k: str) -> bool:
            return any(overlap(k, p) for pats, _ in pending for p in pats)

        decided = conditions.evaluate(dep.conditions, penv, is_pending)
        if decided is False:
            return Edge(phase, dep, None, False, "skipped: " + conditions.describe(dep.conditions))
        tags = list(dep.tags)
        for prefix, names in dep.update_tags_from_env_with_prefix:
            tags += [prefix + str(penv[n]) for n in names if penv.get(n)]
        for n in dep.update_tags_from_env:
            tags += [t for t in str(penv.get(n, "")).split(",") if t]
        tags = [str(envmod.substitute(t, penv)) for t in tags]
        unresolved = [t for t in tags if "<<<" in t]
        if unresolved:
            raise EngineError(
                f"{' -> '.join(parent.chain)}: dependency tags {unresolved} use a value that is "
                "not known before execution.",
                f"Set {', '.join(envmod.references(unresolved))} with an input, --env or default_env.")
        q = Query.parse(tags)
        m = self.registry.select(q, quiet=self.req.quiet, asked_by=" -> ".join(parent.chain))
        chosen_because = self.registry.note
        if dep.inherit_variation_tags:
            skip = set(dep.skip_inherit_variation_groups)
            for name in parent.selection.names:
                key = name if name in m.variations else name.split(".", 1)[0] + ".#"
                var = m.variations.get(key)
                if var and var.group not in skip and name not in q.variations \
                        and name not in q.exclude_variations:
                    q.variations.append(name)
        inbound = dict(penv)
        dep_env = {k: envmod.substitute(v, penv) for k, v in dep.env}
        envmod.merge(inbound, dep_env)
        if dep.adr:
            adr = _merge_adr(dict(dep.adr), adr)
        try:
            child = self._resolve(m, q, Constraint(dep.version, dep.version_min, dep.version_max),
                                  inbound, list(dep_env), adr, pending, stack, dep.inputs)
        except CycleError as e:
            if decided is not None:
                raise
            # CM resolves while running, so a guarded cycle (detect-os -> get-sys-utils-min ->
            # detect-os on Windows only) is legal there: it runs only if its condition holds
            return Edge(phase, dep, None, None, "not planned: it would close the cycle "
                        + " -> ".join(e.chain) + "; a run where "
                        + conditions.describe(dep.conditions) + " holds stops here")
        child.extra_cache_tags += [t for t in dep.extra_cache_tags
                                   if t not in child.extra_cache_tags]
        reason = "" if decided else "decided at run time: " + conditions.describe(dep.conditions)
        if chosen_because:
            reason = "; ".join(x for x in (reason, "taken: " + chosen_because) if x)
        return Edge(phase, dep, child, decided, reason)


def _merged_state(base: dict, more: Any) -> dict:
    if not isinstance(more, dict) or not more:
        return base
    out = copy.deepcopy(base)
    for k, v in more.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merged_state(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _merge_adr(base: dict, top: dict) -> dict:
    """adr dicts by dependency name; tags from both are kept (top last), other keys from top."""
    out = {k: dict(v) for k, v in (base or {}).items() if isinstance(v, dict)}
    for name, spec in (top or {}).items():
        if not isinstance(spec, dict):
            raise InputError(f"--adr.{name} must be given as --adr.{name}.tags=... "
                             f"(or .version=, .env.NAME=)")
        cur = out.setdefault(name, {})
        for k, v in spec.items():
            if k == "tags" and cur.get("tags"):
                cur["tags"] = f"{cur['tags']},{v}"
            elif k == "env" and isinstance(v, dict):
                cur["env"] = {**cur.get("env", {}), **v}
            else:
                cur[k] = v
    return out


def _apply_adr(dep: Dep, adr: dict) -> Dep:
    for name in dep.names:
        spec = adr.get(name)
        if not spec:
            continue
        changes: dict = {}
        if spec.get("tags"):
            extra = spec["tags"] if isinstance(spec["tags"], list) else str(spec["tags"]).split(",")
            changes["tags"] = tuple(dep.tags) + tuple(t.strip() for t in extra if t.strip())
        for k in ("version", "version_min", "version_max"):
            if spec.get(k):
                changes[k] = str(spec[k])
        if isinstance(spec.get("env"), dict):
            changes["env"] = tuple(sorted({**dict(dep.env), **{
                k: str(v) for k, v in spec["env"].items()}}.items()))
        dep = dep._replace(**changes)
    return dep


def _apply_add_deps(dep_lists: dict, add: dict) -> None:
    """A variation's add_deps: {dep name: {tags: ..., env: ...}} modifies named deps."""
    for phase, deps in dep_lists.items():
        for i, d in enumerate(deps):
            for name in d.names:
                spec = add.get(name)
                if isinstance(spec, dict):
                    deps[i] = _apply_adr(d, {name: spec})
