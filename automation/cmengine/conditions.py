"""`enable_if_env`, `skip_if_env` and their `_any_` forms.

`evaluate` answers True (the dependency runs), False (it is skipped) or None when a key the
condition reads is produced by an earlier dependency at run time; such a dependency is planned
and decided when it is reached.
"""
from __future__ import annotations

from typing import Callable, Optional

TRUTHY = {"yes", "on", "true", "1"}
FALSY = {"no", "off", "false", "0", ""}


def _matches(actual: Optional[str], allowed: tuple[str, ...]) -> bool:
    if actual is None:
        return False
    a = str(actual).strip()
    for v in allowed:
        v = str(v).strip()
        if v.lower() in TRUTHY and a.lower() in TRUTHY:
            return True
        if v.lower() in FALSY and v != "" and a.lower() in FALSY:
            return True
        if v == a:
            return True
    return False


def evaluate(conditions: tuple, env: dict, is_pending: Callable[[str], bool] = lambda k: False
             ) -> Optional[bool]:
    """conditions: ((kind, ((KEY, (values...)), ...)), ...) as parsed by the manifest."""
    for kind, items in conditions:
        if any(is_pending(k) for k, _ in items):
            return None
        hits = [_matches(env.get(k), vals) for k, vals in items]
        if kind == "enable_if_env" and not all(hits):
            return False
        if kind == "enable_if_any_env" and not any(hits):
            return False
        if kind == "skip_if_env" and hits and all(hits):
            return False
        if kind == "skip_if_any_env" and any(hits):
            return False
    return True


def describe(conditions: tuple) -> str:
    return "; ".join(f"{kind} " + ", ".join(f"{k} in {list(v)}" for k, v in items)
                     for kind, items in conditions)
