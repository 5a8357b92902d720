"""Which compliance tests the one command runs (runapp.compliance_tests): the closed division the
benchmark's, the open division none unless --compliance=yes (cm4mlops and MLC skip them there, and
the checker asks for them in the closed division only), and what the run says about it."""
import pytest

from mlperf_llm import outcomes, runapp
from mlperf_llm.benchmarks import get_benchmark
from mlperf_llm.runapp import check_inputs, compliance_tests, summary

LLAMA2 = get_benchmark("llama2-70b-99")


def env(**kw):
    base = {"CM_MLPERF_MODEL": "llama2-70b-99", "CM_MLPERF_IMPLEMENTATION": "reference", "CM_MLPERF_BACKEND": "vllm",
            "CM_MLPERF_DEVICE": "cpu", "CM_MLPERF_SUBMISSION_DIVISION": "open",
            "CM_MLPERF_SUBMISSION_CATEGORY": "datacenter", "CM_MLPERF_EXECUTION_MODE": "test",
            "CM_MLPERF_LOADGEN_SCENARIOS": "Offline"}
    return dict(base, **kw)


@pytest.mark.parametrize("division,given,runs", [
    ("closed", None, True), ("closed", "yes", True), ("closed", "no", False),
    ("open", None, False), ("open", "yes", True), ("open", "on", True), ("open", "no", False)])
def test_the_division_decides_unless_compliance_is_given(division, given, runs):
    e = env(CM_MLPERF_SUBMISSION_DIVISION=division)
    if given is not None:
        e["CM_MLPERF_COMPLIANCE"] = given
    tests, why = compliance_tests(LLAMA2, e)
    assert tests == (("TEST06",) if runs else ())
    assert (why == "") is runs
    if not runs and given is None:
        assert "open-division run needs none" in why and "--compliance=yes runs them" in why
    if not runs and given == "no":
        assert why.endswith("not run: --compliance=no")


def test_a_benchmark_without_compliance_tests_runs_none_whatever_was_asked():
    tests, why = compliance_tests(get_benchmark("llama3.1-8b-edge"), env(CM_MLPERF_COMPLIANCE="yes"))
    assert tests == () and why == "llama3.1-8b-edge has no compliance tests"


def test_a_bad_value_and_a_valid_closed_run_without_them_are_refused():
    problems = check_inputs(env(CM_MLPERF_COMPLIANCE="ture"))
    assert any("--compliance='ture' is not a yes/no value" in p for p in problems), problems
    problems = check_inputs(env(CM_MLPERF_COMPLIANCE="no", CM_MLPERF_SUBMISSION_DIVISION="closed",
                                CM_MLPERF_EXECUTION_MODE="valid", CM_MLPERF_SUBMITTER="Org"))
    assert any(p.startswith("--compliance=no: a valid closed-division submission needs") for p in problems), problems
    assert not [p for p in check_inputs(env(CM_MLPERF_COMPLIANCE="no", CM_MLPERF_SUBMISSION_DIVISION="closed"))
                if "compliance" in p]


def test_settling_the_benchmark_sets_the_tests_and_says_why_none(monkeypatch):
    full = env(CM_MLPERF_RUN_COMPLIANCE="yes", CM_MLPERF_INFERENCE_VERSION="5.1")
    result = runapp.settle_for_benchmark(full, {})
    assert result["return"] == 0, result
    assert result["env"]["CM_MLPERF_COMPLIANCE_TESTS"] == ""
    assert "compliance tests (TEST06) not run: an open-division run" in result["note"]
    closed = runapp.settle_for_benchmark(dict(full, CM_MLPERF_SUBMISSION_DIVISION="closed"), {})
    assert closed["env"]["CM_MLPERF_COMPLIANCE_TESTS"] == "TEST06" and closed["env"]["CM_MLPERF_COMPLIANCE_NOT_RUN"] == ""
    assert "compliance" not in closed["note"]


def test_the_closing_screen_says_why_test06_did_not_run():
    why = compliance_tests(LLAMA2, env())[1]
    text = summary(env(CM_MLPERF_RUN_COMPLIANCE="yes", CM_MLPERF_COMPLIANCE_NOT_RUN=why), {})
    assert f"Compliance:\n  {why}" in text
    assert "run-mlperf-compliance-test06 reported none" not in text


def test_a_test_run_is_sized_to_the_host_unless_its_query_count_is_given():
    settled = lambda e, inputs: runapp.settle_for_benchmark(env(**e), inputs)["env"]   # noqa: E731
    assert settled({"CM_MLPERF_EXECUTION_MODE": "test"}, {})["CM_MLPERF_SIZE_TO_HOST"] == "yes"
    assert "CM_MLPERF_SIZE_TO_HOST" not in settled({"CM_MLPERF_EXECUTION_MODE": "test"}, {"test_query_count": "8"})
    assert "CM_MLPERF_SIZE_TO_HOST" not in settled({"CM_MLPERF_EXECUTION_MODE": "valid"}, {})


def test_gpt_oss_runs_its_own_compliance_tests_and_the_closing_screen_shows_them():
    tests, why = compliance_tests(get_benchmark("gpt-oss-120b"), env(CM_MLPERF_COMPLIANCE="yes"))
    assert tests == ("TEST07", "TEST09") and why == ""
    full = env(CM_MLPERF_RUN_COMPLIANCE="yes", CM_MLPERF_INFERENCE_VERSION="6.1", CM_MLPERF_MODEL="gpt-oss-120b")
    closed = runapp.settle_for_benchmark(dict(full, CM_MLPERF_SUBMISSION_DIVISION="closed"), {})
    assert closed["return"] == 0 and closed["env"]["CM_MLPERF_COMPLIANCE_TESTS"] == "TEST07,TEST09"
    opened = runapp.settle_for_benchmark(full, {})
    assert "compliance tests (TEST07, TEST09) not run: an open-division run needs none" in opened["note"]
    verdict = outcomes.ComplianceVerdict("TEST07", "Offline", "PASS", "/r/gpt-oss-120b/Offline/TEST07",
                                         ("Accuracy score: 66.7", "TEST PASS"))
    text = runapp.summary(dict(full, CM_MLPERF_COMPLIANCE_TESTS="TEST07,TEST09"),
                          {outcomes.COMPLIANCE: outcomes.to_state([verdict])})
    assert ("Compliance (TEST07, TEST09):\n  Offline     TEST07 PASS (/r/gpt-oss-120b/Offline/TEST07)\n"
            "      Accuracy score: 66.7\n      TEST PASS") in text
    assert "\nCompliance:\n" not in text          # no TEST06 part for a benchmark without TEST06


def test_a_scenario_the_benchmark_does_not_run_is_named_before_anything_runs():
    base = env(CM_MLPERF_MODEL="gpt-oss-120b", CM_MLPERF_INFERENCE_VERSION="6.1")
    refused = runapp.settle_for_benchmark(base, {"scenario": "Offline,SingleStream"})
    assert refused == {"return": 1, "error": "--scenario 'SingleStream': gpt-oss-120b runs Offline, Server, "
                                             "Interactive; fix: --scenario=Offline (or _all-scenarios)"}
    assert runapp.settle_for_benchmark(base, {"scenario": "Offline"})["return"] == 0
    assert runapp.settle_for_benchmark(base, {})["return"] == 0       # the default: the benchmark's own
