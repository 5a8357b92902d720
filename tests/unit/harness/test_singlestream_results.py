"""SingleStream's logs read back: the verdict and LoadGen's reasons, the p90 latency the checker reports
(in ms) and the token latencies. Fixtures: real LoadGen 6.0.17 runs of the harness against the stand-in
(tests/fixtures/harness/README.md)."""
from pathlib import Path

import pytest

from mlperf_llm.harness.results import Summary, read_summary, verdict, HarnessStatus
from mlperf_llm.harness import results
from mlperf_llm.submission.logs import read_detail_log
from mlperf_llm.submission.results import ScenarioResult
from mlperf_llm.submission.spec import RESULT_KEYS

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "harness"
TEST_RUN, CUT_SHORT = FIX / "singlestream_test_run", FIX / "singlestream_valid_cut_short"
SEED_61 = 2085463073848966840


def _status():
    return HarnessStatus(True, "SingleStream", "performance", "6.1", "6.0.17", completed=10)


def test_a_test_run_reports_the_p90_latency_in_ms_and_the_token_latencies():
    s = read_summary(TEST_RUN)
    assert (s.scenario, s.result, s.queries) == ("SingleStream", "INVALID", 10)
    assert (s.latency_p90_ns, s.ttft_p90_ns, s.tpot_p90_ns) == (54006646, 22924865, 10930107)
    assert (s.metric, s.metric_unit) == (pytest.approx(54.006646), "ms (p90 latency)")
    assert s.samples_per_second is None and s.tokens_per_second is None
    # LoadGen logs TTFT/TPOT bounds for every scenario but Offline; only Server is held to them
    assert s.ttft_limit_ns is None and s.tpot_limit_ns is None and s.latency_met is None
    assert (s.target_qps, s.target_latency_ns) == (100, pytest.approx(10e6))   # mlperf.conf's 10 ms
    assert s.invalid_reasons == ["early stopping not met: 10 queries processed, at least 64 needed (TPOT)"]
    assert verdict(_status(), s, SEED_61, "performance") == (
        "INVALID", ["LoadGen result is INVALID"] + s.invalid_reasons)


def test_a_valid_run_cut_short_names_each_minimum_it_missed():
    # valid mode, target_latency 50 ms, max_duration 2 s: equal issue planned 2 x 600 s / 50 ms = 24,000
    # queries, rounded up past a multiple of the 10 loaded samples
    s = read_summary(CUT_SHORT)
    assert s.invalid_reasons == [
        "min duration not met: the last query was issued after 2.05 s, LoadGen's min_duration is 600 s",
        "min queries not met: 39 queries (39 samples) issued, LoadGen requires 24010 queries and 24010 samples",
        "early stopping not met: 39 queries processed, at least 64 needed (TPOT)"]
    assert s.target_latency_ns == pytest.approx(50e6) and s.metric == pytest.approx(56.241508)


def test_without_the_detail_log_the_summary_gives_the_same_numbers(tmp_path):
    (tmp_path / "mlperf_log_summary.txt").write_bytes((TEST_RUN / "mlperf_log_summary.txt").read_bytes())
    s, full = read_summary(tmp_path), read_summary(TEST_RUN)
    assert (s.metric, s.metric_unit, s.ttft_p90_ns, s.target_latency_ns) == (
        full.metric, full.metric_unit, full.ttft_p90_ns, full.target_latency_ns)
    assert s.invalid_reasons == full.invalid_reasons and s.ttft_limit_ns is None


def test_every_reported_metric_can_be_read_from_a_summary_too():
    assert {m.key for m in RESULT_KEYS.values()} <= set(results._SUMMARY_VALUES)


def test_the_submission_reports_singlestream_as_the_checkers_latency_in_ms():
    # the checker (v5.1.1, master): RESULT_FIELD_BENCHMARK_OVERWRITE's result_90.00_percentile_latency_ns,
    # divided by MS_TO_NS for SingleStream, unit "Latency (ms)"
    r = ScenarioResult("llama3.1-8b-edge", "SingleStream", "sys", read_detail_log(str(TEST_RUN / "mlperf_log_detail.txt")),
                       None)
    assert (r.unit, r.value) == ("Latency (ms)", pytest.approx(54.006646))
    assert RESULT_KEYS["Offline"].unit == "Tokens/s" and RESULT_KEYS["Offline"].value("128520") == 128520


def test_a_summary_of_another_scenario_keeps_its_throughput_metric():
    s = read_summary(FIX.parent / "submission" / "results-v5.1" / "llama2-70b-99" / "Offline" / "performance" / "run_1")
    assert (s.metric, s.metric_unit, s.target_latency_ns) == (128520, "tokens/s", None)
    assert Summary().metric is None
