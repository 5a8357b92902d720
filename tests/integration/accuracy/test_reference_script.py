"""Our numbers equal the reference evaluate-accuracy.py's, run as it is in a subprocess, on the golden log
(tests/fixtures/accuracy/reference_runner.py says what is provided to run it offline). The inference
source: CM_MLPERF_INFERENCE_SOURCE, else ../shared/mlcommons-inference/v5.1.1 beside the clone."""
import pytest

from mlperf_llm.accuracy.evaluate import evaluate

from reference_runner import SCRIPT, reference_script, run_reference


def test_reference_script_gives_our_numbers(golden, tmp_path):
    script = reference_script()
    if script is None:
        pytest.skip(f"reference {SCRIPT} not found: set CM_MLPERF_INFERENCE_SOURCE to an "
                    "mlcommons/inference checkout (v4.1 or later); ../shared/mlcommons-inference is not "
                    "beside this clone")
    reference, metric = run_reference(script, golden["log"], golden["dataset"], golden["tokenizer"], tmp_path)
    ours = evaluate(golden["log"], golden["dataset"], golden["tokenizer"]).reference_dict()
    print(f"reference ran with {metric}: {reference}")
    assert reference == ours
