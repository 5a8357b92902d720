"""`enable_if_env`, `skip_if_env` and their `_any_` forms.

`evaluate` answers True (the dependency runs), False (it is skipped) or None when a key the
condition reads is produced by an earlier dependency at run time; such a dependency is planned
and decided when it is reached. Every condition must hold, so one that is already false skips the
dependency even where another waits for the run (`--vllm_python` skips install-vllm in the plan).
"""
from __future__ import annotations

from typing import Callable, Optional

from cmcontract.yesno import NO, YES


def _matches(actual: Optional[str], allowed: tuple[str, ...]) -> bool:
    """CM's rule: an expected yes/on/true/1 matches any set value that is not false-like (a
    path in CM_C_COMPILER_BIN is 'on'); an expected no/off/false/0/'' matches a false-like or
    missing value; anything else is compared as text, case aside."""
    want = {str(v).strip().lower() for v in allowed}
    if actual is None:
        return bool(want & NO)
    a = str(actual).strip().lower()
    if want & YES:
        return a not in NO
    if want & (NO - {""}):
        return a in NO
    return a in want


def evaluate(conditions: tuple, env: dict, is_pending: Callable[[str], bool] = lambda k: False
             ) -> Optional[bool]:
    """conditions: ((kind, ((KEY, (values...)), ...)), ...) as parsed by the manifest."""
    pending = False
    for kind, items in conditions:
        if any(is_pending(k) for k, _ in items):
            pending = True
            continue
        hits = [_matches(env.get(k), vals) for k, vals in items]
        if kind == "enable_if_env" and not all(hits):
            return False
        if kind == "enable_if_any_env" and not any(hits):
            return False
        if kind == "skip_if_env" and hits and all(hits):
            return False
        if kind == "skip_if_any_env" and any(hits):
            return False
    return None if pending else True


def describe(conditions: tuple) -> str:
    return "; ".join(f"{kind} " + ", ".join(f"{k} in {list(v)}" for k, v in items)
                     for kind, items in conditions)
