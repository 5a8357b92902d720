"""The version a step runs: chosen from its manifest's `versions` table under a constraint.

Parsing, ordering and the constraint itself are the contract's (`cmcontract/versions.py`), which
the library and the steps use too.
"""
from __future__ import annotations

from cmcontract.versions import Constraint, parse

__all__ = ["Constraint", "choose"]


def choose(listed: list[str], default: str, c: Constraint) -> str:
    """The version to use from a manifest's `versions` table."""
    if c.version:
        return c.version
    if default and c.allows(default):
        return default
    ok = sorted((v for v in listed if c.allows(v)), key=parse)
    return ok[-1] if ok else ""
