"""get-ml-model-llama2 through the engine, its real venv and huggingface_hub, against a loopback hub
(a fake: integration, not e2e; the real hub needs a token and 130 GB)."""
import json
import os

import pytest

from fakehub import FakeHub, FakeRepo
from tinyckpt import checkpoint_files, write_checkpoint



@pytest.fixture
def fake_hub(monkeypatch):
    repos = {"neuralmagic/Llama-2-7b-chat-hf-FP8": FakeRepo(checkpoint_files()),
             "meta-llama/Llama-2-70b-chat-hf": FakeRepo(checkpoint_files(), gated=True)}
    with FakeHub(repos, tokens={"hf_granted"}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.delenv("HF_TOKEN", raising=False)
        yield hub


def test_7b_fp8_from_the_hub(runner, fake_hub, cache_dir):
    r = runner.run("get,ml-model,llama2,_7b,_fp8")
    assert r["return"] == 0, r.get("error")
    env = r["new_env"]
    assert env["CM_ML_MODEL_REPO_ID"] == "neuralmagic/Llama-2-7b-chat-hf-FP8"
    assert env["CM_ML_MODEL_SOURCE_REF"].startswith("hf:neuralmagic/Llama-2-7b-chat-hf-FP8@")
    path = env["CM_ML_MODEL_PATH"]
    assert sorted(os.listdir(path)) == sorted(checkpoint_files())
    assert int(env["CM_ML_MODEL_WEIGHT_BYTES"]) == sum(len(v) for k, v in checkpoint_files().items()
                                                        if k.endswith(".safetensors"))
    # cached: a second run does not ask the hub again
    n = len(fake_hub.requests)
    assert runner.run("get,ml-model,llama2,_7b,_fp8")["return"] == 0
    assert len(fake_hub.requests) == n


def test_gated_70b_without_then_with_token(runner, fake_hub, monkeypatch):
    r = runner.run("get,ml-model,llama2")
    assert r["return"] != 0
    text = r["error"] + runner.output
    assert f"request access at {fake_hub.url}/meta-llama/Llama-2-70b-chat-hf" in text and "HF_TOKEN=<token>" in text
    monkeypatch.setenv("HF_TOKEN", "hf_granted")
    r = runner.run("get,ml-model,llama2,_70b")
    assert r["return"] == 0, r.get("error")
    assert "hf_granted" not in runner.output and "hf_granted" not in json.dumps(r)
    for folder, _, files in os.walk(os.path.dirname(r["new_env"]["CM_ML_MODEL_PATH"])):
        for f in files:
            with open(os.path.join(folder, f), "rb") as fh:
                assert b"hf_granted" not in fh.read(), f


def test_local_checkpoint_and_unknown_variant(runner, tmp_path):
    local = write_checkpoint(tmp_path / "mine")
    r = runner.run("get,ml-model,llama2", checkpoint=str(local))
    assert r["return"] == 0, r.get("error")
    assert r["new_env"]["CM_ML_MODEL_PATH"] == str(local) and r["new_env"]["CM_ML_MODEL_SOURCE_REF"] == "local"
    broken = write_checkpoint(tmp_path / "broken")
    (broken / "model-00002-of-00002.safetensors").unlink()
    r = runner.run("get,ml-model,llama2", checkpoint=str(broken))
    assert r["return"] != 0 and "shards listed in model.safetensors.index.json are missing" in r["error"] + runner.output
    r = runner.run("get,ml-model,llama2,_7b,_gptq")
    assert r["return"] != 0 and "no known Llama-2 checkpoint for size '7b' with precision 'gptq'" in r["error"]
