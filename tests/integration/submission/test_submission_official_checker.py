"""The official submission checker of each round, run from the inference source on our trees."""
import os
import shutil

import pytest

from submission_fixtures import ROUNDS, build, inference_source, set_p99
from mlperf_llm.submission.checker import format_report, run_checker

FULL_LENGTH = {"early_stopping", "min_duration", "offline_samples_per_query", "performance_sample_count",
               "result_valid"}


def source_or_skip(version):
    """The round's source from ../shared (never skipped: a missing copy fails the test)."""
    return inference_source(version)[0]


@pytest.mark.parametrize("version", ROUNDS)
@pytest.mark.parametrize("division", ["closed", "open"])
def test_tree_passes_all_but_the_full_length_checks(tmp_path, version, division):
    src = source_or_skip(version)
    report = build(tmp_path, version, division)
    r = run_checker(report.submission_dir, version, "cm4mlperf", src, workdir=str(tmp_path / "chk"))
    text = format_report(r)
    print(text)
    assert r.mode == "test"
    assert r.returncode == 1                       # the checker itself does fail a test-mode run ...
    assert r.errors == [], text                    # ... but only on checks a full-length run passes
    if version.startswith("v6"):    # the master checker: no "has issues" line; Offline samples in closed only
        expected = {"accuracy_covers_dataset", "early_stopping", "min_duration", "performance_sample_count"} | (
            {"offline_samples_per_query"} if division == "closed" else set())
    else:
        expected = FULL_LENGTH | ({"accuracy_covers_dataset"} if version == "v5.1" else set())
    assert set(r.full_length_checks) == expected
    assert r.passed and "Verdict: PASS except" in text
    assert os.path.isfile(tmp_path / "chk" / "summary.csv")


def test_a_failed_test06_fails_the_step(tmp_path):
    src = source_or_skip("v5.1")
    report = build(tmp_path, "v5.1", "closed")
    verify = os.path.join(report.submitter_dir, "compliance", "cpu_2c-reference-cpu-vllm", "llama2-70b-99",
                          "Server", "TEST06", "verify_accuracy.txt")
    with open(verify, "w") as f:
        f.write("First token check pass: False\nEOS check pass: True\nSample length check pass: True\n")
    r = run_checker(report.submission_dir, "v5.1", "cm4mlperf", src, workdir=str(tmp_path / "chk"))
    assert not r.passed
    assert any("TEST06 accuracy check failed" in f.message for f in r.errors)


def test_a_forbidden_file_fails_the_step(tmp_path):
    src = source_or_skip("v5.0")
    report = build(tmp_path, "v5.0", "open")
    with open(os.path.join(report.submitter_dir, "code", ".notes"), "w") as f:
        f.write("x")
    r = run_checker(report.submission_dir, "v5.0", "cm4mlperf", src, workdir=str(tmp_path / "chk"))
    assert not r.passed and any("git unfriendly name" in f.message for f in r.errors)


def test_a_missing_closed_scenario_fails_the_step(tmp_path):
    src = source_or_skip("v5.1")
    report = build(tmp_path, "v5.1", "closed")
    sysdir = "cpu_2c-reference-cpu-vllm/llama2-70b-99/Offline"
    for part in ("results", "measurements", "compliance"):
        shutil.rmtree(os.path.join(report.submitter_dir, part, sysdir))
    r = run_checker(report.submission_dir, "v5.1", "cm4mlperf", src, workdir=str(tmp_path / "chk"))
    assert not r.passed
    assert any("does not have all required scenarios, missing {'Offline'}" in f.message for f in r.errors)


def test_precheck_finds_what_the_master_checker_misses(tmp_path):
    """v6.1: an Interactive run over 450/40 ms passes the master checker (it applies Server's limits);
    our pre-check fails it, beside the checker's verdict."""
    src = source_or_skip("v6.1")
    report = build(tmp_path, "v6.1", "closed")
    log = os.path.join(report.submitter_dir, "results", "cpu_2c-reference-cpu-vllm", "llama2-70b-99.9",
                       "Interactive", "performance", "run_1", "mlperf_log_detail.txt")
    set_p99(log, 900, 30)           # TTFT over 450 ms, under Server's 2000; TPOT fine
    r = run_checker(report.submission_dir, "v6.1", "cm4mlperf", src, workdir=str(tmp_path / "chk"))
    text = format_report(r)
    assert r.errors == [], text                                  # the checker does not see it ...
    assert [f.message for f in r.precheck] == [
        "Interactive p99 TTFT 900.0 ms is over the limit of 450 ms (the checker measures Interactive against "
        "Server's limits): lower --interactive_target_qps"]      # ... the pre-check does
    assert not r.passed and "pre-check: 1 problem(s) (FAIL)" in text


def test_precheck_refuses_a_99_folder_in_v61_and_names_missing_scenarios(tmp_path):
    report = build(tmp_path, "v6.1", "closed")
    results = os.path.join(report.submitter_dir, "results", "cpu_2c-reference-cpu-vllm")
    shutil.copytree(os.path.join(results, "llama2-70b-99.9"), os.path.join(results, "llama2-70b-99"))
    for scenario in ("Server", "Interactive"):
        shutil.rmtree(os.path.join(results, "llama2-70b-99.9", scenario))
    from mlperf_llm.rounds import get_round
    from mlperf_llm.submission.precheck import precheck
    found = [(f.path.split(os.sep)[-1], f.message.split(" (")[0]) for f in precheck(report.submission_dir, get_round("6.1"))]
    assert found == [("llama2-70b-99", "v6.1 has no benchmark llama2-70b-99"),
                     ("llama2-70b-99.9", "closed division of v6.1 needs Server or Interactive")]
    assert precheck(report.submission_dir, get_round("6.0"))[0].message.startswith(
        "closed division of v6.0 needs Server or Interactive")
