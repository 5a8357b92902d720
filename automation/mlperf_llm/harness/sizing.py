"""A test run sized to the host: the query count of each test-mode test from what the run has just
measured, and each test's expected duration.

A sized run (test mode, no --test_query_count given) starts with a small Offline performance test
(FIRST_QUERIES) that measures the host: its samples/s, and an answer's mean latency (the tail: a
Server test's last answer comes about that long after its last query; on vLLM-CPU an answer takes
about as long alone as with a dozen others, measured 4.6 s alone and 3.5 s among 12 on the embedded
default). Every later test, TEST06 included (unless --test06_query_count), gets about PER_TEST_S
seconds: an Offline test as many queries as the measured rate answers in it, a Server or
Interactive test as many as its target issues in it less the tail; never fewer than MIN_QUERIES,
never more than the test would run unsized (--test_query_count's default, TEST06's official 100).
On a fast host the counts stay near those caps; on a slow one the tests shrink instead of the run
taking minutes. No test is shorter than one answer, so a host whose answers take half a minute
cannot finish six tests in two minutes whatever their counts; the expected durations say so.

The measurement is written to the results folder (SIZING_FILE) so that the TEST06 step of the
same command sizes its tests from it; a sized run removes an earlier one before measuring.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass

from ..accuracy.test06_config import OFFICIAL_QUERY_COUNT
from ..files import write_atomic
from .testconfig import MODES

FIRST_QUERIES = 12      # the measuring Offline test: all in flight at once, a few seconds on a fast host
MIN_QUERIES = 3         # fewer is not a test of anything (a p99, an accuracy score, TEST06's checks)
PER_TEST_S = 15.0       # each later test's share: six tests stay within two minutes on a host 6x slower
START_S = 1.5           # a test's own start and end (its process, LoadGen's setup, the logs), measured
TEST06_CAP = OFFICIAL_QUERY_COUNT   # a sized TEST06 issues no more than a submission's
SIZING_FILE = "test_sizing.json"
KINDS = MODES                # performance, accuracy and the compliance tests (testconfig.py)


class SizingError(ValueError):
    pass


@dataclass(frozen=True)
class Measured:
    """What the measuring Offline test found."""
    samples_per_second: float
    tail_s: float            # an answer's mean latency (LoadGen's Mean latency)
    queries: int
    seconds: float           # the test's own wall time
    directory: str = ""

    def save(self, results_dir: str) -> str:
        path = os.path.join(results_dir, SIZING_FILE)
        write_atomic(path, json.dumps(asdict(self), indent=1))
        return path

    @classmethod
    def load(cls, results_dir: str) -> "Measured | None":
        """The measurement of this results folder's sized run, None without one; a file that is not
        one is named with the fix."""
        path = os.path.join(results_dir, SIZING_FILE)
        if not os.path.isfile(path):
            return None
        try:
            with open(path, encoding="utf-8") as f:
                m = cls(**json.load(f))
        except (OSError, ValueError, TypeError) as e:
            raise SizingError(f"{path} is not a test-run sizing record ({e}); fix: delete it, and the next "
                              "sized run measures the host again") from None
        if not m.samples_per_second > 0:
            raise SizingError(f"{path}: samples_per_second={m.samples_per_second}; fix: delete it")
        return m

    @classmethod
    def discard(cls, results_dir: str) -> None:
        try:
            os.remove(os.path.join(results_dir, SIZING_FILE))
        except FileNotFoundError:
            pass


@dataclass(frozen=True)
class Sized:
    """One test's size and what it is expected to take."""
    queries: int
    expected_s: float | None      # None: the measuring test (nothing measured yet)
    why: str

    def line(self, scenario: str, mode: str) -> str:
        expected = "" if self.expected_s is None else f", expected ~{self.expected_s:.0f} s"
        return f"{scenario} {mode}: {self.queries} queries{expected} ({self.why})"

    def done_line(self, scenario: str, mode: str, seconds: float) -> str:
        expected = "" if self.expected_s is None else f" (expected ~{self.expected_s:.0f} s)"
        return f"{scenario} {mode}: {self.queries} queries in {seconds:.0f} s{expected}"


def issue_rate(scenario: str, target_qps: float | None, m: Measured) -> float:
    """Queries/s a test issues at: an Offline test's answered at the measured rate; a Server or
    Interactive test's at its target (the measured rate where it has none)."""
    if scenario in ("Server", "Interactive") and target_qps:
        return target_qps
    return m.samples_per_second


def expected_seconds(scenario: str, queries: int, target_qps: float | None, m: Measured) -> float:
    """A test's expected wall time: its start, then its queries at their rate; a Server or
    Interactive test's last answer a tail after its last query, an Offline test's never sooner
    than one answer."""
    rate = issue_rate(scenario, target_qps, m)
    if scenario in ("Server", "Interactive"):
        return START_S + queries / rate + m.tail_s
    return START_S + max(queries / rate, m.tail_s)


def size(scenario: str, mode: str, target_qps: float | None, cap: int, m: Measured) -> Sized:
    """The query count of a later test of a sized run: what fits PER_TEST_S, within [MIN_QUERIES, cap]."""
    if mode not in KINDS:
        raise SizingError(f"mode {mode!r}: one of {', '.join(KINDS)}")
    rate = issue_rate(scenario, target_qps, m)
    room = PER_TEST_S - START_S - (m.tail_s if scenario in ("Server", "Interactive") else 0.0)
    fits = math.floor(max(room, 0.0) * rate)
    n = max(MIN_QUERIES, min(cap, fits))
    at = f"at {rate:.3g} QPS" if scenario in ("Server", "Interactive") else f"at {rate:.3g} samples/s"
    if n == cap and fits >= cap:
        why = f"{at}; {cap}, the most a test run of it issues"
    elif n == MIN_QUERIES and fits < MIN_QUERIES:
        why = f"{at}; at least {MIN_QUERIES}: fewer than that tests nothing"
    else:
        why = f"{at}, what fits ~{PER_TEST_S:.0f} s"
    return Sized(n, expected_seconds(scenario, n, target_qps, m),
                 f"sized to this host: {why}; measured {m.samples_per_second:.3g} samples/s by the first Offline test")


def first_test(cap: int) -> int:
    """The measuring Offline test's query count."""
    return max(1, min(cap, FIRST_QUERIES))


def measured_from(summary: dict, queries: int, seconds: float, directory: str) -> Measured:
    """The measurement from the first Offline performance test's summary (harness.results.Summary as a dict)."""
    rate = float(summary.get("samples_per_second") or 0.0)
    if not rate > 0:
        raise SizingError(f"the first Offline test ({directory}) completed no samples: nothing to size the "
                          "test run from; check the server log")
    tail_ns = summary.get("latency_mean_ns")
    tail = float(tail_ns) / 1e9 if tail_ns else queries / rate
    return Measured(rate, tail, queries, seconds, directory)


def test06_counts(results_dir: str, scenarios: list[str], targets: dict[str, float | None]) -> dict[str, int] | None:
    """Each scenario's TEST06 query count in a sized run: sized from the measurement the run's tests
    wrote to results_dir (None without one: TEST06 issues its official count)."""
    m = Measured.load(results_dir)
    if m is None:
        return None
    return {s: size(s, "TEST06", targets.get(s), TEST06_CAP, m).queries for s in scenarios}
