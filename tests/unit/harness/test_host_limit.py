"""A latency bound out of this host's reach at any load is said before the Server test, the test runs
once at the lowest load, and targets.json records it; where the bound is within reach, a missed target
is still lowered and retried. Both branches from paces: the slow kind of host (no AVX-512) as its
probe read it on the embedded stand-in, and the fast kind (the numbers in
tests/fixtures/harness/alone_probes.json: the slow kind's recorded, the fast kind's scaled from it);
run_one and the probe replaced by recorders (no process)."""
import json
from pathlib import Path

import pytest

from mlperf_llm.benchmarks import get_benchmark
from mlperf_llm.harness import driver, hostlimit, latency, testrun
from mlperf_llm.harness.driver import HarnessRequest, RunOutcome
from mlperf_llm.harness.hostlimit import Alone, HostLimit, judge, lowest_load

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "harness"
PROBES = json.loads((FIX / "alone_probes.json").read_text())
SLOW = Alone(**PROBES["slow"]["alone"])       # the slow kind of host
FAST = Alone(**PROBES["fast"]["alone"])       # the fast kind
L31 = get_benchmark("llama3.1-8b").latency_limits_ms
L2 = get_benchmark("llama2-70b-99.9").latency_limits_ms


def test_the_recorded_slow_pace_cannot_meet_llama31_tpot_and_the_fast_one_can():
    limit = judge("llama3.1-8b", "Server", SLOW, L31["Server"])
    assert limit is not None and limit.figure == "TPOT" and limit.bound_ms == 100
    assert judge("llama3.1-8b", "Server", FAST, L31["Server"]) is None
    # llama2-70b's Server TPOT bound (200 ms) is within the slow host's reach
    assert judge("llama2-70b-99.9", "Server", SLOW, L2["Server"]) is None


def test_the_sentence_says_cannot_at_or_over_the_bound_and_cannot_be_relied_on_within_its_margin():
    over = HostLimit("llama3.1-8b", "Server", "TPOT", 103.0, 100)
    assert over.sentence() == ("this host decodes ~103 ms a token alone: the llama3.1-8b's Server TPOT bound of "
                               "100 ms cannot be met here at any load")
    near = judge("llama3.1-8b", "Server", Alone(ttft_ms=40, tpot_ms=90), (2000, 100))
    assert near is not None and "within 20% of the llama3.1-8b's Server TPOT bound of 100 ms" in near.sentence()
    assert "cannot be relied on here at any load" in near.sentence()
    assert judge("m", "Server", Alone(ttft_ms=40, tpot_ms=79.9), (2000, 100)) is None
    ttft = judge("m", "Interactive", Alone(ttft_ms=480, tpot_ms=5), (500, 30))
    assert ttft.figure == "TTFT" and "to a first token alone" in ttft.sentence()
    assert HostLimit.from_json(over.to_json()) == over and over.to_json()["sentence"] == over.sentence()


def test_the_lowest_load_is_one_query_per_answer_rounded_down():
    assert lowest_load(9.7) == pytest.approx(0.103)
    assert lowest_load(0.3) == pytest.approx(3.33)
    assert lowest_load(0) == 0.0


def test_the_longest_prompt_is_probed():
    assert hostlimit.longest_prompt([[1] * 5, [1] * 50, [1] * 9]) == [1] * 50
    with pytest.raises(hostlimit.ProbeError, match="no prompt"):
        hostlimit.longest_prompt([])


def _summary(scenario, latency_met=None):
    if scenario == "Offline":
        return {"samples_per_second": 0.5, "latency_mean_ns": 9.7e9}
    return {"latency_met": latency_met, "ttft_p99_ns": 900e6, "tpot_p99_ns": 105e6}


def _run_all(tmp_path, monkeypatch, alone, given=None):
    """run_all of llama3.1-8b's Offline and Server performance tests; Server misses its bounds at
    every load (as on the slow host). Returns the Server targets tried and what was printed."""
    tried = []

    def run_one(req, scenario, mode, rows, base_dir=None, sized=None):
        d = tmp_path / "llama3.1-8b" / scenario / mode / "run_1"
        d.mkdir(parents=True, exist_ok=True)
        (d / "mlperf_log_summary.txt").write_text("logs")
        if scenario == "Server":
            tried.append(req.server_target_qps)
            return RunOutcome(scenario, mode, "INVALID", ["latency"], str(d), 0, _summary(scenario, False))
        return RunOutcome(scenario, mode, "VALID", [], str(d), 0, _summary(scenario))

    monkeypatch.setattr(testrun, "run_one", run_one)
    monkeypatch.setattr(testrun, "dataset_rows", lambda req: 300)
    monkeypatch.setattr(latency, "probe_alone", lambda req: alone)
    req = HarnessRequest(model="llama3.1-8b", results_dir=str(tmp_path), dataset_path="ds.pkl",
                         scenarios=("Offline", "Server"), modes=("performance",), api_servers=("http://127.0.0.1:1",),
                         api_model_name="m", test_query_count=4, server_target_qps=given)
    outs = driver.run_all(req)
    return tried, outs, json.loads((tmp_path / "targets.json").read_text())


def test_slow_host_the_bound_is_said_out_of_reach_and_the_test_runs_once_at_the_lowest_load(tmp_path, monkeypatch,
                                                                                          capsys):
    tried, outs, targets = _run_all(tmp_path, monkeypatch, SLOW)
    out = capsys.readouterr().out
    # derived from 0.5 samples/s (x0.7 = 0.35), then straight to one query per 9.7 s answer, once
    assert tried == [pytest.approx(0.103)]
    assert f"Server: this host decodes ~{SLOW.tpot_ms:.0f} ms a token alone, within 20% of the llama3.1-8b's " \
           "Server TPOT bound of 100 ms: a p99 over many queries runs above one query alone, so the bound cannot be " \
           "relied on here at any load; the performance test runs once, at the lowest load, 0.103 QPS" in out
    assert "missed the latency bounds" not in out            # no retries
    limit = targets["Server"]["host_limit"]
    assert limit["figure"] == "TPOT" and limit["performance_target_qps"] == pytest.approx(0.103)
    # the run's own target stays for the tests that judge answers, not latency
    assert targets["Server"]["target_qps"] == pytest.approx(0.35)
    assert targets["Server"]["source"].startswith("derived from the Offline performance test")
    assert "host_limit" not in targets["Offline"]


def test_slow_host_only_the_performance_test_runs_at_the_lowest_load(tmp_path, monkeypatch):
    tried = {}

    def run_one(req, scenario, mode, rows, base_dir=None, sized=None):
        d = tmp_path / "llama3.1-8b" / scenario / mode / "run_1"
        d.mkdir(parents=True, exist_ok=True)
        tried[(scenario, mode)] = req.server_target_qps
        return RunOutcome(scenario, mode, "INVALID" if scenario == "Server" and mode == "performance" else "VALID",
                          [], str(d), 0, _summary(scenario, False))

    monkeypatch.setattr(testrun, "run_one", run_one)
    monkeypatch.setattr(testrun, "dataset_rows", lambda req: 300)
    monkeypatch.setattr(latency, "probe_alone", lambda req: SLOW)
    req = HarnessRequest(model="llama3.1-8b", results_dir=str(tmp_path), dataset_path="ds.pkl",
                         scenarios=("Offline", "Server"), api_servers=("http://127.0.0.1:1",), api_model_name="m",
                         test_query_count=4, accuracy_sample_count=300)
    driver.run_all(req)
    assert tried[("Server", "performance")] == pytest.approx(0.103)
    assert tried[("Server", "accuracy")] == pytest.approx(0.35)


def test_slow_host_a_given_target_is_kept_and_not_retried(tmp_path, monkeypatch, capsys):
    tried, _, targets = _run_all(tmp_path, monkeypatch, SLOW, given=4.0)
    assert tried == [4.0]
    assert "the given target 4 is kept and the test runs once" in capsys.readouterr().out
    assert targets["Server"]["source"] == "given" and targets["Server"]["host_limit"]["bound_ms"] == 100


def test_fast_host_a_missed_derived_target_is_still_lowered_and_retried(tmp_path, monkeypatch, capsys):
    tried, _, targets = _run_all(tmp_path, monkeypatch, FAST)
    assert len(tried) == 1 + latency.LATENCY_RETRIES and tried[0] == pytest.approx(0.35)
    assert "cannot be met" not in capsys.readouterr().out
    assert "host_limit" not in targets["Server"]


def test_a_probe_within_reach_whose_retries_reach_the_lowest_load_and_still_miss_names_a_measured_limit(
        tmp_path, monkeypatch, capsys):
    # alone just under the margin (the slow host's llama3.1-8b probe once read 78.4 ms), yet every
    # Server test misses (p99 TPOT 105 ms): lowered 0.35 -> ... until at or below one query per answer
    monkeypatch.setattr(latency, "LATENCY_RETRIES", 5)
    tried, _, targets = _run_all(tmp_path, monkeypatch, Alone(ttft_ms=117.0, tpot_ms=78.4))
    out = capsys.readouterr().out
    assert tried[-1] == pytest.approx(0.103) and tried[-2] > 0.103     # it stops at the lowest load
    assert (f"Server: at {tried[-1]:g} QPS, about one query in flight at a time, this host's p99 TPOT was 105 ms: "
            "the llama3.1-8b's Server TPOT bound of 100 ms cannot be met here at any load") in out
    limit = targets["Server"]["host_limit"]
    assert limit["measured_qps"] == tried[-1] and "performance_target_qps" not in limit
    assert targets["Server"]["target_qps"] == tried[-1]     # the lowered target, as any lowering records


def test_no_probe_without_a_latency_bound_or_a_server(tmp_path, monkeypatch):
    probed = []
    monkeypatch.setattr(latency, "probe_alone", lambda req: probed.append(req) or SLOW)
    reach = latency.Reach()
    edge = HarnessRequest(model="llama3.1-8b-edge", results_dir=str(tmp_path), dataset_path="ds.pkl",
                          scenarios=("Offline", "SingleStream"), api_servers=("http://127.0.0.1:1",), api_model_name="m")
    reach.judge(edge, "SingleStream", [], 100, given=False)
    hf = HarnessRequest(model="llama3.1-8b", results_dir=str(tmp_path), dataset_path="ds.pkl", scenarios=("Server",),
                        backend="transformers", model_path="/m")
    reach.judge(hf, "Server", [], 100, given=False)
    assert probed == [] and reach.limits == {} and reach.for_test(hf, "Server", "performance") is hf


@pytest.mark.parametrize("alone", [SLOW, FAST])
def test_a_given_performance_load_runs_the_performance_test_there_and_the_accuracy_tests_at_the_target(
        tmp_path, monkeypatch, capsys, alone):
    """A replay of a run whose Server performance test ran at the lowest load gives that load
    (hostlimit.LOADS_ENV) beside the target: on a host out of reach (SLOW) and within it (FAST) alike,
    the performance test runs at it, once, and the accuracy test at the target; targets.json keeps
    the load, so the replay's own record says where it measured."""
    tried = {}

    def run_one(req, scenario, mode, rows, base_dir=None, sized=None):
        d = tmp_path / "llama3.1-8b" / scenario / mode / "run_1"
        d.mkdir(parents=True, exist_ok=True)
        tried.setdefault((scenario, mode), []).append(req.server_target_qps)
        return RunOutcome(scenario, mode, "INVALID" if scenario == "Server" and mode == "performance" else "VALID",
                          [], str(d), 0, _summary(scenario, False))

    monkeypatch.setattr(testrun, "run_one", run_one)
    monkeypatch.setattr(testrun, "dataset_rows", lambda req: 300)
    monkeypatch.setattr(latency, "probe_alone", lambda req: alone)
    env = {"CM_MLPERF_PERFORMANCE_LOADS": "Server=0.103"}
    req = HarnessRequest(model="llama3.1-8b", results_dir=str(tmp_path), dataset_path="ds.pkl",
                         scenarios=("Offline", "Server"), api_servers=("http://127.0.0.1:1",), api_model_name="m",
                         test_query_count=4, accuracy_sample_count=300, server_target_qps=0.35,
                         performance_loads=hostlimit.parse_loads(env["CM_MLPERF_PERFORMANCE_LOADS"]))
    driver.run_all(req)
    assert tried[("Server", "performance")] == [pytest.approx(0.103)]
    assert tried[("Server", "accuracy")] == [pytest.approx(0.35)]
    out = capsys.readouterr().out
    assert "Server: the performance test runs once, at 0.103 QPS, the load given for it" in out
    targets = json.loads((tmp_path / "targets.json").read_text())["Server"]
    assert targets["target_qps"] == pytest.approx(0.35) and targets["performance_target_qps"] == pytest.approx(0.103)
    assert ("host_limit" in targets) is (alone is SLOW)


@pytest.mark.parametrize("text", ["Server", "Offline=1", "Server=0", "Server=x", "Server=inf"])
def test_a_performance_load_that_is_not_scenario_equals_qps_is_named(text):
    with pytest.raises(hostlimit.LoadsError, match=r"CM_MLPERF_PERFORMANCE_LOADS: .* is not SCENARIO=QPS"):
        hostlimit.parse_loads(text)
    assert hostlimit.parse_loads("Server=0.0581, Interactive=2") == {"Server": 0.0581, "Interactive": 2.0}
    assert hostlimit.format_loads({"Server": 0.0581}) == "Server=0.0581"


@pytest.mark.parametrize("alone", [SLOW, FAST])
def test_a_server_test_without_a_target_or_an_offline_test_runs_at_loadgens_default_and_says_so(
        tmp_path, monkeypatch, capsys, alone):
    """`--scenario=Server` alone, no target: nothing to derive one from, so LoadGen's own default; on a
    host out of reach that was said with the target formatted as a number, and the run died there
    (TypeError on None)."""
    tried = []

    def run_one(req, scenario, mode, rows, base_dir=None, sized=None):
        d = tmp_path / "llama3.1-8b" / scenario / mode / "run_1"
        d.mkdir(parents=True, exist_ok=True)
        tried.append(req.server_target_qps)
        return RunOutcome(scenario, mode, "INVALID", ["latency"], str(d), 0, _summary(scenario, False))

    monkeypatch.setattr(testrun, "run_one", run_one)
    monkeypatch.setattr(testrun, "dataset_rows", lambda req: 300)
    monkeypatch.setattr(latency, "probe_alone", lambda req: alone)
    req = HarnessRequest(model="llama3.1-8b", results_dir=str(tmp_path), dataset_path="ds.pkl", scenarios=("Server",),
                         modes=("performance",), api_servers=("http://127.0.0.1:1",), api_model_name="m",
                         test_query_count=4)
    driver.run_all(req)
    assert tried == [None]
    out = capsys.readouterr().out
    if alone is SLOW:
        assert "the performance test runs once, at LoadGen's default target (mlperf.conf), and is not retried" in out
    assert "None" not in out
