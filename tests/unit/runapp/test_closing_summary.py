"""The main job's closing screen (runapp.summary), from the typed step results of recorded runs."""
import pytest

from mlperf_llm import outcomes
from mlperf_llm.runapp import summary
from outcome_fixtures import checker_record, full_state, harness_records

FULL = {"CM_MLPERF_INFERENCE_VERSION": "5.1", "CM_MLPERF_MODEL": "llama2-70b-99",
        "CM_MLPERF_SUBMISSION_DIVISION": "open", "CM_MLPERF_EXECUTION_MODE": "test", "CM_MLPERF_EMBEDDED": "yes",
        "CM_MLPERF_RESULTS_DIR": "/r/mlperf_results", "CM_MLPERF_RUN_ACCURACY": "yes",
        "CM_MLPERF_RUN_COMPLIANCE": "yes", "CM_MLPERF_GENERATE_SUBMISSION": "yes"}
PERFORMANCE_ONLY = dict(FULL, CM_MLPERF_RUN_ACCURACY="no", CM_MLPERF_RUN_COMPLIANCE="no",
                        CM_MLPERF_GENERATE_SUBMISSION="no")


@pytest.fixture
def state(tmp_path):
    return full_state(tmp_path)


def test_a_full_run_shows_every_verdict_and_why(state, tmp_path):
    text = summary(FULL, state)
    assert "MLPerf Inference v5.1 llama2-70b-99 (open division, test run)" in text
    # each test, and the reason of each INVALID one with LoadGen's numbers
    assert "Server      performance INVALID  3050 tokens/s, target 8 QPS (derived from" in text
    assert "INVALID: early stopping not met: 32 queries processed, at least 459 needed (TPOT)" in text
    assert "INVALID: min duration not met: the test lasted 0.11 s, LoadGen's min_duration is 1 s" in text
    assert "p99 TTFT 23.69 ms (bound 2000 ms), p99 TPOT 0.02564 ms (bound 200 ms)" in text
    assert "Offline     accuracy    completed" in text and "128,520 tokens/s" in text
    # ROUGE and tokens per sample against the targets of both models
    assert "Server      PASS against llama2-70b-99's targets (Required accuracy for closed division), 16 samples" in text
    assert "ROUGE-1 89.57 >= 43.99, ROUGE-2 77.72 >= 21.81, ROUGE-L 88.72 >= 28.33, tokens/sample 294.1 in [265, 323.9]" in text
    assert "against llama2-70b-99.9's targets: PASS" in text
    # TEST06, the checker, the paths
    assert "Offline     PASS (EOS ok, sample length ok; first token not checked for Offline;" in text
    assert "Server      PASS (first token ok, EOS ok, sample length ok;" in text
    assert ("Submission checker (official, v5.1): PASS except the checks only a full-length run can pass (test mode): "
            "accuracy_covers_dataset, early_stopping, min_duration") in text
    assert f"full output: {tmp_path}/checker/submission_checker.log" in text
    assert f"Submission: {tmp_path}/mlperf_submission (submitter YourOrg, round v5.1)" in text
    assert f"tarball: {tmp_path}/mlperf_submission.tar.gz (sha1 ab12)" in text
    assert f"summary page: {tmp_path}/mlperf_submission/summary.html" in text
    assert "Results: /r/mlperf_results" in text


def test_a_checker_that_found_errors_shows_them(state, tmp_path):
    bad = "[2026-11-22 05:16:12,700 submission_checker.py:99 ERROR] closed/cm4mlperf/systems/x.json: bad field\n"
    state[outcomes.CHECKER] = outcomes.to_state(checker_record(tmp_path / "bad", extra=bad * 7))
    text = summary(FULL, state)
    assert "Submission checker (official, v5.1): FAIL, 7 error(s)" in text
    assert text.count("  - closed/cm4mlperf/systems/x.json: bad field") == 5 and "... and 2 more" in text


def test_a_checker_that_could_not_run_says_why(state):
    state[outcomes.CHECKER] = outcomes.to_state(outcomes.CheckerVerdict(
        "v5.1", "NOT RUN", reason="inference source is not given: pass --src_path=DIR"))
    assert "Submission checker (official, v5.1): NOT RUN: inference source is not given: pass --src_path=DIR" \
        in summary(FULL, state)
    del state[outcomes.CHECKER]
    assert ("Submission checker: no verdict (the step failed before it ran the checker; its error is printed above)"
            in summary(FULL, state))


def test_test06_not_verified_says_why(state):
    state[outcomes.TEST06] = outcomes.to_state([outcomes.Test06Verdict("Offline", "NOT VERIFIED", reason="wheel 4.1.30")])
    assert "Offline     NOT VERIFIED: wheel 4.1.30" in summary(FULL, state)


def test_a_performance_only_run_claims_nothing_it_did_not_do(tmp_path):
    state = {outcomes.HARNESS: outcomes.to_state([t for t in harness_records(tmp_path) if t.mode == "performance"])}
    text = summary(PERFORMANCE_ONLY, state)
    assert "early stopping not met" in text
    for absent in ("Accuracy", "TEST06", "checker", "Submission", "tarball", "summary page", "accuracy "):
        assert absent not in text, absent


def test_a_step_that_left_no_record_is_named(tmp_path):
    text = summary(FULL, {})
    assert "no test results (the benchmark step reported none)" in text
    assert "no verdict (process-mlperf-accuracy reported none)" in text
    assert "no verdict (run-mlperf-compliance-test06 reported none)" in text


def test_a_malformed_record_is_reported_not_raised(state):
    state[outcomes.ACCURACY] = {"/r/Offline/accuracy": {"passed": True}}     # the old untyped form
    text = summary(FULL, state)
    assert "no verdict (state['mlperf_accuracy']: expected a list of AccuracyVerdict, got dict)" in text
    assert "early stopping not met" in text


def test_a_singlestream_test_shows_its_p90_latency_in_ms_and_its_target_latency(tmp_path):
    # the harness's record of a real SingleStream test (tests/fixtures/harness/singlestream_test_run)
    from pathlib import Path
    from mlperf_llm.harness.cmenv import outcome_records
    from mlperf_llm.harness.driver import HarnessRequest, RunOutcome
    from mlperf_llm.harness.results import read_summary
    run = Path(__file__).resolve().parents[2] / "fixtures" / "harness" / "singlestream_test_run"
    (tmp_path / "targets.json").write_text('{"SingleStream": {"target_latency_ms": null, '
                                           '"source": "LoadGen default (mlperf.conf)"}}')
    outcome = RunOutcome("SingleStream", "performance", "INVALID", ["LoadGen result is INVALID"],
                         str(run), 0, read_summary(run).to_dict())
    req = HarnessRequest(model="llama3.1-8b-edge", results_dir=str(tmp_path), dataset_path="unused.pkl")
    [t] = outcome_records(req, [outcome])
    assert (t.metric, t.unit, t.target_qps, t.target_latency_ms) == (pytest.approx(54.006646), "ms (p90 latency)",
                                                                     None, pytest.approx(10))
    text = summary(dict(PERFORMANCE_ONLY, CM_MLPERF_MODEL="llama3.1-8b-edge"),
                   {outcomes.HARNESS: outcomes.to_state([t])})
    assert ("SingleStream performance INVALID  54.01 ms (p90 latency), target latency 10 ms "
            "(LoadGen default (mlperf.conf))") in text
    assert "tokens/s" not in text and "QPS" not in text


def test_a_summarisation_run_shows_rougelsum_gen_len_and_how_gen_len_was_scaled():
    from mlperf_llm.accuracy.process import AccuracyOutcome, accuracy_verdict
    from mlperf_llm.accuracy.summarization import SummaryScores
    from mlperf_llm.accuracy.targets import judge, mlperf_targets
    result = SummaryScores(rouge1=38.9, rouge2=16.0, rougeL=24.6, rougeLsum=35.9, gen_len=60000, gen_num=100,
                           sentence_splitter="nltk")
    verdict = judge(result.checker_values(), mlperf_targets("llama3.1-8b", rows_scored=100))
    record = accuracy_verdict(AccuracyOutcome("/r/llama3.1-8b/Offline/accuracy", result, [verdict], "h"))
    text = summary(dict(FULL, CM_MLPERF_MODEL="llama3.1-8b"), {outcomes.ACCURACY: outcomes.to_state([record])})
    assert "Accuracy:" in text
    assert "Offline     PASS against llama3.1-8b's targets (Required accuracy for closed division), 100 samples" in text
    assert ("ROUGE-1 38.9 >= 38.39, ROUGE-2 16 >= 15.75, ROUGE-L 24.6 >= 24.25, ROUGE-Lsum 35.9 >= 35.44, "
            "gen_len (characters) 60,000 in [54,989, 67,208]") in text
    assert "(GEN_LEN reference 8167644 is for all 13368 rows; this test scored 100: x 100/13368 = 61098.47397)" in text
