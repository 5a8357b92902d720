"""The golden answers through a real model tokenizer (the embedded SmolLM2's, from the engine's
get,ml-model,smollm2 step): encoded as the SUT logs them, scored by us and by the reference way,
equal."""
import json
import sys
from pathlib import Path

import pytest

from mlperf_llm.accuracy.evaluate import evaluate, load_tokenizer
from mlperf_llm.accuracy.log import encode_ids

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "accuracy"))
from golden_fixture import golden  # noqa: E402,F401  (the shared `golden` fixture)
from reference_way import reference_way  # noqa: E402

pytestmark = pytest.mark.e2e


def test_real_tokenizer_round_trip(golden, embedded_model_path, tmp_path):
    model = str(embedded_model_path)
    assert (embedded_model_path / "tokenizer.json").is_file(), f"{model} has no tokenizer.json"
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
