"""get-ml-model-llama3 through the engine, its real venv and huggingface_hub, against a loopback hub
and a loopback R2 (fakes: integration, not e2e; the real hub needs a token and 16 GB)."""
import json
import os

import pytest

from fakehub import FakeHub, FakeRepo
from faker2 import StaticServer, r2_files
from mlperf_llm.models.families import LLAMA3
from tinyckpt import checkpoint_files, write_checkpoint

REPO = "meta-llama/Llama-3.1-8B-Instruct"
PIN = LLAMA3.pinned[REPO]


@pytest.fixture
def fake_hub(monkeypatch):
    with FakeHub({REPO: FakeRepo(checkpoint_files(), gated=True, commit=PIN)}, tokens={"hf_granted"}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.delenv("HF_TOKEN", raising=False)
        yield hub


def test_gated_hub_repo_without_then_with_token_at_the_pinned_commit(runner, fake_hub, monkeypatch):
    r = runner.run("get,ml-model,llama3")
    assert r["return"] != 0
    text = r["error"] + runner.output
    assert f"{REPO} is gated: request access at {fake_hub.url}/{REPO} (log in and accept the license)" in text
    assert "set HF_TOKEN=<token>" in text
    monkeypatch.setenv("HF_TOKEN", "hf_granted")
    r = runner.run("get,ml-model,llama3.1-8b")
    assert r["return"] == 0, r.get("error")
    env = r["new_env"]
    assert env["CM_ML_MODEL_REPO_ID"] == env["CM_ML_MODEL_NAME"] == REPO
    assert env["CM_ML_MODEL_SOURCE_REF"] == f"hf:{REPO}@{PIN}" and env["CM_ML_MODEL_PRECISION"] == "bf16"
    assert env["CM_ML_MODEL_LLAMA3_PATH"] == env["CM_ML_MODEL_PATH"]
    assert sorted(os.listdir(env["CM_ML_MODEL_PATH"])) == sorted(checkpoint_files())
    assert f"/api/models/{REPO}/revision/{PIN}" in [q["path"] for q in fake_hub.requests]
    assert "hf_granted" not in runner.output and "hf_granted" not in json.dumps(r)
    for folder, _, files in os.walk(os.path.dirname(env["CM_ML_MODEL_PATH"])):
        for f in files:
            with open(os.path.join(folder, f), "rb") as fh:
                assert b"hf_granted" not in fh.read(), f
    # cached: the hub is not asked again; another revision is another entry
    n = len(fake_hub.requests)
    assert runner.run("get,ml-model,llama3")["return"] == 0
    assert len(fake_hub.requests) == n
    r = runner.run("get,ml-model,llama3", revision="main")
    assert r["return"] == 0, r.get("error")
    assert f"/api/models/{REPO}/revision/main" in [q["path"] for q in fake_hub.requests[n:]]


def test_mlcommons_copy_through_r2(runner):
    with StaticServer({}) as s:
        s.files.update(r2_files(s.url, "llama3-1-8b-instruct", "Llama-3.1-8B-Instruct"))
        r = runner.run("get,ml-model,llama3,_r2", r2_uri=f"{s.url}/metadata/llama3-1-8b-instruct.uri")
    assert r["return"] == 0, r.get("error")
    env = r["new_env"]
    assert env["CM_ML_MODEL_PATH"].endswith("/checkpoint/Llama-3.1-8B-Instruct")
    assert env["CM_ML_MODEL_SOURCE_REF"] == f"r2:{s.url}/metadata/llama3-1-8b-instruct.uri"
    assert env["CM_ML_MODEL_NAME"] == "Llama-3.1-8B-Instruct"


def test_local_checkpoint_is_checked_again_when_its_files_change(runner, tmp_path):
    local = write_checkpoint(tmp_path / "mine")
    r = runner.run("get,ml-model,llama3", checkpoint=str(local))
    assert r["return"] == 0, r.get("error")
    assert r["new_env"]["CM_ML_MODEL_PATH"] == str(local) and r["new_env"]["CM_ML_MODEL_SOURCE_REF"] == "local"
    assert runner.run("get,ml-model,llama3", checkpoint=str(local))["return"] == 0
    assert "changed since entry" not in runner.output
    shard = local / "model-00002-of-00002.safetensors"
    shard.write_bytes(shard.read_bytes()[:-4])                 # truncated in place: same path, new size
    r = runner.run("get,ml-model,llama3", checkpoint=str(local))
    assert f"{shard} changed since entry" in runner.output
    assert r["return"] != 0 and "the file is truncated or damaged" in r["error"] + runner.output
