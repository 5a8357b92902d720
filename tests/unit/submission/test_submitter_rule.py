"""Who a tree is named after when --submitter is not given, and how the one command says so before
anything runs."""
import pytest

from mlperf_llm import runapp
from mlperf_llm.submission.errors import SubmissionError
from mlperf_llm.submission.inputs import PLACEHOLDER_SUBMITTER, placeholder_note, resolve_submitter

APP = {"CM_MLPERF_MODEL": "llama2-70b-99", "CM_MLPERF_IMPLEMENTATION": "reference", "CM_MLPERF_BACKEND": "vllm",
       "CM_MLPERF_DEVICE": "cpu", "CM_MLPERF_SUBMISSION_DIVISION": "open", "CM_MLPERF_SUBMISSION_CATEGORY": "datacenter",
       "CM_MLPERF_EXECUTION_MODE": "test", "CM_MLPERF_GENERATE_SUBMISSION": "yes"}


def test_a_given_submitter_is_kept_whatever_the_run():
    assert resolve_submitter("Acme", "closed", "valid") == "Acme"
    assert placeholder_note("Acme") == ""


def test_an_open_test_run_gets_the_placeholder_and_its_note():
    assert resolve_submitter("", "open", "test") == PLACEHOLDER_SUBMITTER
    assert placeholder_note(PLACEHOLDER_SUBMITTER).startswith(f"submitter not given: {PLACEHOLDER_SUBMITTER} is a "
                                                              "placeholder")


@pytest.mark.parametrize("division,mode", [("closed", "test"), ("open", "valid")])
def test_a_closed_or_valid_run_without_submitter_is_refused(division, mode):
    with pytest.raises(SubmissionError, match="pass --submitter=ORG"):
        resolve_submitter(None, division, mode)


def test_the_one_command_refuses_a_closed_submission_without_submitter_before_anything_runs():
    problems = runapp.check_inputs({**APP, "CM_MLPERF_SUBMISSION_DIVISION": "closed"})
    assert len(problems) == 1 and problems[0].startswith("--submitter: is not given; a test-mode run in the closed division")
    assert runapp.check_inputs({**APP, "CM_MLPERF_SUBMISSION_DIVISION": "closed", "CM_MLPERF_SUBMITTER": "Acme"}) == []
    # no submission generated: no submitter needed
    assert runapp.check_inputs({**APP, "CM_MLPERF_EXECUTION_MODE": "valid", "CM_MLPERF_GENERATE_SUBMISSION": "no"}) == []


def test_the_one_command_says_at_the_start_that_an_open_test_tree_gets_the_placeholder():
    assert runapp.check_inputs(APP) == []
    assert runapp.submitter_notice(APP) == "note: " + placeholder_note(PLACEHOLDER_SUBMITTER)
    assert runapp.submitter_notice({**APP, "CM_MLPERF_SUBMITTER": "Acme"}) == ""
    assert runapp.submitter_notice({**APP, "CM_MLPERF_GENERATE_SUBMISSION": "no"}) == ""


def test_a_short_test06_is_refused_before_anything_runs_in_a_valid_run():
    valid = {**APP, "CM_MLPERF_EXECUTION_MODE": "valid", "CM_MLPERF_GENERATE_SUBMISSION": "no"}
    (problem,) = runapp.check_inputs({**valid, "CM_MLPERF_TEST06_QUERY_COUNT": "4"})
    assert "--test06_query_count=4" in problem and "for test runs only" in problem
    assert runapp.check_inputs({**APP, "CM_MLPERF_TEST06_QUERY_COUNT": "4"}) == []
