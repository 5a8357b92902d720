"""Our numbers equal the reference evaluate-accuracy.py's on the golden log (accuracy_reference_runner.py
says what is provided to run it offline). The reference is v5.1.1's, from ../shared/mlcommons-inference."""
import pytest

from mlperf_llm.accuracy.evaluate import evaluate

from reference_runner import SCRIPT, reference_script, run_reference


def test_reference_script_gives_our_numbers(golden, tmp_path):
    script = reference_script()
    if script is None:
        pytest.fail(f"reference {SCRIPT} not found in ../shared/mlcommons-inference (see its README)")
    reference, metric = run_reference(script, golden["log"], golden["dataset"], golden["tokenizer"], tmp_path)
    ours = evaluate(golden["log"], golden["dataset"], golden["tokenizer"]).reference_dict()
    print(f"reference ran with {metric}: {reference}")
    assert reference == ours
