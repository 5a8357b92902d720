"""Version strings: parsing, ordering (`0.32.0rc1 < 0.32.0 < 0.32.0.1`) and CM's constraints
(`version` a prefix, `version_min`/`version_max` inclusive bounds)."""
from __future__ import annotations

import re
from typing import NamedTuple


def parse(v: str) -> tuple:
    """'3.11.7' -> (3, 11, 7); '0.32.0rc1' -> (0, 32, 0, 'rc1'); non-numeric parts sort after numbers."""
    parts = []
    for p in re.split(r"[.\-+]", str(v).strip()):
        if not p:
            continue
        m = re.match(r"^(\d+)(.*)$", p)
        if m:
            parts.append(int(m.group(1)))
            if m.group(2):
                parts.append(m.group(2))
        else:
            parts.append(p)
    return tuple(parts)


def compare(a: str, b: str) -> int:
    """-1, 0 or 1 as a is older than, the same as or newer than b."""
    pa, pb = parse(a), parse(b)
    for x, y in zip(pa, pb):
        if x == y:
            continue
        if isinstance(x, int) and isinstance(y, int):
            return -1 if x < y else 1
        if isinstance(x, int):      # 1.0.0 > 1.0.0rc1
            return 1
        if isinstance(y, int):
            return -1
        return -1 if x < y else 1
    if len(pa) == len(pb):
        return 0
    longer, sign = (pa, 1) if len(pa) > len(pb) else (pb, -1)
    # 0.32.0rc1 < 0.32.0 (a trailing label is a pre-release), 0.32.0.1 > 0.32.0
    return -sign if isinstance(longer[min(len(pa), len(pb))], str) else sign


class Constraint(NamedTuple):
    """An immutable version requirement (empty fields: any version)."""
    version: str = ""
    version_min: str = ""
    version_max: str = ""

    def __bool__(self) -> bool:
        return bool(self.version or self.version_min or self.version_max)

    def allows(self, v: str) -> bool:
        if self.version and not (v == self.version or v.startswith(self.version + ".")):
            return False
        if self.version_min and compare(v, self.version_min) < 0:
            return False
        if self.version_max and compare(v, self.version_max) > 0:
            return False
        return True

    def describe(self) -> str:
        out = []
        if self.version:
            out.append(f"== {self.version}")
        if self.version_min:
            out.append(f">= {self.version_min}")
        if self.version_max:
            out.append(f"<= {self.version_max}")
        return ", ".join(out) or "any version"

    def env(self) -> dict:
        return {k: v for k, v in (("CM_VERSION", self.version), ("CM_VERSION_MIN", self.version_min),
                                  ("CM_VERSION_MAX", self.version_max)) if v}
