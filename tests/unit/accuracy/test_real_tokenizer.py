"""The golden answers through a real model tokenizer (the embedded model's, from CM_ML_MODEL_PATH):
encoded as the SUT logs them, scored by us and by the reference way, equal."""
import json
import os

import pytest

from mlperf_llm.accuracy.evaluate import evaluate, load_tokenizer
from mlperf_llm.accuracy.log import encode_ids

from test_accuracy_evaluate import reference_way


@pytest.mark.e2e
def test_real_tokenizer_round_trip(golden, tmp_path):
    model = os.environ.get("CM_ML_MODEL_PATH", "")
    if not (model and os.path.isfile(os.path.join(model, "tokenizer.json"))):
        pytest.skip("no model tokenizer: set CM_ML_MODEL_PATH to a Hugging Face model folder "
                    "(e.g. the converted SmolLM2 from get,ml-model,smollm2)")
    fixture_tok = load_tokenizer(golden["tokenizer"])
    real = load_tokenizer(model)
    entries = json.loads(open(golden["log"]).read())
    for e in entries:
        text = fixture_tok.decode(list(memoryview(bytes.fromhex(e["data"])).cast("i")), skip_special_tokens=True)
        ids = real.encode(text, add_special_tokens=False) + [real.eos_token_id]
        e.update(data=encode_ids(ids), token_data=encode_ids(ids[:1]), token_count=len(ids))
    log = tmp_path / "mlperf_log_accuracy.json"
    log.write_text(json.dumps(entries))
    case = dict(golden, log=str(log), tokenizer=model)
    ours = evaluate(str(log), golden["dataset"], model)
    assert ours.reference_dict() == reference_way(case)
    assert ours.gen_num == 48 and model in ours.tokenizer
