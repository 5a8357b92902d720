"""A full-length (valid-mode) run of the toy SUT: the tree passes every check of the official v5.1 checker.

The fixture's performance runs lasted over 600 s each (Offline 24576 samples, Server 270336+ queries)
on LoadGen 5.1.2; its accuracy runs cover all 24576 samples (their logs are stored xz-compressed).
"""
import lzma
import os
import shutil

import pytest

from submission_fixtures import FIX, metadata
from mlperf_llm.submission.checker import format_report, run_checker
from mlperf_llm.submission.rules import find_violations
from mlperf_llm.submission.tree import BuildRequest, build_submission
from test_submission_official_checker import source_or_skip

VALID = os.path.join(FIX, "results-v5.1-valid")


def expand(dst):
    shutil.copytree(VALID, dst)
    for dirpath, _, files in os.walk(dst):
        for name in files:
            if name.endswith(".xz"):
                path = os.path.join(dirpath, name)
                with lzma.open(path) as src, open(path[:-3], "wb") as out:
                    shutil.copyfileobj(src, out)
                os.remove(path)
    return str(dst)


@pytest.mark.parametrize("division", ["closed", "open"])
def test_valid_run_passes_the_official_checker(tmp_path, division):
    src = source_or_skip("v5.1")
    results = expand(tmp_path / "results")
    report = build_submission(BuildRequest(results, os.path.join(FIX, "system.json"),
                                           metadata("v5.1", division, execution_mode="valid"),
                                           str(tmp_path / "mlperf_submission")))
    assert all(r.valid for r in report.results)
    assert find_violations(report.submission_dir) == []
    r = run_checker(report.submission_dir, "v5.1", "cm4mlperf", src, workdir=str(tmp_path / "chk"))
    text = format_report(r)
    print(text)
    assert r.mode == "valid"
    assert r.returncode == 0, text
    assert "SUMMARY: submission looks OK" in r.summary_lines()
    assert r.full_length_checks == [] and r.errors == [] and "Verdict: PASS" in text
    readme = open(os.path.join(report.submission_dir, "README.md")).read()
    assert "| VALID |" in readme and "INVALID" not in readme
