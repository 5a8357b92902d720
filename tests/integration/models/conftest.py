import os
import sys

import pytest

from cmengine.registry import Repo
from enginefixtures import Runner

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "models"))

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture(scope="package")
def cache_dir(tmp_path_factory):
    """One cache for the model steps' tests: their ml venv (torch-free: huggingface_hub, transformers)
    is built once, not once per step's module (25-40 s each on 2 cores). Under pytest-xdist the
    modules run in different workers: the cache is in the folder the session's workers share, and
    the engine's lock on each entry makes the second worker wait for the first one's venv and take it."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent          # .../pytest-N, above each worker's popen-gwK
    path = base / "models-cache"
    path.mkdir(exist_ok=True)
    return str(path)


@pytest.fixture
def runner(cache_dir):
    """The engine on this project's scripts (the model steps' tests)."""
    return Runner([Repo("cm4mlperf-llm", ROOT)], cache_dir, include_project=True)
