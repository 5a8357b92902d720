"""The model steps' hooks (get-ml-model-llama2, get-ml-model-llama3, get-ml-model-gpt-oss, get-ml-model-deepseek-r1), which differ only in
their family (families.py), found by the script's alias.

preprocess picks the route and hands run.sh its arguments (`CM_ML_MODEL_GET_ARGS` for
`python -m mlperf_llm.models.hf_hub`); postprocess reads the result file (which never holds a
token) into the outputs. For `--checkpoint=DIR` it also names the folder and its files in
`CM_TMP_ML_MODEL_LOCAL_<n>`, which the steps declare in `cache_recheck_env`: a folder whose
files were replaced, added or removed since the entry was cached is checked again.
"""
from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from .environment import write_lock
from .errors import ModelError
from .families import ModelFamily, family_of

RESULT = "model-result.json"
LOCAL_PREFIX = "CM_TMP_ML_MODEL_LOCAL_"


def route_args(env: dict, family: ModelFamily, dest: str) -> tuple[list[str], str]:
    """(the hf_hub command line, the hub repository or "") for the route env selects."""
    checkpoint = env.get("CM_ML_MODEL_CHECKPOINT", "")
    if checkpoint:
        if not os.path.isdir(checkpoint):
            raise ModelError(f"--checkpoint={checkpoint}: no such folder; pass the folder that holds "
                             "config.json, the weights and the tokenizer")
        return ["--checkpoint", os.path.abspath(checkpoint)], env.get("CM_ML_MODEL_REPO_ID", "")
    size, precision = env["CM_ML_MODEL_SIZE"], env["CM_ML_MODEL_PRECISION"]
    if env.get("CM_ML_MODEL_SOURCE") == "r2":
        family.check_r2(size, precision)
        return ["--r2-uri", env["CM_ML_MODEL_R2_URI"], "--dest", dest], env.get("CM_ML_MODEL_REPO_ID", "")
    repo = env.get("CM_ML_MODEL_REPO_ID") or family.repo(size, precision)
    revision = family.revision(repo, env.get("CM_ML_MODEL_REVISION", ""))
    return ["--repo-id", repo, "--revision", revision, "--dest", dest], repo


def local_files(folder: str) -> list[str]:
    """What a given folder's identity is checked by on reuse: the folder itself (its mtime moves
    when a file is added, removed or renamed in it) and each file in it (size and mtime)."""
    root = Path(folder)
    return [str(root)] + sorted(str(p) for p in root.iterdir() if p.is_file() and not p.name.startswith("."))


def read_result(path: str, family: ModelFamily) -> dict:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise ModelError(f"{os.path.abspath(path)} is missing or unreadable ({e}); read {family.step}.log") from None


def outputs(res: dict, env: dict, family: ModelFamily) -> dict[str, str]:
    """The step's env outputs from hf_hub's result (and the recheck names for a given folder)."""
    report, path = res["report"], res["path"]
    out = {"CM_ML_MODEL_PATH": path, family.path_key: path,
           "CM_ML_MODEL_NAME": env.get("CM_ML_MODEL_REPO_ID") or os.path.basename(path.rstrip("/")),
           "CM_ML_MODEL_SOURCE_REF": res["source"], "CM_ML_MODEL_QUANTIZATION": report["quantization"],
           "CM_ML_MODEL_WEIGHT_BYTES": str(report["weight_bytes"])}
    if env.get("CM_ML_MODEL_CHECKPOINT"):
        out.update((f"{LOCAL_PREFIX}{n}", p) for n, p in enumerate(local_files(path)))
    return out


# --- the hooks (customize.py of each step imports these two) ------------------------------------

def preprocess(i):
    env = i["env"]
    if not env.get("CM_VENV_PYTHON"):
        return {"return": 1, "error": "CM_VENV_PYTHON is not set: the install,python-venv,_name.ml dependency "
                "did not run"}
    try:
        args, repo = route_args(env, family_of(i["meta"]["alias"]), os.path.join(os.getcwd(), "checkpoint"))
    except ModelError as e:
        return {"return": 1, "error": str(e)}
    env["CM_ML_MODEL_REPO_ID"] = repo
    env["CM_ML_MODEL_GET_ARGS"] = " ".join(shlex.quote(a) for a in args + ["--result-json", RESULT])
    return {"return": 0}


def postprocess(i):
    env = i["env"]
    try:
        family = family_of(i["meta"]["alias"])
        res = read_result(RESULT, family)
    except ModelError as e:
        return {"return": 1, "error": str(e)}
    env.update(outputs(res, env, family))
    env.update(write_lock(env, os.getcwd()))
    report = res["report"]
    print(f"{env['CM_ML_MODEL_NAME']}: {len(report['shards'])} weight file(s), {report['weight_bytes'] / 1e9:.2f} GB, "
          f"{report['loaded_with'] or 'files checked'} at {res['path']}")
    return {"return": 0}
