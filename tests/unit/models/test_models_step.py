"""The model steps' shared hooks: the route and its arguments, the outputs read from the result,
and what a given folder is re-checked by."""
import json
import shlex

import pytest

from mlperf_llm.models import step
from mlperf_llm.models.errors import ModelError
from mlperf_llm.models.families import LLAMA2, LLAMA3
from mlperf_llm.sysinfo import envlock
from tinyckpt import write_checkpoint

PIN = "be673f326cab4cd22ccfef76109faf68e41aa5f1"


def env3(**kw):
    return {"CM_ML_MODEL_SIZE": "8b", "CM_ML_MODEL_PRECISION": "bf16", "CM_ML_MODEL_SOURCE": "hf",
            "CM_ML_MODEL_R2_URI": "https://r2.example/metadata/llama3-1-8b-instruct.uri", **kw}


def test_hub_route_fetches_the_pinned_commit_unless_told_otherwise():
    args, repo = step.route_args(env3(), LLAMA3, "/e/checkpoint")
    assert repo == "meta-llama/Llama-3.1-8B-Instruct"
    assert args == ["--repo-id", repo, "--revision", PIN, "--dest", "/e/checkpoint"]
    args, _ = step.route_args(env3(CM_ML_MODEL_REVISION="abc123"), LLAMA3, "/e/checkpoint")
    assert args[3] == "abc123"
    args, repo = step.route_args(env3(CM_ML_MODEL_REPO_ID="acme/Mine"), LLAMA3, "/e/checkpoint")
    assert (repo, args[3]) == ("acme/Mine", "main")


def test_r2_route_and_its_refusal():
    args, repo = step.route_args(env3(CM_ML_MODEL_SOURCE="r2"), LLAMA3, "/e/checkpoint")
    assert args == ["--r2-uri", "https://r2.example/metadata/llama3-1-8b-instruct.uri", "--dest", "/e/checkpoint"]
    assert repo == ""
    env2 = {"CM_ML_MODEL_SIZE": "70b", "CM_ML_MODEL_PRECISION": "gptq", "CM_ML_MODEL_SOURCE": "r2"}
    with pytest.raises(ModelError, match="_r2: MLCommons publishes only the 70B fp16 Llama-2 checkpoint"):
        step.route_args(env2, LLAMA2, "/e/checkpoint")


def test_local_route_checks_the_folder_exists(tmp_path):
    args, repo = step.route_args(env3(CM_ML_MODEL_CHECKPOINT=str(tmp_path)), LLAMA3, "/e/checkpoint")
    assert args == ["--checkpoint", str(tmp_path)] and repo == ""
    with pytest.raises(ModelError, match=r"--checkpoint=/no/such: no such folder; pass the folder that holds"):
        step.route_args(env3(CM_ML_MODEL_CHECKPOINT="/no/such"), LLAMA3, "/e/checkpoint")


def result(path, source):
    return {"path": str(path), "source": source, "reused": False,
            "report": {"quantization": "", "weight_bytes": 1234, "shards": ["a.safetensors"], "loaded_with": ""}}


def test_outputs_of_a_download_name_the_family_path_and_no_recheck():
    out = step.outputs(result("/e/checkpoint", f"hf:x/y@{PIN}"), {"CM_ML_MODEL_REPO_ID": "x/y"}, LLAMA3)
    assert out == {"CM_ML_MODEL_PATH": "/e/checkpoint", "CM_ML_MODEL_LLAMA3_PATH": "/e/checkpoint",
                   "CM_ML_MODEL_NAME": "x/y", "CM_ML_MODEL_SOURCE_REF": f"hf:x/y@{PIN}",
                   "CM_ML_MODEL_QUANTIZATION": "", "CM_ML_MODEL_WEIGHT_BYTES": "1234"}
    assert step.outputs(result("/e/checkpoint/llama-2-70b-chat-hf", "r2:u"), {}, LLAMA2)["CM_ML_MODEL_NAME"] == \
        "llama-2-70b-chat-hf"


def test_a_given_folder_is_rechecked_by_itself_and_each_of_its_files(tmp_path):
    root = write_checkpoint(tmp_path / "mine")
    (root / ".hidden").write_text("x")
    out = step.outputs(result(root, "local"), {"CM_ML_MODEL_CHECKPOINT": str(root)}, LLAMA2)
    named = [out.pop(f"{step.LOCAL_PREFIX}{n}") for n in range(len(out)) if f"{step.LOCAL_PREFIX}{n}" in out]
    assert not [k for k in out if k.startswith(step.LOCAL_PREFIX)]
    assert named[0] == str(root)
    assert named[1:] == sorted(str(p) for p in root.iterdir() if p.name != ".hidden")
    assert out["CM_ML_MODEL_LLAMA2_PATH"] == str(root)


def test_hooks_pick_the_family_by_the_scripts_alias(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = env3(CM_VENV_PYTHON="/venv/bin/python")
    assert step.preprocess({"env": env, "meta": {"alias": "get-ml-model-llama3"}}) == {"return": 0}
    assert shlex.split(env["CM_ML_MODEL_GET_ARGS"]) == [
        "--repo-id", "meta-llama/Llama-3.1-8B-Instruct", "--revision", PIN, "--dest",
        str(tmp_path / "checkpoint"), "--result-json", step.RESULT]
    r = step.postprocess({"env": env, "meta": {"alias": "get-ml-model-llama3"}})
    assert r["return"] == 1 and f"{tmp_path / step.RESULT} is missing" in r["error"]
    assert "read get-ml-model-llama3.log" in r["error"]
    (tmp_path / step.RESULT).write_text(json.dumps(result(tmp_path / "checkpoint", f"hf:x@{PIN}")))
    # the venv the model was fetched in, as envlock.read lists it: its lock written beside the model
    monkeypatch.setattr(envlock, "read", lambda python: [envlock.Locked("huggingface_hub", "2.4.0", "12" * 32)])
    assert step.postprocess({"env": env, "meta": {"alias": "get-ml-model-llama3"}}) == {"return": 0}
    assert env["CM_ML_MODEL_LLAMA3_PATH"] == str(tmp_path / "checkpoint")
    assert env[envlock.MODEL_LOCK_ENV] == str(tmp_path / envlock.MODEL_LOCK_FILE)
    assert envlock.parse_file(env[envlock.MODEL_LOCK_ENV]) == [envlock.Locked("huggingface_hub", "2.4.0", "12" * 32)]
    assert step.preprocess({"env": {}, "meta": {"alias": "get-ml-model-llama3"}})["error"].startswith(
        "CM_VENV_PYTHON is not set")
