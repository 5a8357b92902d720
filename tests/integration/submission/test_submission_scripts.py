"""generate-mlperf-inference-submission and run-mlperf-inference-submission-checker through the engine."""
import os
from pathlib import Path
import tarfile

import pytest

from cmengine.registry import Repo
from enginefixtures import Runner
from mlperf_llm import outcomes
from submission_fixtures import FIX, inference_source

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture
def runner(tmp_path):
    return Runner([Repo("cm4mlperf-llm", ROOT)], str(tmp_path / "cache"), include_project=True)


def test_generate_then_check(runner, tmp_path, capsys):
    out = tmp_path / "sub" / "mlperf_submission"
    r = runner.run("generate,mlperf,inference,submission,_r5.1,_closed", results_dir=os.path.join(FIX, "results-v5.1"),
                   sut_desc=os.path.join(FIX, "system.json"), submission_dir=str(out), submitter="cm4mlperf",
                   hw_name="cpu_2c", run_command="cm run script --tags=run-mlperf,inference,_full --quiet")
    assert r["return"] == 0, r.get("error")
    env = r["new_env"]
    assert env["CM_MLPERF_SUBMISSION_DIR"] == str(out)
    assert os.path.isfile(os.path.join(out, "closed", "cm4mlperf", "systems", "cpu_2c-reference-cpu-vllm.json"))
    assert env["CM_MLPERF_SUBMISSION_SUMMARY_HTML"].endswith("results/cpu_2c-reference-cpu-vllm/summary.html")
    with tarfile.open(env["CM_MLPERF_SUBMISSION_TARBALL"]) as t:
        assert "closed/cm4mlperf/documentation/calibration.md" in t.getnames()
    readme = open(os.path.join(out, "closed", "cm4mlperf", "measurements", "cpu_2c-reference-cpu-vllm",
                               "llama2-70b-99", "Server", "README.md")).read()
    assert "cm run script --tags=run-mlperf,inference,_full --quiet" in readme
    printed = capsys.readouterr().out
    assert "llama2-70b-99 Server:" in printed and "submission tree:" in printed
    sub = outcomes.from_state(r["new_state"], outcomes.SUBMISSION)      # the typed record, for the summary
    assert (sub.directory, sub.summary_html, sub.tarball) == (str(out), env["CM_MLPERF_SUBMISSION_SUMMARY_HTML"],
                                                              env["CM_MLPERF_SUBMISSION_TARBALL"])
    assert {(x.scenario, x.unit) for x in sub.results} >= {("Offline", "Tokens/s"), ("Server", "Tokens/s")}

    src, _ = inference_source("v5.1")
    r = runner.run("run,mlperf,inference,submission,checker,_r5.1", submission_dir=str(out),
                   submitter="cm4mlperf", src_path=src)
    assert r["return"] == 0, r.get("error")
    env = r["new_env"]
    assert env["CM_MLPERF_SUBMISSION_CHECKER_VERDICT"] == "pass-test-mode"
    assert "min_duration" in env["CM_MLPERF_SUBMISSION_CHECKER_FULL_LENGTH_CHECKS"].split(",")
    assert "Checks only a full-length run can pass (test mode), by name:" in capsys.readouterr().out
    assert os.path.isfile(env["CM_MLPERF_SUBMISSION_CHECKER_LOG"])
    verdict = outcomes.from_state(r["new_state"], outcomes.CHECKER)
    assert (verdict.round, verdict.verdict, verdict.log) == ("v5.1", "PASS-TEST-MODE", env["CM_MLPERF_SUBMISSION_CHECKER_LOG"])
    assert "min_duration" in verdict.full_length_checks and verdict.error_count == 0


def test_generate_without_results_says_what_to_pass(runner):
    r = runner.run("generate,mlperf,inference,submission", submitter="x", sut_desc=os.path.join(FIX, "system.json"))
    assert r["return"] != 0 and "--results_dir=DIR" in r["error"]


def test_checker_on_a_missing_tree(runner, tmp_path):
    src, _ = inference_source("v5.1")
    r = runner.run("run,mlperf,inference,submission,checker,_r5.1", submission_dir=str(tmp_path / "none"), src_path=src)
    assert r["return"] != 0 and "generate-mlperf-inference-submission" in r["error"]


def test_a_checker_without_a_tree_records_why_it_did_not_run(tmp_path):
    """Its caller (the main command runs it with continue_on_error) gets the NOT RUN verdict."""
    from enginefixtures import make_repo
    app = ({"tags": ["checker-caller"], "deps": [{"tags": "run,mlperf,inference,submission,checker", "continue_on_error": True}],
            "new_state_keys": ["mlperf_checker"]}, {})
    runner = Runner([Repo("cm4mlperf-llm", ROOT), make_repo(str(tmp_path / "repos"), {"checker-caller": app})],
                    str(tmp_path / "cache"), include_project=True)
    src, why = inference_source("v5.1")
    if not src:
        pytest.skip(why)
    r = runner.run("checker-caller", env={"CM_MLPERF_SUBMISSION_DIR": str(tmp_path / "none"), "CM_MLPERF_INFERENCE_SRC_PATH": src})
    assert r["return"] == 0, r.get("error")
    verdict = outcomes.from_state(r["new_state"], outcomes.CHECKER)
    assert verdict.verdict == "NOT RUN" and "does not exist" in verdict.reason


def test_the_checker_alone_takes_the_round_from_the_trees_benchmarks(tmp_path):
    """No round, no model: a tree of llama2-70b-99 (which v6.1 lacks) is planned with v6.0's checker,
    and the plan says why; a tree of llama2-70b-99.9 with the newest round's."""
    from cmengine.registry import Repo
    from enginefixtures import Runner
    root = str(Path(__file__).resolve().parents[3])
    for bench, round_tag in (("llama2-70b-99", "_r6.0"), ("llama2-70b-99.9", "_r6.1")):
        tree = tmp_path / bench / "tree"
        (tree / "closed" / "Acme" / "results" / "sys" / bench / "Offline").mkdir(parents=True)
        runner = Runner([Repo("cm4mlperf-llm", root)], str(tmp_path / "cache"), include_project=True)
        r = runner.plan("run,mlperf,inference,submission,checker", submission_dir=str(tree))
        assert r["return"] == 0, r.get("error")
        assert f"run-mlperf-inference-submission-checker {round_tag}" in runner.output.replace(",", " "), runner.output[-800:]
