"""What a step's cache key covers, and why (docs/engine.md, "The key").

A key is the sha256 of the step's canonical description (`components`):
- the script and the content hash of its code: its folder, the local modules that code imports
  or runs (importgraph.py), the files of `cache_key_files`;
- its variations and version constraint;
- the values of the env names it declares (`declared`): default_env, env, input_mapping, its
  variations' and version's env, cache_key_env, the dependency entry's env; secrets as hashes;
- for a declared name that a step before it may set at run time, that step's key (`pending`);
- the keys of its own dependencies, in order.

The planner (graph.py) builds the nodes; this module decides what enters their keys.
"""
from __future__ import annotations

import json
import os
import re
from typing import Any, Iterable

from . import env as envmod
from .fingerprint import Fingerprints, files_digest, sha256

KEY_FORMAT = 1
AUTOMATION_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# names local to one step (as CM's local_env_keys): never inherited by its dependencies, never
# keyed through the step that set them
LOCAL_TO_STEP = ("CM_VERSION", "CM_VERSION_MIN", "CM_VERSION_MAX", "CM_TMP_", "CM_EXTRA_CACHE_TAGS")
VERSION_KEYS = ("CM_VERSION", "CM_VERSION_MIN", "CM_VERSION_MAX")

# A producer: (the env name patterns a step may set at run time, that step's key). `pending` is
# the list of producers that run before a node is reached.
Producer = tuple[list[str], str]

# which of a step's own parts have run, and may have set env, before each list of dependencies
SET_BEFORE = {"deps": set(), "prehook_deps": {"preprocess"}, "posthook_deps": {"preprocess", "run"},
              "post_deps": {"preprocess", "run", "postprocess"}}
_HOOK_DEF = re.compile(r"^(?:async\s+)?def\s+(preprocess|postprocess)\b|^(preprocess|postprocess)\s*=|"
                       r"^from\s.*\bimport\b.*\b(preprocess|postprocess)\b", re.M)


def canon(obj: Any) -> str:
    """The canonical JSON text of a value: what is hashed."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def overlap(a: str, b: str) -> bool:
    """Can a name matching pattern a also match pattern b? (`*` wildcards: cm4mlops' scripts
    declare outputs such as CM_PYTHON_*; this project's steps name them exactly.)"""
    pa, pb = a.split("*", 1)[0], b.split("*", 1)[0]
    if "*" in a and "*" in b:
        return pa.startswith(pb) or pb.startswith(pa)
    if "*" in a:
        return envmod.matches(b, [a])
    if "*" in b:
        return envmod.matches(a, [b])
    return a == b


def const_env(value: Any) -> dict:
    """CM's `const`: env values, applied after the step's env and variations."""
    if not isinstance(value, dict):
        return {}
    return {str(k): ("yes" if v is True else "no" if v is False else str(v))
            for k, v in value.items()}


def declared(manifest: Any, applied: Iterable[Any], version_env: dict, mapped: dict,
             dep_env: Iterable[str]) -> list[str]:
    """The env names whose values enter the key: those the step's manifest, its chosen variations
    and version set or name (cache_key_env patterns included), the inputs it maps, the names its
    caller sets in the dependency entry's env, and CM_VERSION*."""
    out = set(manifest.get("cache_key_env") or []) | set(mapped) | set(dep_env)
    out |= set((manifest.get("input_mapping") or {}).values())
    out |= set(manifest.get("default_env") or {}) | set(manifest.get("env") or {})
    out |= set(const_env(manifest.get("const")))
    for v in applied:
        out |= set(const_env(v.get("const"))) | set(v.get("env") or {})
        out |= set(v.get("default_env") or {}) | set(v.get("cache_key_env") or [])
    return sorted(out | set(version_env) | set(VERSION_KEYS))


def received_from_others(pending: list[Producer], outputs: list[str]) -> list[Producer]:
    """The producers before a node, less the node's own outputs: a step that receives what an
    earlier run of itself produced is the same step."""
    return [(kept, pk) for pats, pk in pending
            if (kept := [p for p in pats if not envmod.matches(p, outputs)])]


def env_setters(folder: str) -> set[str]:
    """The parts of a step that run before some of its dependencies and can set env for them:
    'preprocess'/'postprocess' when customize.py defines them, 'run' when there is a run.sh."""
    out = set()
    try:
        with open(os.path.join(folder, "customize.py"), encoding="utf-8", errors="replace") as f:
            out = {next(g for g in m.groups() if g) for m in _HOOK_DEF.finditer(f.read())}
    except OSError:
        pass
    if os.path.isfile(os.path.join(folder, "run.sh")):
        out.add("run")
    return out


class Keys:
    """Computes node keys for one plan; a step's code is fingerprinted once per plan (a step is
    keyed several times while its dependencies are resolved)."""

    def __init__(self, fingerprints: Fingerprints):
        self.fp = fingerprints
        self._code_memo: dict[tuple, tuple[dict, str]] = {}

    def code(self, manifest: Any) -> tuple[dict, str]:
        """The step's code files {path: sha256} and their digest."""
        globs = list(manifest.get("cache_key_files") or [])
        memo_key = (manifest.folder, tuple(globs))
        hit = self._code_memo.get(memo_key)
        if hit is None:
            files = self.fp.folder(manifest.folder, globs,
                                   self.fp.library_files(manifest.folder, AUTOMATION_DIR))
            hit = self._code_memo[memo_key] = (files, files_digest(files))
        return hit

    def key(self, node: Any, pending: list[Producer], edges: list) -> str:
        """The node's key from its components (set on the node with the code files behind them)."""
        node.code_files, content = self.code(node.manifest)
        node.components = {
            "format": KEY_FORMAT,
            "script": f"{node.manifest.repo}:{node.manifest.alias}",
            "content": content,
            "variations": node.selection.names,
            "version": [node.version, node.constraint.version_min, node.constraint.version_max],
            "env": env_values(node),
            "env_from_deps": env_from_producers(node, pending, edges),
            "deps": [[e.phase, e.node.alias, e.node.key, e.decided is None]
                     for e in edges if e.node is not None],
        }
        return sha256(canon(node.components).encode()).hexdigest()


def env_values(node: Any) -> dict:
    """The declared names' values as the node has them before it runs; a secret as its hash (it
    changes the key without being written anywhere)."""
    out = {}
    for k in node.declared:
        if "*" in k:
            out.update((kk, vv) for kk, vv in node.env.items() if envmod.matches(kk, [k]))
        elif k in node.env:
            out[k] = node.env[k]
    for k in list(out):
        if envmod.is_secret(k):
            out[k] = "sha256:" + sha256(str(out[k]).encode()).hexdigest()
    return out


def env_from_producers(node: Any, pending: list[Producer], edges: list) -> dict:
    """{declared name: the key of the last step before the node that may set it at run time}.
    A name the node's own layers set (env, inputs, variations, version) cannot come from an
    earlier step; default_env and cache_key_env names can. What the node's own dependencies
    produce overrides what it received, before its hooks run: such names are keyed through
    those dependencies' keys (in `deps`)."""
    forced = {k for op, layer in node.layers if op == "merge" for k in layer}
    own_outputs = [p for e in edges if e.phase == "deps" and e.node is not None
                   and e.decided is True for p in e.node.new_env_keys]
    out = {}
    for k in node.declared:
        if k in forced or k.startswith(LOCAL_TO_STEP) or any(overlap(k, p) for p in own_outputs):
            continue
        producers = [pk for pats, pk in pending if any(overlap(k, p) for p in pats)]
        if producers:
            out[k] = producers[-1]
    return out
