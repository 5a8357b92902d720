"""The round and the benchmark of a run, planned through the engine on the project's real scripts
(planning only: nothing runs): the round's default from --model, the benchmark's default from the
round, the refusal of a model the round lacks or this tool does not know, _r<round> on every
round-aware step."""
import os
import re

import pytest

from cmengine.registry import Repo
from enginefixtures import Runner

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MAIN = "run-mlperf,inference,_full,_embedded"


@pytest.fixture
def runner(tmp_path):
    return Runner([Repo("cm4mlperf-llm", ROOT)], str(tmp_path / "cache"), include_project=True)


@pytest.mark.parametrize("model,round_name", [("llama2-70b-99", "6.0"), ("llama2-70b-99.9", "6.1")])
def test_no_round_plans_the_newest_round_that_has_the_model(runner, capsys, model, round_name):
    r = runner.plan(MAIN, model=model, division="open")
    assert r["return"] == 0, r.get("error")
    err = capsys.readouterr().err
    assert f"round v{round_name} (_r{round_name}): no round given, so the newest round that has {model}" in err
    text = runner.output
    for step in ("run-mlperf-inference-app", "get-mlperf-inference-src", "get-mlperf-inference-loadgen",
                 "app-mlperf-inference", "generate-mlperf-inference-submission",
                 "run-mlperf-inference-submission-checker"):
        # a plan line: "#N step _variations [key] ..." or "#N [phase] step ..." (docs/engine.md)
        assert any(re.match(rf"#\d+\s+(\[\w+\] )?{step} ", line.strip()) and f"_r{round_name}" in line
                   for line in text.splitlines()), (step, text)


def test_a_model_the_round_lacks_is_refused_before_anything_runs(runner, tmp_path):
    r = runner.run(MAIN + ",_r6.1", model="llama2-70b-99", division="open",
                   results_dir=str(tmp_path / "results"))
    assert r["return"] == 2
    assert r["error"].startswith("run-mlperf-inference-app: round v6.1 has no llama2-70b-99")
    assert "(its benchmarks: llama2-70b-99.9, llama3.1-8b, llama3.1-8b-edge, gpt-oss-120b, deepseek-r1); " \
        "fix: choose one of llama2-70b-99.9, llama3.1-8b, llama3.1-8b-edge, gpt-oss-120b, deepseek-r1 with _r6.1" in r["error"]
    assert "_r6.0" in r["error"]
    assert "Traceback" not in r["error"] and not (tmp_path / "results").exists()


def test_no_model_plans_the_rounds_first_benchmark_and_says_why(runner, capsys):
    r = runner.plan(MAIN, division="open")
    assert r["return"] == 0, r.get("error")
    err = capsys.readouterr().err
    assert ("benchmark llama2-70b-99.9: no --model given, so the first of round v6.1's benchmarks "
            "(llama2-70b-99.9, llama3.1-8b, llama3.1-8b-edge, gpt-oss-120b, deepseek-r1) that this tool runs") in err
    assert "run-mlperf-inference-app _embedded,_full,_model.llama2-70b-99.9,_r6.1" in runner.output
    r = runner.plan(MAIN + ",_r5.0", division="open")
    assert r["return"] == 0 and "_model.llama2-70b-99,_r5.0" in runner.output


def test_the_edge_benchmark_plans_its_own_data_scenarios_and_category_and_no_test06(runner):
    r = runner.plan(MAIN, model="llama3.1-8b-edge", division="open")
    assert r["return"] == 0, r.get("error")
    text = runner.output
    assert "get-dataset-cnndm _edge,_embedded" in text and "get-preprocessed-dataset-openorca" not in text
    assert "not planned under run-mlperf-inference-app: run,mlperf,compliance,test06" in text
    root = runner.session().plan({"action": "run", "tags": MAIN, "model": "llama3.1-8b-edge", "division": "open",
                                  "quiet": True}).root
    assert root.env["CM_MLPERF_LOADGEN_SCENARIO"] == "Offline,SingleStream"
    assert root.env["CM_MLPERF_SUBMISSION_CATEGORY"] == "edge"
    r = runner.plan(MAIN, model="llama3.1-8b", division="open", scenario="Offline")
    assert r["return"] == 0 and "get-dataset-cnndm _embedded,_validation" in runner.output
    # open division: no compliance tests unless asked (runapp.compliance_tests), and the plan says why
    assert "not planned under run-mlperf-inference-app: run,mlperf,compliance,test06" in runner.output
    root = runner.session().plan({"action": "run", "tags": MAIN, "model": "llama3.1-8b", "division": "open",
                                  "scenario": "Offline", "quiet": True}).root
    assert root.env["CM_MLPERF_COMPLIANCE_NOT_RUN"].startswith("compliance tests (TEST06) not run: an open-division")
    r = runner.plan(MAIN, model="llama3.1-8b", division="open", scenario="Offline", compliance="yes")
    assert r["return"] == 0 and "get-dataset-cnndm _embedded,_validation" in runner.output
    root = runner.session().plan({"action": "run", "tags": MAIN, "model": "llama3.1-8b", "division": "open",
                                  "scenario": "Offline", "quiet": True}).root
    assert root.env["CM_MLPERF_LOADGEN_SCENARIO"] == "Offline"          # as given
    assert "run-mlperf-compliance-test06" in runner.output


def test_a_category_that_is_not_the_benchmarks_is_refused(runner, tmp_path):
    r = runner.run(MAIN, model="llama3.1-8b-edge", category="datacenter", division="open",
                   results_dir=str(tmp_path / "results"))
    assert r["return"] == 2 and ("--category=datacenter: llama3.1-8b-edge is a edge benchmark; fix: --category=edge, "
                                 "or a datacenter benchmark of round v6.1: llama2-70b-99.9, llama3.1-8b") in r["error"]


@pytest.mark.parametrize("model, words", [
    ("llama2-70b", "--model=llama2-70b is not a benchmark this tool knows; benchmarks: llama2-70b-99, "
                   "llama2-70b-99.9, llama3.1-8b, llama3.1-8b-edge"),
    ("llama3.1-8b-99.9", "--model=llama3.1-8b-99.9 is not a benchmark this tool knows; benchmarks: "),
])
def test_a_model_this_tool_does_not_run_is_refused_with_the_benchmarks(runner, tmp_path, model, words):
    r = runner.run(MAIN, model=model, division="open", results_dir=str(tmp_path / "results"))
    assert r["return"] == 2 and words in r["error"], r["error"]
    assert "Traceback" not in r["error"] and not (tmp_path / "results").exists()


def test_a_round_given_is_kept(runner):
    r = runner.plan(MAIN + ",_r5.1", model="llama2-70b-99", division="open")
    assert r["return"] == 0 and "Plan for 'run-mlperf-inference-app _embedded,_full,_r5.1'" in runner.output
    assert "app-mlperf-inference _r5.1,_vllm" in runner.output


@pytest.mark.parametrize("division, refused", [
    (None, None), ("open", None),
    ("opne", "--division=opne is not one of open, closed (did you mean open?)"),
    ("closed", "--division=closed cannot be used with _embedded")])
def test_the_embedded_runs_division_is_open_unless_given_and_a_given_one_is_checked(runner, capsys, division,
                                                                                  refused):
    """_embedded makes the run open-division by default; a --division typed is checked, not
    overwritten (the variation's env set `open` over it: `opne` and `closed` ran as open, unsaid)."""
    r = runner.plan(MAIN, model="llama2-70b-99.9", **({"division": division} if division else {}))
    if refused is None:
        assert r["return"] == 0, r.get("error")
        assert "TEST06) not run: an open-division run needs none" in capsys.readouterr().err
    else:
        assert r["return"] == 2 and refused in r["error"], r.get("error")
