"""The record is accepted by the official checker of every round we support: the checker's findings
on a tree with the record are exactly its findings on the same tree without it.

Checkers come from ../shared/mlcommons-inference (next to every clone): v4.1, v5.0, v5.1.1 (v5.1)
and master-b66003e (v6.0, a package: python -m submission_checker.main), copied before running
(the checkers write next to themselves)."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from mlperf_llm.reproduce import record
from mlperf_llm.reproduce.record import RECORD_NAME
from mlperf_llm.submission.inputs import Metadata
from mlperf_llm.submission.tree import BuildRequest, build_submission

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SHARED = os.path.join(ROOT, "..", "shared", "mlcommons-inference")
FIX = os.path.join(ROOT, "tests", "fixtures", "submission")
SOURCES = {"v4.1": ("v4.1", "results-v4.1"), "v5.0": ("v5.0", "results-v5.0"),
           "v5.1": ("v5.1.1", "results-v5.1"), "v6.0": ("master-b66003e", "results-v5.1")}


def build(tmp_path, version, with_record):
    import json
    results = tmp_path / "results"
    shutil.copytree(os.path.join(FIX, SOURCES[version][1]), results)
    if with_record:
        from mlperf_llm.reproduce.record import Record
        record.write(Record(project={"name": "cm4mlperf-llm", "files_sha256": "f" * 64},
                            model={"sha256": "0" * 64}), str(results / RECORD_NAME))
    meta = json.load(open(os.path.join(FIX, "metadata.json")))
    meta.update(round=version, division="open")
    return build_submission(BuildRequest(str(results), os.path.join(FIX, "system.json"),
                                         Metadata.from_dict(meta), str(tmp_path / "mlperf_submission")))


def run_official(tmp_path, version, tree):
    folder, _ = SOURCES[version]
    src = os.path.join(SHARED, folder, "tools", "submission")
    if not os.path.isdir(src):
        pytest.skip(f"no official checker for {version} at {src} (../shared/mlcommons-inference/{folder})")
    tools = tmp_path / "tools"
    shutil.copytree(src, tools)
    csv = str(tmp_path / "summary.csv")
    if os.path.isdir(tools / "submission_checker"):
        cmd = [sys.executable, "-m", "submission_checker.main", "--input", tree, "--version", version, "--csv", csv]
    else:
        cmd = [sys.executable, "submission_checker.py", "--input", tree, "--version", version, "--csv", csv]
    p = subprocess.run(cmd, cwd=tools, capture_output=True, text=True, timeout=600)
    out = (p.stdout + p.stderr).replace(tree, "<tree>")
    findings = sorted({re.sub(r"^.*?(ERROR|WARNING)", r"\1", line).strip() for line in out.splitlines()
                       if "ERROR" in line or "WARNING" in line})
    return p.returncode, findings, out


@pytest.mark.parametrize("version", sorted(SOURCES))
def test_the_official_checker_accepts_the_record(tmp_path, version):
    base = build(tmp_path / "without", version, with_record=False)
    rc0, f0, _ = run_official(tmp_path / "without", version, base.submission_dir)
    mine = build(tmp_path / "with", version, with_record=True)
    found = record.find(mine.submission_dir)
    assert found and all(os.path.basename(os.path.dirname(p)) in ("Offline", "Server", "Interactive") for p in found)
    expected_parent = "results" if version == "v6.0" else "measurements"
    assert all(f"/{expected_parent}/" in p for p in found), found
    rc1, f1, out = run_official(tmp_path / "with", version, mine.submission_dir)
    print(out[-3000:])
    assert "Results " in out or "SUMMARY" in out or "Summary" in out, "the checker did not get to its summary"
    assert RECORD_NAME not in out, "the checker mentions the record"
    assert (rc1, f1) == (rc0, f0)
    # control: the checker does read the folder the record is in (a missing README.md is found)
    os.unlink(os.path.join(os.path.dirname(found[0]), "README.md"))
    shutil.rmtree(tmp_path / "with" / "tools")
    _, f2, _ = run_official(tmp_path / "with", version, mine.submission_dir)
    assert any("README.md" in f for f in set(f2) - set(f0)), f2
