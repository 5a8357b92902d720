"""get-ml-model-deepseek-r1 through the engine, its real venv and huggingface_hub, against a loopback
hub (a fake: integration, not e2e; the real checkpoint is ~690 GB): a hub that has only another
revision (as when MLCommons storage served DeepSeek-R1-0528 in R1's place: mlcommons/inference#2593)
is refused with the reason and leaves nothing behind; the revision the reference pins is fetched."""
import os

from fakehub import FakeHub, FakeRepo
from mlperf_llm.benchmarks import BENCHMARKS
from mlperf_llm.models.families import DEEPSEEK_R1
from tinyckpt import checkpoint_files

REPO = "deepseek-ai/DeepSeek-R1"
PIN = DEEPSEEK_R1.pinned[REPO]


def test_another_revision_is_refused_and_the_pinned_one_is_fetched(runner, monkeypatch, cache_dir):
    assert PIN == BENCHMARKS["deepseek-r1"].model_revision and BENCHMARKS["deepseek-r1"].hf_model == REPO
    with FakeHub({REPO: FakeRepo(checkpoint_files(), commit="f" * 40)}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        r = runner.run("get,ml-model,deepseek-r1")
    assert r["return"] != 0
    text = r["error"] + runner.output
    assert PIN in text and REPO in text, text[-3000:]
    assert not [f for folder, _, files in os.walk(cache_dir) for f in files
                if f.endswith(".safetensors") and "deepseek" in folder], "a checkpoint of another revision was kept"

    with FakeHub({REPO: FakeRepo(checkpoint_files(), commit=PIN)}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        r = runner.run("get,ml-model,deepseek-r1")
        assert r["return"] == 0, r.get("error")
        assert f"/api/models/{REPO}/revision/{PIN}" in [q["path"] for q in hub.requests]   # nothing was cached
    env = r["new_env"]
    assert env["CM_ML_MODEL_SOURCE_REF"] == f"hf:{REPO}@{PIN}" and env["CM_ML_MODEL_PRECISION"] == "fp8"
    assert env["CM_ML_MODEL_DEEPSEEK_R1_PATH"] == env["CM_ML_MODEL_PATH"]
    assert sorted(os.listdir(env["CM_ML_MODEL_PATH"])) == sorted(checkpoint_files())
