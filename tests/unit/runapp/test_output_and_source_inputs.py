"""The one command's folders and inference source, checked before anything runs (runapp.check_inputs):
a results or submission folder that is a file or cannot be written, and an --inference_src that is
no mlcommons/inference checkout, each named with the reason and the fix. They failed after vLLM had
started (a raw NotADirectoryError or OSError from app-mlperf-inference) or, for the source, were
reported by get-mlperf-inference-src as --src_path, an input the user never typed, and the run went on."""
import os

import pytest

from mlperf_llm import runapp
from mlperf_llm.runapp import check_inputs, output_folder_problem


def env(tmp_path, **kw):
    base = {"CM_MLPERF_MODEL": "llama2-70b-99", "CM_MLPERF_IMPLEMENTATION": "reference", "CM_MLPERF_BACKEND": "vllm",
            "CM_MLPERF_DEVICE": "cpu", "CM_MLPERF_SUBMISSION_DIVISION": "open",
            "CM_MLPERF_SUBMISSION_CATEGORY": "datacenter", "CM_MLPERF_EXECUTION_MODE": "test",
            "CM_MLPERF_LOADGEN_SCENARIOS": "Offline", "CM_MLPERF_GENERATE_SUBMISSION": "yes",
            "CM_MLPERF_RESULTS_DIR": str(tmp_path / "mlperf_results"),
            "CM_MLPERF_SUBMISSION_DIR": str(tmp_path / "mlperf_submission")}
    return dict(base, **kw)


def test_the_default_folders_and_new_nested_ones_pass(tmp_path):
    assert check_inputs(env(tmp_path)) == []
    assert check_inputs(env(tmp_path, CM_MLPERF_RESULTS_DIR=str(tmp_path / "a" / "b" / "res"))) == []


@pytest.mark.parametrize("flag, key", [("--results_dir", "CM_MLPERF_RESULTS_DIR"),
                                       ("--submission_dir", "CM_MLPERF_SUBMISSION_DIR")])
def test_a_folder_that_is_a_file_or_under_one_is_named(tmp_path, flag, key):
    (tmp_path / "afile").write_text("x")
    for path in (tmp_path / "afile", tmp_path / "afile" / "below"):
        problems = check_inputs(env(tmp_path, **{key: str(path)}))
        assert len(problems) == 1 and problems[0].startswith(f"{flag}={path}")
        assert "is a file, not a folder" in problems[0] and "give a folder" in problems[0]


def test_a_folder_that_cannot_be_written_is_named_with_the_folder_asked(tmp_path, monkeypatch):
    """As root a mode does not stop a write, a read-only file system does; what is asked is the
    nearest folder that exists (os.access, which reports a read-only mount as not writable)."""
    ro = tmp_path / "ro"
    ro.mkdir()
    asked = []

    def access(path, mode):
        asked.append(str(path))
        return str(path) != str(ro)
    monkeypatch.setattr(runapp.os, "access", access)
    problems = check_inputs(env(tmp_path, CM_MLPERF_RESULTS_DIR=str(ro / "new" / "results")))
    assert problems == [f"--results_dir={ro}/new/results: {ro} cannot be written here (a read-only file "
                        "system, or its permissions); give a folder you can write to"]
    assert str(ro) in asked


def test_the_submission_is_made_beside_its_folder_so_its_parent_is_asked(tmp_path, monkeypatch):
    sub = tmp_path / "sub"
    sub.mkdir()
    monkeypatch.setattr(runapp.os, "access", lambda path, mode: str(path) != str(tmp_path))
    assert output_folder_problem("--submission_dir", str(sub), beside=True).startswith(
        f"--submission_dir={sub}: {tmp_path} cannot be written")
    assert output_folder_problem("--results_dir", str(sub)) == ""


def test_no_submission_asked_no_submission_folder_checked(tmp_path):
    (tmp_path / "afile").write_text("x")
    assert check_inputs(env(tmp_path, CM_MLPERF_GENERATE_SUBMISSION="no",
                            CM_MLPERF_SUBMISSION_DIR=str(tmp_path / "afile"))) == []


def test_an_inference_src_that_is_no_checkout_is_named_as_typed(tmp_path):
    notinf = tmp_path / "notinf"
    notinf.mkdir()
    (notinf / "README.md").write_text("x")
    problems = check_inputs(env(tmp_path, CM_MLPERF_INFERENCE_SRC_PATH=str(notinf)))
    assert len(problems) == 1 and problems[0].startswith(f"--inference_src={notinf} is not an mlcommons/inference checkout")
    assert "loadgen" in problems[0] and "give a checkout of mlcommons/inference" in problems[0]
    assert check_inputs(env(tmp_path, CM_MLPERF_INFERENCE_SRC_PATH=str(tmp_path / "nothing")))[0].startswith(
        f"--inference_src={tmp_path}/nothing: no such folder")
    (notinf / "loadgen").mkdir()
    os.makedirs(notinf / "tools" / "submission")
    (notinf / "tools" / "submission" / "submission_checker.py").write_text("")
    assert check_inputs(env(tmp_path, CM_MLPERF_INFERENCE_SRC_PATH=str(notinf))) == []


@pytest.mark.parametrize("key, flag, value", [
    ("CM_MLPERF_SEARCH_BUDGET", "--search_budget", "0"), ("CM_MLPERF_SEARCH_BUDGET", "--search_budget", "abc"),
    ("CM_MLPERF_LOADGEN_INTERACTIVE_TARGET_QPS", "--interactive_target_qps", "-2")])
def test_a_search_budget_or_interactive_target_that_is_no_positive_number_is_named(tmp_path, key, flag, value):
    """They passed --dry-run: --search_budget=0 ran a 10-minute search (0 read as 'not given'),
    'abc' failed after vLLM had started naming CM_MLPERF_SEARCH_BUDGET, a negative Interactive
    target the same."""
    assert check_inputs(env(tmp_path, **{key: value})) == [f"{flag}={value} must be a positive number"]
