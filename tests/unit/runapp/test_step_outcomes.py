"""The typed step results (mlperf_llm.outcomes): built by each area from real recorded outputs,
plain JSON in state, and the same records back."""
import json

import pytest

from mlperf_llm import outcomes
from outcome_fixtures import (MODEL, accuracy_records, checker_record, full_state, harness_records,
                              recorded_accuracy, verified_test06_records)


def test_every_record_is_plain_json_and_comes_back_equal(tmp_path):
    state = full_state(tmp_path)
    assert json.loads(json.dumps(state)) == state        # what the engine hands on and caches
    for key in (outcomes.HARNESS, outcomes.ACCURACY, outcomes.TEST06, outcomes.SUBMISSION, outcomes.CHECKER):
        records = outcomes.from_state(state, key)
        assert outcomes.to_state(records) == state[key]
        if isinstance(records, list):
            assert records and all(isinstance(r, outcomes._Record) for r in records)
    acc = outcomes.from_state(state, outcomes.ACCURACY)[0]
    assert isinstance(acc.targets, tuple) and isinstance(acc.targets[0].metrics[0], outcomes.MetricCheck)


def test_harness_records_from_recorded_loadgen_logs(tmp_path):
    tests = {(t.scenario, t.mode): t for t in harness_records(tmp_path)}
    server = tests[("Server", "performance")]
    assert server.verdict == "INVALID"
    assert server.reasons == ("early stopping not met: 32 queries processed, at least 459 needed (TPOT)",)
    assert (server.metric, server.unit, server.queries, server.target_qps) == (3049.79, "tokens/s", 32, 8.0)
    assert server.ttft_limit_ms == 2000 and server.tpot_limit_ms == 200
    assert server.ttft_p99_ms == pytest.approx(23.692609) and server.tpot_p99_ms == pytest.approx(0.02564)
    assert server.target_source.startswith("derived from the Offline performance test")
    offline = tests[("Offline", "performance")]
    assert offline.reasons == ("min duration not met: the test lasted 0.11 s, LoadGen's min_duration is 1 s",)
    assert offline.metric == 128520 and offline.ttft_limit_ms is None
    assert offline.target_source == "given as --offline_target_qps"
    accuracy = tests[("Server", "accuracy")]
    assert (accuracy.verdict, accuracy.reasons, accuracy.metric, accuracy.target_qps) == ("VALID", (), None, None)


def test_a_seed_reason_is_kept_beside_loadgens(tmp_path):
    from mlperf_llm.harness.cmenv import outcome_records
    from mlperf_llm.harness.driver import HarnessRequest, RunOutcome
    run = RunOutcome("Server", "performance", "INVALID",
                     ["LoadGen result is INVALID", "early stopping not met", "qsl_rng_seed 1 is not this round's 2"],
                     str(tmp_path), 0, {})
    [t] = outcome_records(HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path), dataset_path="x"), [run])
    assert t.reasons == ("early stopping not met", "qsl_rng_seed 1 is not this round's 2")


def test_accuracy_verdicts_against_both_targets():
    [v] = accuracy_records(("Server",))
    assert (v.scenario, v.samples, v.rouge1, v.tokens_per_sample) == ("Server", 16, 89.5667, 294.1)
    assert [t.model for t in v.targets] == [MODEL, "llama2-70b-99.9"] and v.passed
    tokens = v.targets[0].metrics[-1]
    assert tokens.metric == "TOKENS_PER_SAMPLE" and tokens.minimum == pytest.approx(265.005)
    assert tokens.maximum == pytest.approx(323.895)


def test_an_accuracy_that_misses_a_target_fails():
    from mlperf_llm.accuracy.process import AccuracyOutcome, accuracy_verdict
    from mlperf_llm.accuracy.targets import judge, mlperf_targets
    result = recorded_accuracy("Server")
    result.tokens_per_sample = 120.0          # answers far shorter than the reference's
    v = accuracy_verdict(AccuracyOutcome("/r/llama2-70b-99/Server/accuracy", result,
                                         [judge(result.checker_values(), mlperf_targets(MODEL))], "h"))
    assert not v.passed and [m.metric for m in v.targets[0].metrics if not m.passed] == ["TOKENS_PER_SAMPLE"]


def test_test06_verdicts_from_recorded_logs(tmp_path):
    offline, server = verified_test06_records(tmp_path)
    assert (offline.status, offline.first_token, offline.eos, offline.sample_length) == ("PASS", None, True, True)
    assert (server.status, server.first_token) == ("PASS", True) and server.samples > 0
    assert server.directory.endswith("Server/TEST06")


def test_checker_verdicts_from_the_recorded_official_checker(tmp_path):
    c = checker_record(tmp_path / "a")
    assert (c.round, c.verdict, c.mode, c.error_count, c.passed) == ("v5.1", "PASS-TEST-MODE", "test", 0, True)
    assert "early_stopping" in c.full_length_checks and c.log.endswith("submission_checker.log")
    bad = "[2026-11-22 05:16:12,700 submission_checker.py:99 ERROR] closed/cm4mlperf/systems/x.json: bad field\n"
    c = checker_record(tmp_path / "b", extra=bad * 7)
    assert (c.verdict, c.error_count, c.passed) == ("FAIL", 7, False)
    assert len(c.first_errors) == outcomes.CheckerVerdict.FIRST_ERRORS
    assert c.first_errors[0] == "closed/cm4mlperf/systems/x.json: bad field"


def test_from_state_names_what_is_wrong():
    assert outcomes.from_state({}, outcomes.HARNESS) == [] and outcomes.from_state({}, outcomes.CHECKER) is None
    with pytest.raises(outcomes.OutcomeError, match="mlperf_harness.*expected a list of TestOutcome"):
        outcomes.from_state({outcomes.HARNESS: {"Offline": "VALID"}}, outcomes.HARNESS)
    with pytest.raises(outcomes.OutcomeError, match="CheckerVerdict: the key 'verdict' is missing"):
        outcomes.from_state({outcomes.CHECKER: {"round": "v5.1"}}, outcomes.CHECKER)
    with pytest.raises(outcomes.OutcomeError, match="not a step result"):
        outcomes.from_state({}, "CM_SUT_META")


def test_records_are_immutable():
    v = outcomes.CheckerVerdict("v5.1", "PASS")
    with pytest.raises(AttributeError):
        v.verdict = "FAIL"
