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

import signal
import threading
from contextlib import contextmanager
from typing import Callable

SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


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
