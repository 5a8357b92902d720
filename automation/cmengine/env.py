"""Env and state merging.

Values are strings, except `+NAME` keys (path-like lists such as `+PATH`) whose values are lists
that are appended to, and prepended to the process variable `NAME` when a native script runs.
`<<<VAR>>>` in a value is replaced by the value of VAR.
"""
from __future__ import annotations

import fnmatch
import os
import re
from typing import Iterable

from cmcontract.secret import is_secret

_REF = re.compile(r"<<<([A-Za-z0-9_]+)>>>")


def matches(key: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(key, p) for p in patterns)


def merge(env: dict, layer: dict) -> None:
    """Apply one layer on top of env, in place ('+NAME' lists are extended, not replaced)."""
    for k, v in layer.items():
        if k.startswith("+"):
            cur = list(env.get(k) or [])
            for item in (v if isinstance(v, list) else [v]):
                if item not in cur:
                    cur.append(item)
            env[k] = cur
        else:
            env[k] = v


def fill_defaults(env: dict, defaults: dict) -> None:
    for k, v in defaults.items():
        if k not in env or env[k] in ("", None):
            merge(env, {k: v})


def references(value) -> list[str]:
    if isinstance(value, list):
        return [r for v in value for r in references(v)]
    return _REF.findall(value) if isinstance(value, str) else []


def substitute(value, env: dict):
    """Replace <<<VAR>>> with env values; unknown names are left as they are."""
    if isinstance(value, list):
        return [substitute(v, env) for v in value]
    if not isinstance(value, str) or "<<<" not in value:
        return value
    return _REF.sub(lambda m: str(env[m.group(1)]) if m.group(1) in env else m.group(0), value)


def substitute_all(env: dict) -> None:
    for _ in range(3):  # values may refer to values that refer to others
        changed = False
        for k, v in list(env.items()):
            new = substitute(v, env)
            if new != v:
                env[k], changed = new, True
        if not changed:
            return


def select(env: dict, patterns: Iterable[str]) -> dict:
    """The keys of env that new_env_keys-like patterns name: names, `*`/`?` wildcards, and
    `<<<VAR>>>` (the key named by VAR's value, as in CM)."""
    patterns = list(patterns)
    out = {k: v for k, v in env.items() if matches(k, patterns)}
    for p in patterns:
        if "<<<" in p:
            for ref in _REF.findall(p):
                name = env.get(ref)
                if isinstance(name, str) and name in env:
                    out[name] = env[name]
    return out


def for_process(env: dict, base: dict | None = None) -> dict[str, str]:
    """The environment of a native script: os env + our env, '+NAME' lists prepended."""
    out = dict(os.environ if base is None else base)
    for k, v in env.items():
        if k.startswith("+"):
            name = k[1:]
            items = [str(x) for x in (v or [])]
            if out.get(name):
                items.append(out[name])
            out[name] = os.pathsep.join(items)
        else:
            out[k] = "" if v is None else str(v)
    return out


def redacted(env: dict) -> dict:
    return {k: ("***" if is_secret(k) else v) for k, v in env.items()}
