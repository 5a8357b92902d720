import json

import pytest
from tiny_tokenizer import make_tokenizer

from mlperf_llm.datasets import embedded
from mlperf_llm.datasets.schema import DatasetError, load_processed
from mlperf_llm.datasets.tokenizer import ModelTokenizer, llama2_prompt


@pytest.fixture(scope="module")
def samples():
    return embedded.load_samples()


@pytest.fixture(scope="module")
def tokdir(tmp_path_factory, samples):
    texts = [s.system_prompt + " " + s.question + " " + s.output for s in samples]
    return make_tokenizer(tmp_path_factory.mktemp("tok"), texts)


def test_source_has_a_varied_mix(samples):
    assert len(samples) >= 200
    origins = {s.origin for s in samples}
    assert {"summ", "expl", "qa", "reason", "task"} <= origins
    assert len({s.system_prompt for s in samples}) >= 8
    assert any(s.system_prompt == "" for s in samples)


def test_build_gives_processed_schema(tmp_path, tokdir, samples):
    meta = embedded.build_embedded(tokdir, tmp_path)
    df = load_processed(meta["pickle"], expect_rows=len(samples))
    tok = ModelTokenizer.from_folder(tokdir)
    row = df.iloc[0]
    assert row.input.startswith("<|im_start|>system\n" + samples[0].system_prompt + "<|im_end|>\n<|im_start|>user\n")
    assert row.input.endswith("<|im_end|>\n<|im_start|>assistant\n")
    assert row.tok_input[0] == tok.backend.token_to_id("<|im_start|>")  # template tokens, no extra <s>
    assert tok.decode(row.tok_output) == samples[0].output
    assert row.tok_output[0] == tok.backend.token_to_id("<s>")  # the answer is tokenizer(text): BOS added
    empty = df[df.system_prompt == ""].iloc[0]
    assert "Default system prompt" in empty.input  # the template's own default system message
    assert meta["prompt_format"] == "chat_template" and len(meta["tokenizer_sha256"]) == 64


def test_bad_source_lines_are_located(tmp_path):
    good = {"id": "qa.1", "origin": "qa", "system_prompt": "", "question": "Q?", "output": "A."}
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n")
    with pytest.raises(DatasetError, match=r"s.jsonl:2: duplicate id 'qa.1'"):
        embedded.load_samples(p)
    p.write_text(json.dumps({**good, "id": "x.1"}) + "\n")
    with pytest.raises(DatasetError, match="must start with its origin"):
        embedded.load_samples(p)
    p.write_text("{not json\n")
    with pytest.raises(DatasetError, match="s.jsonl:1: not a sample object"):
        embedded.load_samples(p)


def test_missing_template_is_a_clear_error(tmp_path, samples):
    folder = make_tokenizer(tmp_path / "t", ["hello world"], chat_template=None)
    with pytest.raises(DatasetError, match="has no chat template"):
        embedded.build_embedded(folder, tmp_path / "out")
    with pytest.raises(DatasetError, match="has no tokenizer.json"):
        ModelTokenizer.from_folder(tmp_path)


def test_llama2_prompt_format():
    assert llama2_prompt("S", "Q") == "<s>[INST] <<SYS>>\nS\n<</SYS>>\n\nQ [/INST]"
    assert llama2_prompt("", "Q") == "<s>[INST] Q [/INST]"
