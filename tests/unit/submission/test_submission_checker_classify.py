"""Sorting the official checker's lines: recorded outputs of the real checker on our fixture trees."""
import os
import shutil

import pytest

from mlperf_llm.submission.checker import (CheckerReport, HostBound, checker_verdict, classify, detect_mode,
                                          find_checker, format_report)
from mlperf_llm.submission.errors import SubmissionError

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "submission")
SYS = "closed/cm4mlperf/results/cpu_2c-reference-cpu-vllm/llama2-70b-99"


@pytest.fixture
def tree(tmp_path):
    """The results part of the tree the recorded outputs were made on (the perf detail logs)."""
    for scenario in ("Offline", "Server"):
        dst = tmp_path / SYS / scenario / "performance" / "run_1"
        dst.mkdir(parents=True)
        shutil.copy(os.path.join(FIX, "results-v5.1", "llama2-70b-99", scenario, "performance", "run_1",
                                 "mlperf_log_detail.txt"), dst)
    return str(tmp_path)


def recorded(name):
    with open(os.path.join(FIX, "checker", name)) as f:
        return f.read()


def report(output, tree, mode, rc=1):
    return CheckerReport(["python", "submission_checker.py"], rc, mode, output, classify(output, tree, mode))


def test_test_mode_v51_only_full_length_checks_fail(tree):
    r = report(recorded("v5.1-closed-test-mode.log"), tree, "test")
    assert r.errors == []
    assert r.full_length_checks == ["accuracy_covers_dataset", "early_stopping", "min_duration",
                                    "offline_samples_per_query", "performance_sample_count", "result_valid"]
    assert r.passed
    text = format_report(r)
    assert "Verdict: PASS except the full-length checks above (test mode)" in text
    assert "SUMMARY: submission has errors" in text


def test_equal_issue_off_counts_as_a_test_mode_check_only(tree):
    line = ("[2026-11-22 09:00:00,000 submission_checker.py:1563 ERROR] closed/cm4mlperf/results/x/llama2-70b-99/"
            "Server/performance/run_1 requires equal issue mode (sample_concatenate_permutation), expected=true, "
            "found=false\n")
    r = report(recorded("v5.1-closed-test-mode.log") + line, tree, "test")
    assert r.errors == [] and "equal_issue" in r.full_length_checks and r.passed
    v = report(line, tree, "valid")
    assert not v.passed


def test_test_mode_v41(tree):
    r = report(recorded("v4.1-closed-test-mode.log"), tree, "test")
    assert r.errors == [] and r.passed
    assert "accuracy_covers_dataset" not in r.full_length_checks     # the v4.1 checker has no such check
    assert "min_duration" in r.full_length_checks


def test_valid_mode_makes_the_same_lines_errors(tree):
    r = report(recorded("v5.1-closed-test-mode.log"), tree, "valid")
    assert not r.passed and r.full_length_checks == []
    assert any("Test duration less than 600s" in f.message for f in r.errors)
    assert "Verdict: FAIL" in format_report(r)


def test_any_other_error_fails_a_test_mode_run(tree):
    out = recorded("v5.1-closed-test-mode.log") + (
        "[2026-11-22 05:16:12,400 submission_checker.py:3202 ERROR] TEST06 accuracy check failed. "
        "first_token_check: True eos_check: False length_check: True.\n")
    r = report(out, tree, "test")
    assert not r.passed
    assert [f.message[:30] for f in r.errors] == ["TEST06 accuracy check failed. "]


def test_missing_required_scenario_folder_is_a_real_error(tree):
    shutil.rmtree(os.path.join(tree, SYS, "Offline"))
    line = f"ERROR:main:{SYS} does not have all required scenarios, missing {{'Offline'}}\n"
    (f,) = report(line, tree, "test").findings
    assert f.kind == "error"
    line = f"ERROR:main:{SYS} does not have all required scenarios, missing {{'Server'}}\n"
    assert report(line, tree, "test").findings[0].kind == "consequence"   # folder there: it failed


def test_performance_constraints_not_met_is_real(tree):
    log = os.path.join(tree, SYS, "Server", "performance", "run_1", "mlperf_log_detail.txt")
    text = open(log).read().replace('"key": "result_perf_constraints_met", "value": true',
                                    '"key": "result_perf_constraints_met", "value": false')
    open(log, "w").write(text)
    r = report(f"ERROR:main:{SYS}/Server/performance/run_1 has issues\n", tree, "test")
    assert [f.kind for f in r.findings] == ["consequence", "error"]
    assert "performance constraints not met" in r.errors[0].message


def test_clean_checker_output_passes(tree):
    r = report("INFO:main:Results=2, NoResults=0, Power Results=0\nINFO:main:SUMMARY: submission looks OK\n",
               tree, "valid", rc=0)
    assert r.passed and r.summary_lines() == ["Results=2, NoResults=0, Power Results=0",
                                              "SUMMARY: submission looks OK"]


def test_mode_is_read_from_the_logs(tree):
    assert detect_mode(tree) == "test"


def test_no_source_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("CM_MLPERF_INFERENCE_SOURCE", raising=False)
    with pytest.raises(SubmissionError, match="CM_MLPERF_INFERENCE_SOURCE"):
        find_checker(None)
    from mlperf_llm.rounds import get_round
    with pytest.raises(SubmissionError, match="submission_checker.py .the checker of v5.1.*at v5.1"):
        find_checker(str(tmp_path), get_round("5.1"))
    with pytest.raises(SubmissionError, match="submission_checker/main.py .the checker of v6.1.*at b66003e"):
        find_checker(str(tmp_path), get_round("6.1"))


EDGE = "results/cpu_2c-reference-cpu-vllm/llama3.1-8b-edge/Offline/accuracy"


@pytest.fixture
def edge_tree(tmp_path):
    """A closed and an open llama3.1-8b-edge accuracy folder: the detail log of a 16-row accuracy run."""
    for division in ("closed", "open"):
        dst = tmp_path / division / "cm4mlperf" / EDGE
        dst.mkdir(parents=True)
        shutil.copy(os.path.join(FIX, "results-v6.1-llama3.1-8b-edge", "llama3.1-8b-edge", "Offline", "accuracy",
                                 "mlperf_log_detail.txt"), dst)
    return str(tmp_path)


def _not_met(path, bound, found, level="WARNING"):
    return f"[2026-11-26 07:00:00,000 submission_checker.py:1417 {level}] {path} accuracy not met: " \
           f"expected={bound:f}, found={found}\n"


def test_gen_len_of_fewer_rows_is_full_length_only_within_the_scaled_range(edge_tree):
    script = f"closed/cm4mlperf/{EDGE}"                               # v5.1.1: relative to the tree
    package = os.path.join(edge_tree, script, "mlperf_log_detail.txt")  # master: the detail log, absolute
    low = 3051113 * 0.9                                                # the checker's GEN_LEN target
    invalid = f"[2026-11-26 07:00:00,000 submission_checker.py:2667 ERROR] {script}, accuracy not valid\n"
    for path in (script, package):
        kinds = [(f.kind, f.check) for f in classify(_not_met(path, low, 9772) + invalid, edge_tree, "test")]
        assert kinds[0] == ("full_length", "length_sum")
    assert [f.kind for f in classify(_not_met(script, low, 9772) + invalid, edge_tree, "test")] == [
        "full_length", "consequence"]
    valid = classify(_not_met(script, low, 9772), edge_tree, "valid")           # a valid run scores every row
    short = classify(_not_met(script, low, 4000), edge_tree, "test")            # 16 rows: 8787.2..10739.9
    assert [f.kind for f in valid + short] == ["error", "error"]
    assert short[0].message.endswith("(GEN_LEN is a sum over the data set: 4000 for 16 of 5000 rows, against "
                                     "8787.21..10739.9 scaled to them)")


def test_a_missed_quality_target_is_an_error_in_the_closed_division_only(edge_tree):
    rouge = 36.124 * 0.99
    closed = classify(_not_met(f"closed/cm4mlperf/{EDGE}", rouge, 10.0), edge_tree, "test")
    opened = classify(_not_met(f"open/cm4mlperf/{EDGE}", rouge, 10.0), edge_tree, "test")
    assert [(f.kind, f.message.endswith("(closed division: the accuracy target is missed)")) for f in closed] == [
        ("error", True)]
    assert [f.kind for f in opened] == ["warning"]
    coverage = (f"[2026-11-26 07:00:00,000 submission_checker.py:1482 ERROR] closed/cm4mlperf/{EDGE} accurcy run "
                "does not cover all dataset, accuracy samples: 16, dataset size: 5000\n")
    invalid = f"[2026-11-26 07:00:00,000 submission_checker.py:2667 ERROR] open/cm4mlperf/{EDGE}, accuracy not valid\n"
    # v5.1.1's verdict line is not explained by the data set coverage (which does not invalidate accuracy)
    assert [f.kind for f in classify(coverage + invalid.replace("open/", "closed/"), edge_tree, "test")] == [
        "full_length", "error"]


# the master checker's LLM line (performance_check.py: llm_check), as it formats it
EXTRA = ("[2026-11-27 22:40:01,120 performance_check.py:497 ERROR] Failed extra check for TTFT and TPOT. "
         "Obtained: TTFT 99-tile: 301234567.0000, TPOT 99-tile: 105123456.0000. "
         "Required: TTFT 99-tile: 2000000000.0000, TPOT 99-tile: 100000000.0000\n")
SERVER_LIMIT = HostBound("Server", 2000.0, 100.0, "this host decodes ~103 ms a token alone: the llama3.1-8b's "
                         "Server TPOT bound of 100 ms cannot be met here at any load")


def host_report(output, tree, mode, bounds):
    return CheckerReport(["python", "submission_checker.py", "--version", "v6.1"], 1, mode, output,
                         classify(output, tree, mode, bounds), host_bounds=bounds)


def test_a_latency_miss_the_harness_found_out_of_reach_is_named_as_the_host_limit_apart_from_errors(tree):
    out = recorded("v5.1-closed-test-mode.log") + EXTRA
    r = host_report(out, tree, "test", (SERVER_LIMIT,))
    assert r.errors == [] and r.host_limits == [SERVER_LIMIT.sentence]
    assert not r.passed and r.only_host_limited
    assert r.checker_verdict == (f"FAIL on this host's speed alone ({SERVER_LIMIT.sentence}); every other check: "
                                 "PASS except the full-length checks above (test mode)")
    text = format_report(r)
    assert "This host's limit (the harness timed one query alone before the test):" in text
    v = checker_verdict(r, "log")
    assert v.verdict == "FAIL-HOST-LIMIT" and v.host_limits == (SERVER_LIMIT.sentence,) and not v.passed


def test_the_same_miss_without_a_host_limit_or_beside_another_error_is_a_plain_fail(tree):
    out = recorded("v5.1-closed-test-mode.log") + EXTRA
    r = host_report(out, tree, "test", ())
    assert [f.message[:32] for f in r.errors] == ["Failed extra check for TTFT and "]
    assert r.checker_verdict == "FAIL" and checker_verdict(r, "log").verdict == "FAIL"
    # bounds of another scenario (Interactive's) do not explain it
    other = HostBound("Interactive", 500.0, 30.0, "x")
    assert host_report(out, tree, "test", (other,)).checker_verdict == "FAIL"
    both = host_report(out + "ERROR:main:something else is wrong\n", tree, "test", (SERVER_LIMIT,))
    assert both.checker_verdict == "FAIL" and checker_verdict(both, "log").verdict == "FAIL"
    assert both.host_limits == [SERVER_LIMIT.sentence]      # still said, beside the error


def test_loadgen_invalid_for_latency_on_a_host_limited_scenario_is_the_host_limit(tree):
    log = os.path.join(tree, SYS, "Server", "performance", "run_1", "mlperf_log_detail.txt")
    text = open(log).read().replace('"key": "result_perf_constraints_met", "value": true',
                                    '"key": "result_perf_constraints_met", "value": false')
    open(log, "w").write(text)
    bound = HostBound("Server", 2000.0, 200.0, "this host ...")
    r = host_report(f"ERROR:main:{SYS}/Server/performance/run_1 has issues\n", tree, "test", (bound,))
    assert [f.kind for f in r.findings] == ["consequence", "host_limit"] and r.errors == []


@pytest.fixture
def slow_host_tree(tmp_path):
    """The master checker's real output on the llama3.1-8b tree that made CI red on the slow kind of
    host at 16507c1 (--server_target_qps=4: p99 TPOT 113.7 ms of 100; 2026-11-27), with the tree's
    detail logs; TREE in the log stands for the tree's folder."""
    src = os.path.join(FIX, "checker", "master-llama31-slow-host")
    shutil.copytree(os.path.join(src, "tree"), tmp_path / "tree")
    with open(os.path.join(src, "checker.log")) as f:
        return str(tmp_path / "tree"), f.read().replace("TREE", str(tmp_path / "tree"))


def test_the_recorded_slow_host_miss_is_a_plain_fail_and_with_the_host_limit_the_only_failure(slow_host_tree):
    tree, out = slow_host_tree
    plain = host_report(out, tree, "test", ())
    assert [f.message[:32] for f in plain.errors] == ["Failed extra check for TTFT and "]
    assert plain.checker_verdict == "FAIL"
    limited = host_report(out, tree, "test", (SERVER_LIMIT,))
    assert limited.errors == [] and limited.only_host_limited
    assert limited.checker_verdict.startswith("FAIL on this host's speed alone (this host decodes ~103 ms")
    assert limited.checker_verdict.endswith("every other check: PASS except the full-length checks above (test mode)")
    assert limited.full_length_checks == ["accuracy_covers_dataset", "early_stopping", "min_duration",
                                         "performance_sample_count"]
