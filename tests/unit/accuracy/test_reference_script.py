"""Our numbers equal the reference evaluate-accuracy.py's on the golden log (accuracy_reference_runner.py
says what is provided to run it offline). Needs the inference source: CM_MLPERF_INFERENCE_SOURCE."""
import pytest

from mlperf_llm.accuracy.evaluate import evaluate

from accuracy_reference_runner import SCRIPT, reference_script, run_reference


@pytest.mark.e2e
def test_reference_script_gives_our_numbers(golden, tmp_path):
    script = reference_script()
    if script is None:
        pytest.skip(f"reference {SCRIPT} not found: set CM_MLPERF_INFERENCE_SOURCE to an "
                    "mlcommons/inference checkout (v4.1 or later)")
    reference, metric = run_reference(script, golden["log"], golden["dataset"], golden["tokenizer"], tmp_path)
    ours = evaluate(golden["log"], golden["dataset"], golden["tokenizer"]).reference_dict()
    print(f"reference ran with {metric}: {reference}")
    assert reference == ours
