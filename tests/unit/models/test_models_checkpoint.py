"""check_checkpoint on a tiny real checkpoint built from code, and on damaged copies of it."""
import json

import pytest

from mlperf_llm.models.checkpoint import check_checkpoint, safetensors_tensor_count
from mlperf_llm.models.errors import ModelError
from tinyckpt import checkpoint_files, write_checkpoint


def test_complete_checkpoint_passes_and_loads(tmp_path):
    root = write_checkpoint(tmp_path / "m")
    r = check_checkpoint(root)
    assert r.model_type == "llama" and r.architectures == ("LlamaForCausalLM",)
    assert r.shards == ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
    assert r.tensors == 4 and r.quantization == "" and r.tokenizer_files == ("tokenizer.json",)
    assert r.loaded_with.startswith("transformers ")
    assert r.weight_bytes == sum((root / s).stat().st_size for s in r.shards)


def test_missing_shard_is_named(tmp_path):
    root = write_checkpoint(tmp_path / "m")
    (root / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(ModelError, match=r"1 of 2 shards listed in model.safetensors.index.json are missing "
                                         r"\(model-00002-of-00002.safetensors\)"):
        check_checkpoint(root)


def test_truncated_shard_is_caught_from_its_header(tmp_path):
    root = write_checkpoint(tmp_path / "m")
    shard = root / "model-00001-of-00002.safetensors"
    shard.write_bytes(shard.read_bytes()[:-5])
    with pytest.raises(ModelError, match="truncated or damaged"):
        check_checkpoint(root)
    with pytest.raises(ModelError, match="too short"):
        (root / "x.safetensors").write_bytes(b"abc")
        safetensors_tensor_count(root / "x.safetensors")


def test_shard_from_another_revision(tmp_path):
    files = checkpoint_files()
    index = json.loads(files["model.safetensors.index.json"])
    index["weight_map"]["model.extra.weight"] = "model-00001-of-00002.safetensors"
    files["model.safetensors.index.json"] = json.dumps(index).encode()
    with pytest.raises(ModelError, match="index names 5 tensors, the shards hold 4"):
        check_checkpoint(write_checkpoint(tmp_path / "m", files))


@pytest.mark.parametrize("drop,message", [
    ("config.json", "no config.json"),
    ("tokenizer.json", r"no tokenizer \(tokenizer.json or tokenizer.model\)"),
])
def test_missing_files(tmp_path, drop, message):
    files = checkpoint_files()
    del files[drop]
    with pytest.raises(ModelError, match=message):
        check_checkpoint(write_checkpoint(tmp_path / "m", files))


def test_bad_json_and_no_weights(tmp_path):
    files = checkpoint_files()
    files["config.json"] = b"{not json"
    with pytest.raises(ModelError, match="config.json: not valid JSON"):
        check_checkpoint(write_checkpoint(tmp_path / "a", files))
    files = {k: v for k, v in checkpoint_files().items() if not k.startswith("model")}
    with pytest.raises(ModelError, match="no weights"):
        check_checkpoint(write_checkpoint(tmp_path / "b", files))
    with pytest.raises(ModelError, match="does not exist"):
        check_checkpoint(tmp_path / "nothing")


def test_single_file_checkpoint_and_quantization(tmp_path):
    files = checkpoint_files(shards=1)
    del files["model.safetensors.index.json"]
    files["model.safetensors"] = files.pop("model-00001-of-00001.safetensors")
    cfg = json.loads(files["config.json"])
    cfg["quantization_config"] = {"quant_method": "compressed-tensors"}
    files["config.json"] = json.dumps(cfg).encode()
    r = check_checkpoint(write_checkpoint(tmp_path / "m", files), load=False)
    assert r.shards == ("model.safetensors",) and r.tensors == 4
    assert r.quantization == "compressed-tensors" and r.loaded_with == ""
