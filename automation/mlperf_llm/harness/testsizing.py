"""A test run sized to the host (sizing.py) or to given sizes (testsizes.py), test by test: the first
Offline performance test measures the host, each later test gets the query count that takes about
sizing.PER_TEST_S there; a replay's given sizes are kept."""

from __future__ import annotations

from dataclasses import replace

from . import sizing, testsizes
from .request import HarnessInputError, HarnessRequest
from .testconfig import COMPLIANCE_MODES
from .testrun import RunOutcome
from .userconf import test_queries


def start_sizing(req: HarnessRequest) -> sizing.Measured | None:
    """A sized run's start: an earlier run's measurement in the results folder is removed (this run
    measures the host again) unless this is the TEST06 run of the same command, which sizes from it;
    a run with no Offline performance test to measure with says that it is not sized."""
    if not req.sized_run:
        return None
    if set(req.modes) & set(COMPLIANCE_MODES):
        try:
            return sizing.Measured.load(req.results_dir)
        except sizing.SizingError as e:
            raise HarnessInputError(str(e)) from None
    sizing.Measured.discard(req.results_dir)
    if "Offline" not in req.scenarios or "performance" not in req.modes:
        print(f"test run not sized to this host: its tests ({', '.join(req.scenarios)}; "
              f"{', '.join(req.modes)}) hold no Offline performance test of their own to measure the host with "
              "(a target search's Offline probe does not size them); each test issues "
              f"{req.test_query_count or 'the default number of'} queries", flush=True)
    return None

def size_test(req: HarnessRequest, scenario: str, mode: str, rows: int,
               measured: sizing.Measured | None) -> tuple[HarnessRequest, sizing.Sized | None]:
    """A sized run's test: its request with the query count for this host, and that size; other runs'
    tests as asked (None). The first Offline performance test measures the host; TEST06's count is its
    audit.config's (the TEST06 step sizes it with sizing.size). A test whose size was given
    (--test_sizes: a replay) runs at that size, and nothing is sized."""
    given = req.test_sizes.get(testsizes.key(scenario, mode)) if req.execution_mode == "test" else None
    if given:
        return (replace(req, test_query_count=given),
                sizing.Sized(given, None, f"given by {testsizes.INPUT}: the size the recorded run ran it at"))
    if not req.sized_run:
        return req, None
    cap = test_queries(req.test_query_count, rows)
    if mode in COMPLIANCE_MODES:
        from ..accuracy.test06_config import query_count_of
        n = query_count_of(req.audit_config(mode), scenario)
        if measured is None or n is None:
            return req, None
        return (replace(req, test_query_count=n),
                sizing.Sized(n, sizing.expected_seconds(scenario, n, req.target_for(scenario), measured),
                             "its audit.config's count"))
    if mode == "accuracy" and req.accuracy_sample_count is not None:
        return req, None
    if measured is None:
        if (scenario, mode) != ("Offline", "performance"):
            return req, None
        n = sizing.first_test(cap)
        return replace(req, test_query_count=n), sizing.Sized(n, None, "measures this host: the tests after "
                                                               "it are sized from its rate")
    sized = sizing.size(scenario, mode, req.target_for(scenario), cap, measured)
    return replace(req, test_query_count=sized.queries), sized

def size_of(req: HarnessRequest, scenario: str, mode: str, rows: int) -> int:
    """The size a test ran at: an accuracy test's samples, TEST06's queries (its audit.config's),
    a performance test's queries."""
    if mode == "accuracy":
        return req.accuracy_rows(rows)
    if mode in COMPLIANCE_MODES:
        from ..accuracy.test06_config import query_count_of
        return query_count_of(req.audit_config(mode), scenario) or test_queries(req.test_query_count, rows)
    return test_queries(req.test_query_count, rows)

def measure(req: HarnessRequest, first: RunOutcome, queries: int, seconds: float) -> sizing.Measured:
    m = sizing.measured_from(first.summary, queries, seconds, first.directory)
    path = m.save(req.results_dir)
    print(f"test run sized to this host: {m.samples_per_second:.3g} samples/s, an answer takes "
          f"{m.tail_s:.1f} s on average; each later test ~{sizing.PER_TEST_S:.0f} s ({path}; --test_query_count=N "
          "for fixed sizes)", flush=True)
    return m
