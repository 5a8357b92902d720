"""The official submission checker of each round, run from the inference source on our trees."""
import os
import shutil

import pytest

from submission_fixtures import ROUNDS, build, inference_source
from mlperf_llm.submission.checker import format_report, run_checker

FULL_LENGTH = {"early_stopping", "min_duration", "offline_samples_per_query", "performance_sample_count",
               "result_valid"}


def source_or_skip(version):
    src, why = inference_source(version)
    if not src:
        print(why)
        pytest.skip(why)
    return src


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
