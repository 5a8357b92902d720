"""Files and folders a submission tree must not hold (the checker's folder checks, and the size rules).

`find_violations(root)` walks a tree and returns every violation with the rule broken and the fix, so a
builder can refuse to call a tree complete and a test can name what is wrong.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from .spec import FILE_SIZE_LIMIT, MAX_ACCURACY_LOG_SIZE


@dataclass(frozen=True)
class Violation:
    path: str          # relative to the tree root
    rule: str
    fix: str

    def __str__(self) -> str:
        return f"{self.path}: {self.rule} (fix: {self.fix})"


def _hash_recorded(accuracy_dir: str) -> bool:
    txt = os.path.join(accuracy_dir, "accuracy.txt")
    if not os.path.isfile(txt):
        return False
    with open(txt, encoding="utf-8", errors="replace") as f:
        return any(re.match(r"^hash=[\w\d]+$", line.strip()) for line in f)


def _compliance_dir(rel_dir: str) -> bool:
    """compliance/... (v4.1..v5.1) or results/.../TEST06/... (v6.0): TEST06 logs are kept whole."""
    parts = rel_dir.split(os.sep)
    return "compliance" in parts or any(p.startswith("TEST0") for p in parts)


def find_violations(root: str) -> list[Violation]:
    out: list[Violation] = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        rel = (lambda n: n if rel_dir == "." else os.path.join(rel_dir, n))
        if rel_dir != "." and not dirnames and not filenames:
            out.append(Violation(rel_dir, "empty folder", "remove it"))
        for name in dirnames:
            if name == "__pycache__":
                out.append(Violation(rel(name), "__pycache__ folder", "remove it"))
            elif name.startswith("."):
                out.append(Violation(rel(name), "dot folder (git-unfriendly name)", "remove or rename it"))
            if " " in name:
                out.append(Violation(rel(name), "space in a folder name", "rename it without spaces"))
        for name in filenames:
            path = os.path.join(dirpath, name)
            if name.startswith("."):
                out.append(Violation(rel(name), "dotfile (git-unfriendly name)", "remove or rename it"))
            if " " in name:
                out.append(Violation(rel(name), "space in a file name", "rename it without spaces"))
            if name == "mlperf_log_trace.json":
                out.append(Violation(rel(name), "LoadGen trace log", "do not copy mlperf_log_trace.json"))
            if name.endswith(".pyc"):
                out.append(Violation(rel(name), "compiled Python file", "remove it"))
            if os.path.islink(path) and not os.path.exists(path):
                out.append(Violation(rel(name), "broken symbolic link", "copy the file instead"))
                continue
            size = os.path.getsize(path)
            if size > FILE_SIZE_LIMIT:
                out.append(Violation(rel(name), f"file over 50 MB ({size} bytes)", "leave it out or shrink it"))
            if (name == "mlperf_log_accuracy.json" and size > MAX_ACCURACY_LOG_SIZE
                    and os.path.basename(dirpath) == "accuracy"
                    and not _compliance_dir(rel_dir)):
                if not _hash_recorded(dirpath):
                    out.append(Violation(rel(name), f"accuracy log over 10 KB ({size} bytes) and not truncated",
                                         "truncate it and record its hash in accuracy.txt"))
                else:
                    out.append(Violation(rel(name), f"accuracy log over 10 KB ({size} bytes) though accuracy.txt "
                                         "records a hash", "truncate it to its first and last 4 KB"))
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
    return sorted(out, key=lambda v: v.path)
