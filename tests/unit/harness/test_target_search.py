"""The target search's bracket (harness/search.py) on a fake probe: passes at or below a capacity."""
import pytest

from mlperf_llm.harness import search as S


def fake(capacity, clock, seconds=30.0):
    def probe(qps):
        clock.t += seconds
        ok = qps <= capacity
        return S.Probe(qps, S.probe_queries(qps), seconds, 500.0 if ok else 2500.0, 50.0, "the run's own p99s",
                       ok, "both bounds met" if ok else "p99 TTFT 2500 ms over 2000")
    return probe


class Clock:
    """Time moves only while a probe runs (30 s each)."""
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def run(capacity, ceiling=6.0, start=4.2, budget_s=3600.0, **kw):
    lines, clock = [], Clock()
    found = S.search("Server", fake(capacity, clock), start=start, ceiling=ceiling, bounds_ms=(2000, 200),
                     budget_s=budget_s, answer_s=2.0, slowest_qps=0.02, say=lines.append, clock=clock, **kw)
    return found, lines


@pytest.mark.parametrize("capacity", [0.5, 1.3, 3.3, 4.9])
def test_the_bracket_closes_on_the_highest_passing_target(capacity):
    found, lines = run(capacity)
    passed = [p.target_qps for p in found.probes if p.passed]
    failed = [p.target_qps for p in found.probes if not p.passed]
    assert found.found_qps == max(passed) <= capacity < min(failed)
    assert (min(failed) - found.found_qps) <= S.TOLERANCE * min(failed)
    assert "within 10% of its top" in found.stopped
    assert len(lines) == len(found.probes) + 2 and lines[1].startswith("probe 1: 4.2 QPS")
    assert lines[-1].startswith(f"Server target: {found.found_qps:g} QPS after {len(found.probes)} probe(s)")


def test_a_server_that_keeps_up_with_its_offline_rate_gets_it():
    found, _ = run(capacity=100.0)
    assert found.found_qps == 6.0 and found.high is None
    assert [p.target_qps for p in found.probes] == [4.2, 6.0]
    assert "the Offline rate itself (6 QPS) met the bounds" in found.stopped


def test_the_budget_ends_the_search_with_what_passed_and_says_so():
    found, lines = run(capacity=3.3, budget_s=100.0)     # a probe at 4.2 QPS: 84 queries, ~32 s expected
    assert [p.target_qps for p in found.probes] == [4.2, 2.1, 3.15] and found.found_qps == 3.15
    assert "the budget is spent" in found.stopped and "--search_budget=MINUTES" in found.stopped


def test_nothing_passing_down_to_the_slowest_test_target_finds_nothing():
    found, lines = run(capacity=0.0)
    assert found.found_qps is None and all(not p.passed for p in found.probes)
    assert "would be slower than a test run may be" in found.stopped
    assert "no target (every probe missed the bounds)" in lines[-1]


def test_next_target_halves_after_a_first_failure_and_stops_on_a_narrow_bracket():
    assert S.next_target(None, None, 4.2, 6.0) == (4.2, "")
    assert S.next_target(None, 4.2, 4.2, 6.0) == (2.1, "")
    assert S.next_target(4.2, None, 4.2, 6.0) == (6.0, "")          # 1.5x, capped at the Offline rate
    assert S.next_target(2.1, 4.2, 4.2, 6.0) == (3.15, "")
    target, why = S.next_target(4.0, 4.2, 4.2, 6.0)
    assert target is None and "within 10%" in why


SUMMARY = {"ttft_p99_ns": 2_400_000_000, "tpot_p99_ns": 90_000_000}


def test_a_probe_is_judged_by_loadgens_early_stopping_estimates_where_it_gives_them():
    early = {"early_stopping_ttft_result": " * Run successful.\n * Processed at least 64 queries (300).\n"
                                          " * Would discard 1 highest latency queries.\n"
                                          " * Early stopping 99.0th percentile estimate: 1900000000\n",
             "early_stopping_tpot_result": " * Early stopping 99.0th percentile estimate: 95000000\n"}
    ttft, tpot, whose, passed, why = S.judge(SUMMARY, early, (2000, 200), 300)
    assert (ttft, tpot, passed, why) == (1900.0, 95.0, True, "both bounds met")
    assert whose == "LoadGen's early-stopping estimates"


def test_a_short_probe_is_judged_by_its_own_p99s_and_says_so():
    early = {"early_stopping_tpot_result": " * Run unsuccessful.\n * Processed 32 queries.\n"
                                          " * Would need to run at least 427 more queries,\n"}
    ttft, tpot, whose, passed, why = S.judge(SUMMARY, early, (2000, 200), 32)
    assert (ttft, tpot, passed) == (2400.0, 90.0, False) and why == "p99 TTFT 2400 ms over 2000"
    assert "32 queries are too few for LoadGen's early-stopping estimate (it asks for 427 more)" in whose


def test_probes_last_about_probe_seconds_with_a_floor_and_a_cap():
    assert S.probe_queries(0.1) == S.MIN_PROBE_QUERIES
    assert S.probe_queries(4.0) == 80
    assert S.probe_queries(1000.0) == S.MAX_PROBE_QUERIES
