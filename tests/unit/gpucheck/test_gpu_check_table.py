"""benchmarks/gpu_check.py: what the node lacks, and the table of what ran there."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import gpu_check  # noqa: E402

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.gpu.test_gpu_node" name="test_detect" time="1.25"/>
<testcase classname="tests.gpu.test_gpu_node" name="test_plan" time="0.01">
  <skipped type="pytest.skip" message="no CUDA device: torch 2.13.0+cpu sees none">x</skipped></testcase>
<testcase classname="tests.gpu.test_gpu_node" name="test_backend" time="3.0">
  <failure message="AssertionError: INVALID&#10;second line">tb</failure></testcase>
</testsuite></testsuites>"""


def test_each_test_is_a_row_with_its_result_and_why(tmp_path, capsys):
    (tmp_path / "junit.xml").write_text(JUNIT)
    assert gpu_check.rows(tmp_path / "junit.xml") == [
        ("test_detect", "passed", "1.2 s"),
        ("test_plan", "not run", "no CUDA device: torch 2.13.0+cpu sees none"),
        ("test_backend", "FAILED", "AssertionError: INVALID")]
    assert gpu_check.table(tmp_path / "junit.xml") == 1
    assert "test_plan" in capsys.readouterr().out


def test_nothing_ran_is_exit_2_and_all_passed_is_0(tmp_path):
    skipped = JUNIT.split('<testcase classname="tests.gpu.test_gpu_node" name="test_backend"')[0] + "</testsuite></testsuites>"
    (tmp_path / "j.xml").write_text(skipped.replace('<testcase classname="tests.gpu.test_gpu_node" name="test_detect" time="1.25"/>', ""))
    assert gpu_check.table(tmp_path / "j.xml") == 2
    (tmp_path / "p.xml").write_text(skipped.replace("<skipped", "<properties").replace("</skipped>", "</properties>"))
    assert gpu_check.table(tmp_path / "p.xml") == 0
    assert gpu_check.table(tmp_path / "none.xml") == 2


def test_only_what_this_python_lacks_is_installed():
    assert "pytest" not in gpu_check.missing()           # the test runs under pytest
    assert set(gpu_check.missing()) <= set(gpu_check.NEEDED)
