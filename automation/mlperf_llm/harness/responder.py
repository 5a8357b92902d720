"""Hands results to LoadGen: FirstTokenComplete and QuerySamplesComplete with int32 token ids."""

from __future__ import annotations

import array
import threading
import time

from .progress import Stats

assert array.array("i").itemsize == 4, "int32 responses need a 4-byte C int"


class Responder:
    """Completes LoadGen samples and counts them; records failures (a failed run is never VALID)."""

    def __init__(self, lg, stats: Stats, max_errors_kept: int = 20):
        self.lg = lg
        self.stats = stats
        self.errors: list[str] = []
        self.max_errors_kept = max_errors_kept
        self.failed = threading.Event()
        # per query id: [issued, first token, completed] (perf_counter) and its tokens: the plots' data
        self._times: dict[int, list] = {}

    def issued(self, items: list[tuple[int, int]]) -> None:
        """The SUT took these (query id, sample index) from LoadGen."""
        now = time.perf_counter()
        for query_id, _ in items:
            self._times[query_id] = [now, None, None, 0]
        self.stats.issued += len(items)

    def timings(self) -> list[list]:
        """[issued, first token or None, completed, tokens] per answered query, seconds from the first
        issue, in issue order (query_timings.json: the page's latency and tokens/s plots)."""
        rows = [t for t in self._times.values() if t[2] is not None]
        if not rows:
            return []
        t0 = min(t[0] for t in rows)
        return [[round(a - t0, 4), None if f is None else round(f - t0, 4), round(c - t0, 4), n]
                for a, f, c, n in sorted(rows)]

    def first_token(self, query_id: int, token: int) -> None:
        buf = array.array("i", [token])
        ptr, n = buf.buffer_info()
        self.lg.FirstTokenComplete([self.lg.QuerySampleResponse(query_id, ptr, n * 4)])
        self.stats.first_tokens += 1
        t = self._times.get(query_id)
        if t is not None:
            t[1] = time.perf_counter()

    def complete(self, query_id: int, token_ids: list[int]) -> None:
        buf = array.array("i", token_ids)
        ptr, n = buf.buffer_info()
        self.lg.QuerySamplesComplete([self.lg.QuerySampleResponse(query_id, ptr, n * 4, n)])
        self.stats.completed += 1
        self.stats.tokens += n
        t = self._times.get(query_id)
        if t is not None:
            t[2], t[3] = time.perf_counter(), n

    def fail(self, query_id: int, reason: str | None, first_token_sent: bool, streaming: bool) -> None:
        """Complete the sample empty (so LoadGen can finish) and mark the run failed. A reason is kept
        once (a server's failure is one error, whatever the number of samples it failed); None: the
        sample only follows an earlier failure."""
        if reason is not None and reason not in self.errors and len(self.errors) < self.max_errors_kept:
            self.errors.append(reason)
        self.stats.failed += 1
        self.failed.set()
        if streaming and not first_token_sent:
            self.lg.FirstTokenComplete([self.lg.QuerySampleResponse(query_id, 0, 0)])
        self.lg.QuerySamplesComplete([self.lg.QuerySampleResponse(query_id, 0, 0, 0)])
        self.stats.completed += 1
