"""Stopping a child process and everything it started: SIGTERM, then SIGKILL after a grace period.

The engine stops a step's `run.sh` this way when a run is interrupted; the library stops a test's
process this way when its driver is (`harness/driver.py`). The tree is read from /proc, so a
grandchild that left its parent's process group is stopped too.
"""
from __future__ import annotations

import os
import signal
import time
from typing import Optional

STOP_GRACE_S = 5.0      # SIGTERM -> SIGKILL


def _children_by_parent() -> dict[int, list[int]]:
    """Every process's direct children, from one pass over /proc (empty where there is no /proc)."""
    out: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            parent = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
        out.setdefault(parent, []).append(int(entry))
    return out


def descendants(*pids: int) -> list[int]:
    """The children, grandchildren, ... of pids (depth first), from one read of /proc."""
    children = _children_by_parent()
    out, todo = [], list(pids)
    while todo:
        for child in children.get(todo.pop(), ()):
            out.append(child)
            todo.append(child)
    return out


def _signal_all(pids, sig) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def stop_tree(proc, grace_s: float = STOP_GRACE_S) -> Optional[int]:
    """SIGTERM a child (a subprocess.Popen) and everything under it, SIGKILL what is left after grace_s;
    returns its exit status (None if it could not be reaped)."""
    if proc.poll() is not None:
        _signal_all(descendants(proc.pid), signal.SIGTERM)
        return proc.returncode
    tree = [proc.pid] + descendants(proc.pid)
    _signal_all(tree, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    left = [p for p in tree + descendants(proc.pid) if p != proc.pid and os.path.exists(f"/proc/{p}")]
    if proc.poll() is None:
        left.append(proc.pid)
    _signal_all(left, signal.SIGKILL)
    try:
        return proc.wait(timeout=5)
    except Exception:
        return None
