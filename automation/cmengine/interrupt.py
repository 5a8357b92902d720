"""SIGTERM, SIGHUP and SIGINT during a run: raised as `Interrupted`, so that every `finally` runs.

Python's default for SIGTERM and SIGHUP is to die on the spot, skipping the steps' `cleanup()` hooks:
a server a step started (in a session of its own, so the signal never reaches it) would keep running.
While a run executes, `raising()` turns each of the three signals into `Interrupted` (a
KeyboardInterrupt, so hooks that catch Exception do not swallow it); the executor then stops what the
run started, publishes nothing incomplete, and the command exits with 128 + the signal's number.
`deferred()` keeps a second signal from cutting those cleanups short: it is noted, not raised.
Imported only by a run (the `signal` module costs every `cm` command otherwise).
"""
from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import contextmanager
from typing import Callable, Optional

SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
STOP_GRACE_S = 5.0      # SIGTERM -> SIGKILL for a step's processes when a run is interrupted


class Interrupted(KeyboardInterrupt):
    """The run received `signum`; the command exits with 128 + signum."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal_name(self.signum)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def raising():
    """Within the block, SIGTERM/SIGHUP/SIGINT raise Interrupted (main thread only; elsewhere a no-op).
    A signal that was ignored when the run began (nohup's SIGHUP) stays ignored."""
    if not _in_main_thread():
        yield
        return

    def handler(signum, _frame):
        raise Interrupted(signum)

    previous = {}
    for sig in SIGNALS:
        old = signal.getsignal(sig)
        if old is signal.SIG_IGN:
            continue
        previous[sig] = old
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextmanager
def deferred(say: Callable[[str], None]):
    """Within the block, the three signals are noted and said, not raised (cleanups finish first)."""
    if not _in_main_thread():
        yield
        return

    def handler(signum, _frame):
        say(f"! {signal_name(signum)} received while stopping what this run started; "
            "finishing that first (a few seconds)")

    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    for sig in previous:
        if previous[sig] is not signal.SIG_IGN:
            signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


# ---------------------------------------------------------------- a child's whole tree

def _children(pid: int) -> list[int]:
    """Direct children of pid, read from /proc (empty where there is no /proc)."""
    out = []
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
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and fields[1] == str(pid).encode():
            out.append(int(entry))
    return out


def descendants(pid: int) -> list[int]:
    """pid's children, grandchildren, ... (depth first)."""
    out, todo = [], [pid]
    while todo:
        for child in _children(todo.pop()):
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
