"""Live counters of a test and a one-line progress display (tokens/s, completed samples)."""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field


@dataclass
class Stats:
    """Counters updated by the SUT's threads (single int updates under the GIL)."""
    issued: int = 0
    completed: int = 0
    tokens: int = 0
    failed: int = 0
    first_tokens: int = 0
    started: float = field(default_factory=time.perf_counter)

    def line(self, label: str, window_tps: float | None = None) -> str:
        el = max(time.perf_counter() - self.started, 1e-9)
        avg = self.tokens / el
        tps = avg if window_tps is None else window_tps
        m, s = divmod(int(el), 60)
        return (f"{label}: {self.completed}/{self.issued} samples | {tps:,.1f} tok/s (avg {avg:,.1f}) | "
                f"{self.issued - self.completed} in flight | {self.failed} failed | {m:02d}:{s:02d}")


class Progress:
    """Prints `Stats` every `interval_s` to stderr: one rewritten line on a terminal, else lines."""

    def __init__(self, stats: Stats, label: str, enabled: bool = True, interval_s: float | None = None,
                 stream=None, tty: bool | None = None):
        self.stats, self.label, self.enabled = stats, label, enabled
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)()) if tty is None else tty
        self.interval_s = interval_s if interval_s is not None else (0.5 if self.tty else 10.0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="progress", daemon=True)
        self._last = (time.perf_counter(), 0)

    def _window_tps(self) -> float:
        now, tokens = time.perf_counter(), self.stats.tokens
        t0, k0 = self._last
        self._last = (now, tokens)
        return (tokens - k0) / max(now - t0, 1e-9)

    def _emit(self, final: bool = False) -> None:
        text = self.stats.line(self.label, None if final else self._window_tps())
        if self.tty:
            self.stream.write("\r" + text.ljust(110) + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._emit()

    def __enter__(self) -> "Progress":
        if self.enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self._stop.set()
            self._thread.join(2)
            self._emit(final=True)
