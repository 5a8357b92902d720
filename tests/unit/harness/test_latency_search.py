"""A Server target the run chose itself that misses the latency bounds is lowered and the test run
again; a target the user gave is kept (run_one replaced by a recorder: no subprocess here)."""
from pathlib import Path

import pytest

from mlperf_llm.benchmarks import get_benchmark
from mlperf_llm.harness import latency, testrun
from mlperf_llm.harness.driver import HarnessRequest, RunOutcome
from mlperf_llm.harness.latency import lowered_target
from mlperf_llm.harness.results import parse_summary

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "harness"
LIMITS = get_benchmark("llama2-70b-99").latency_limits_ms


def test_latency_bounds_verdict_is_read_from_the_summary():
    missed = parse_summary((FIX / "server_latency_missed_summary.txt").read_text())
    assert missed.result == "INVALID" and missed.latency_met is False
    assert missed.tpot_p99_ns == pytest.approx(240083021)
    early_stop_only = parse_summary((FIX / "server_invalid_summary.txt").read_text())
    assert early_stop_only.result == "INVALID" and early_stop_only.latency_met is True
    assert parse_summary((FIX / "offline_valid_summary.txt").read_text()).latency_met is None


def test_lowered_target_scales_with_the_worse_bound_and_drops_at_least_30_percent():
    # the run measured here: TPOT p99 240 ms against 200 -> x0.8*200/240 = x0.667
    assert lowered_target(1.32, {"ttft_p99_ns": 713e6, "tpot_p99_ns": 240e6}, "Server", LIMITS) == 0.88
    # just over: still at least 30% lower
    assert lowered_target(1.0, {"ttft_p99_ns": 2.01e9, "tpot_p99_ns": 150e6}, "Server", LIMITS) == 0.7
    # far over (Interactive's 40 ms TPOT): much lower
    assert lowered_target(1.0, {"ttft_p99_ns": 300e6, "tpot_p99_ns": 120e6}, "Interactive", LIMITS) == 0.266
    # very far over (a p99 from a busy host): at most MAX_LOWERING (4x) lower, not 20x
    assert lowered_target(1.0, {"ttft_p99_ns": 300e6, "tpot_p99_ns": 800e6}, "Interactive", LIMITS) == 0.25
    assert lowered_target(2.0, {}, "Server", LIMITS) == 1.4


def _outcome(directory, latency_met, verdict="INVALID"):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "mlperf_log_summary.txt").write_text("logs")
    return RunOutcome("Server", "performance", verdict, [], str(directory), 0,
                      {"latency_met": latency_met, "ttft_p99_ns": 700e6, "tpot_p99_ns": 240e6})


def _recorder(tmp_path, results):
    calls = []

    def run_one(req, scenario, mode, rows, base_dir=None):
        calls.append(req.server_target_qps)
        met = results[len(calls) - 1]
        return _outcome(tmp_path / "llama2-70b-99" / "Server" / "performance" / "run_1", met,
                        "VALID" if met else "INVALID")
    return calls, run_one


def test_a_chosen_target_is_lowered_until_the_bounds_are_met(tmp_path, monkeypatch, capsys):
    calls, run_one = _recorder(tmp_path, [True])
    monkeypatch.setattr(testrun, "run_one", run_one)
    req = HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path), dataset_path="ds.pkl", scenarios=("Server",),
                         server_target_qps=1.32)
    sources = {"Server": "derived from the Offline performance test of this run (1.89 samples/s)"}
    first = _outcome(tmp_path / "llama2-70b-99" / "Server" / "performance" / "run_1", False)
    req, out = latency.meet_latency_bounds(req, "Server", 211, first, sources)
    assert calls == [0.88] and out.verdict == "VALID" and req.server_target_qps == 0.88
    assert "lowered to 0.88 to meet the latency bounds" in sources["Server"]
    kept = tmp_path / "latency_search" / "Server" / "target_qps-1.32" / "mlperf_log_summary.txt"
    assert kept.is_file()                        # the missed run's logs, out of the results layout
    assert "Server target_qps 1.32 missed the latency bounds (p99 TTFT 700 ms of 2000, p99 TPOT 240 ms of 200)" \
        in capsys.readouterr().out


def test_the_search_stops_after_its_retries(tmp_path, monkeypatch):
    calls, run_one = _recorder(tmp_path, [False] * 10)
    monkeypatch.setattr(testrun, "run_one", run_one)
    req = HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path), dataset_path="ds.pkl", scenarios=("Server",),
                         server_target_qps=1.0)
    first = _outcome(tmp_path / "llama2-70b-99" / "Server" / "performance" / "run_1", False)
    _, out = latency.meet_latency_bounds(req, "Server", 211, first, {"Server": "find-performance run"})
    assert len(calls) == latency.LATENCY_RETRIES and out.verdict == "INVALID"
    assert calls == [0.666, 0.444, 0.296]            # x0.667 each time (TPOT 240 ms of 200)
    assert sorted(p.name for p in (tmp_path / "latency_search" / "Server").iterdir()) == \
        ["target_qps-0.444", "target_qps-0.666", "target_qps-1"]


def test_a_given_target_or_an_early_stopping_miss_is_not_searched(tmp_path, monkeypatch):
    calls, run_one = _recorder(tmp_path, [True])
    monkeypatch.setattr(testrun, "run_one", run_one)
    req = HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path), dataset_path="ds.pkl", scenarios=("Server",),
                         server_target_qps=9.2)
    missed = _outcome(tmp_path / "a", False)
    assert latency.meet_latency_bounds(req, "Server", 211, missed, {"Server": "given"})[1] is missed
    early = _outcome(tmp_path / "b", True)
    assert latency.meet_latency_bounds(req, "Server", 211, early, {"Server": "find-performance run"})[1] is early
    assert calls == []


def test_a_test_mode_search_never_lowers_the_target_below_its_issue_time_bound(tmp_path, monkeypatch, capsys):
    # 10 test queries (211 rows): below 10/600 queries/s they would take over TEST_MODE_MAX_ISSUE_S
    calls, run_one = _recorder(tmp_path, [False] * 10)
    monkeypatch.setattr(testrun, "run_one", run_one)
    req = HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path), dataset_path="ds.pkl", scenarios=("Server",),
                         server_target_qps=0.03)
    first = _outcome(tmp_path / "llama2-70b-99" / "Server" / "performance" / "run_1", False)
    _, out = latency.meet_latency_bounds(req, "Server", 211, first, {"Server": "find-performance run"})
    floor = 10 / latency.TEST_MODE_MAX_ISSUE_S
    assert calls == [0.02, pytest.approx(floor)]   # 0.03 x0.667 = 0.02; 0.0133 is below: the floor; stop
    assert "not lowered further: a test-mode run issues 10 queries" in capsys.readouterr().out
    assert out.verdict == "INVALID"


def test_a_valid_mode_search_has_no_issue_time_bound(tmp_path, monkeypatch):
    calls, run_one = _recorder(tmp_path, [False] * 10)
    monkeypatch.setattr(testrun, "run_one", run_one)
    req = HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path), dataset_path="ds.pkl", scenarios=("Server",),
                         server_target_qps=0.03, execution_mode="valid")
    first = _outcome(tmp_path / "llama2-70b-99" / "Server" / "performance" / "run_1", False)
    latency.meet_latency_bounds(req, "Server", 211, first, {"Server": "find-performance run"})
    assert calls == [0.02, 0.0133, 0.00886]
