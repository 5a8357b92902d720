from pathlib import Path

import pytest

from mlperf_llm.harness.results import (HarnessStatus, Summary, detail_errors, finalize, parse_summary,
                                        read_summary, staging_dir, layout_dir, verdict)

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "harness"
SEED_51 = 1780908523862526354


def test_parse_offline_summary():
    s = parse_summary((FIX / "offline_valid_summary.txt").read_text())
    assert (s.scenario, s.mode, s.result) == ("Offline", "PerformanceOnly", "VALID")
    assert s.samples_per_second == pytest.approx(380.157)
    assert s.tokens_per_second == pytest.approx(3041.26)
    assert s.qsl_rng_seed == 2085463073848966840


def test_parse_server_summary_has_token_latencies():
    s = parse_summary((FIX / "server_invalid_summary.txt").read_text())
    assert s.result == "INVALID"
    assert s.samples_per_second == pytest.approx(22.72)
    assert s.ttft_p99_ns and s.tpot_p99_ns and s.ttft_p99_ns > s.tpot_p99_ns


def test_detail_errors_are_extracted():
    errs = detail_errors((FIX / "server_detail_with_error.txt").read_text())
    assert errs == ["error_runtime: IssueQueryThread 0 Ending early: Max query count reached. query_count 20"]


def _status(ok=True, completed=10, errors=()):
    return HarnessStatus(ok, "Offline", "performance", "5.1", "5.1.2", completed, 100, 0, list(errors))


def test_verdicts():
    valid = Summary(result="VALID", qsl_rng_seed=SEED_51)
    assert verdict(_status(), valid, SEED_51, "performance") == ("VALID", [])
    v, why = verdict(_status(), Summary(result="INVALID", qsl_rng_seed=SEED_51), SEED_51, "performance")
    assert v == "INVALID" and "LoadGen result is INVALID" in why[0]
    v, why = verdict(_status(), Summary(result="VALID", qsl_rng_seed=123), SEED_51, "performance")
    assert v == "INVALID" and "not this round's" in why[0]
    v, why = verdict(_status(ok=False, errors=["server died"]), valid, SEED_51, "performance")
    assert (v, why) == ("FAILED", ["server died"])
    assert verdict(None, valid, SEED_51, "performance")[0] == "FAILED"
    assert verdict(_status(), Summary(), SEED_51, "performance")[0] == "FAILED"
    assert verdict(_status(completed=0), Summary(), None, "accuracy")[0] == "FAILED"
    assert verdict(_status(), Summary(), None, "accuracy")[0] == "VALID"


def test_layout_and_finalize(tmp_path):
    final = layout_dir(tmp_path, "llama2-70b-99", "Server", "performance")
    assert final == tmp_path / "llama2-70b-99" / "Server" / "performance" / "run_1"
    assert layout_dir(tmp_path, "m", "Offline", "accuracy") == tmp_path / "m" / "Offline" / "accuracy"
    with pytest.raises(ValueError, match="choose performance"):
        layout_dir(tmp_path, "m", "Offline", "perf")
    st = staging_dir(final)
    st.mkdir(parents=True)
    (st / "a.txt").write_text("first")
    assert finalize(st, final, ok=True) == final
    st.mkdir()
    (st / "a.txt").write_text("second")
    finalize(st, final, ok=True)
    assert (final / "a.txt").read_text() == "second"
    prev = [p for p in final.parent.iterdir() if p.name.startswith("run_1.prev-")]
    assert len(prev) == 1 and (prev[0] / "a.txt").read_text() == "first"
    st.mkdir()
    failed = finalize(st, final, ok=False)
    assert failed.name.startswith("run_1.failed-") and (final / "a.txt").read_text() == "second"


def test_status_roundtrip_and_read_summary(tmp_path):
    _status(errors=["x"]).write(tmp_path)
    assert HarnessStatus.read(tmp_path).errors == ["x"]
    assert HarnessStatus.read(tmp_path / "nothing") is None
    (tmp_path / "mlperf_log_summary.txt").write_text((FIX / "offline_valid_summary.txt").read_text())
    assert read_summary(tmp_path).result == "VALID"


SUBMISSION_FIX = FIX.parent / "submission"


def test_invalid_reasons_name_each_unmet_condition_with_loadgens_numbers():
    """Real LoadGen 5.1.2 logs (tests/fixtures/submission/results-v5.1): a short Server test fails
    early stopping, a short Offline test the minimum duration."""
    run = SUBMISSION_FIX / "results-v5.1" / "llama2-70b-99"
    server = read_summary(run / "Server" / "performance" / "run_1")
    assert server.invalid_reasons == ["early stopping not met: 32 queries processed, at least 459 needed (TPOT)"]
    assert (server.queries, server.target_qps, server.ttft_limit_ns, server.tpot_limit_ns) == (32, 8.0, 2e9, 2e8)
    offline = read_summary(run / "Offline" / "performance" / "run_1")
    assert offline.invalid_reasons == ["min duration not met: the test lasted 0.11 s, LoadGen's min_duration is 1 s"]
    assert offline.ttft_limit_ns is None
    interactive = read_summary(run / "Interactive" / "performance" / "run_1")
    assert interactive.ttft_limit_ns == 450e6 and interactive.tpot_limit_ns == 40e6
    valid = read_summary(SUBMISSION_FIX / "results-v5.1-valid" / "llama2-70b-99" / "Server" / "performance" / "run_1")
    assert valid.result == "VALID" and valid.invalid_reasons == []


def test_invalid_reasons_from_the_summary_when_the_detail_log_is_missing(tmp_path):
    (tmp_path / "mlperf_log_summary.txt").write_text((FIX / "server_latency_missed_summary.txt").read_text())
    s = read_summary(tmp_path)
    assert s.invalid_reasons == ["latency bounds not met: p99 TTFT 713 ms <= 2000 ms, p99 TPOT 240 ms > 200 ms",
                                 "early stopping not met: 32 queries processed, at least 662 needed (TPOT)"]
    v, why = verdict(_status(), s, None, "performance")
    assert v == "INVALID" and why == ["LoadGen result is INVALID"] + s.invalid_reasons


def test_invalid_reasons_of_each_condition():
    from mlperf_llm.harness.results import invalid_reasons
    assert invalid_reasons({"result_min_queries_met": False, "result_query_count": 1, "generated_samples_per_query": 48,
                            "effective_min_query_count": 1, "effective_min_sample_count": 24576}) == [
        "min queries not met: 1 queries (48 samples) issued, LoadGen requires 1 queries and 24576 samples"]
    assert invalid_reasons({"result_min_duration_met": False, "effective_scenario": "Server",
                            "generated_query_duration": 3546336556, "effective_min_duration_ms": 600000}) == [
        "min duration not met: its queries were scheduled over 3.55 s, LoadGen's min_duration is 600 s"]
    assert invalid_reasons({"early_stopping_met": False}) == ["early stopping not met"]
    assert invalid_reasons({"result_validity": "VALID", "early_stopping_met": True}) == []


def test_invalid_reasons_of_a_real_test_that_missed_both_latency_bounds():
    s = read_summary(FIX / "server_latency_missed_loaded")
    assert s.invalid_reasons == ["latency bounds not met: p99 TTFT 11396 ms > 2000 ms, p99 TPOT 3368 ms > 200 ms",
                                 "early stopping not met: 32 queries processed, at least 4774 needed (TPOT)"]
    assert (s.queries, s.target_qps, s.latency_met) == (32, 0.0709, False)


def test_an_interrupted_or_killed_tests_folder_is_not_left_named_as_running(tmp_path, monkeypatch):
    """Ctrl-C during a test: its folder goes to .failed-<time> (it stayed .partial-<pid> for good, past
    the next successful run); one left by a process that is gone (SIGKILL) is set aside by the next
    test of the same folder; one whose process still runs is left alone."""
    from mlperf_llm.harness import results, testrun
    final = layout_dir(tmp_path, "m", "SingleStream", "performance")
    dead = final.with_name(f"{final.name}.partial-999999999")
    dead.mkdir(parents=True)
    (dead / "harness.log").write_text("killed")
    running = final.with_name(f"{final.name}.partial-1")           # pid 1 runs
    running.mkdir()
    monkeypatch.setattr(testrun, "loadgen_model_and_dirs", lambda model, scenario, rnd: ("m", "SingleStream", "m",
                                                                                          "SingleStream"))
    monkeypatch.setattr(testrun, "_run_staged", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))

    class Req:
        rnd, model, results_dir = None, "m", tmp_path
    with pytest.raises(KeyboardInterrupt):
        testrun._run_one(Req(), "SingleStream", "performance", 10, None)
    names = sorted(p.name for p in final.parent.iterdir())
    assert [n for n in names if ".partial-" in n] == ["run_1.partial-1"]
    failed = [final.parent / n for n in names if n.startswith("run_1.failed-")]
    assert len(failed) == 2 and {(p / "harness.log").read_text() for p in failed if (p / "harness.log").exists()} == {"killed"}
    assert not final.exists()
    assert results.set_aside(failed[0].name)
