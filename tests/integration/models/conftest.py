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
    is built once, not once per step's module (25-40 s each on 2 cores). The folder's modules are one
    unit of work (tests/conftest.py: GROUPED), run by one worker one after the other, so the first
    builds the venv and the others take it; no worker waits on another's."""
    return str(tmp_path_factory.mktemp("models-cache"))


@pytest.fixture
def runner(cache_dir):
    """The engine on this project's scripts (the model steps' tests)."""
    return Runner([Repo("cm4mlperf-llm", ROOT)], cache_dir, include_project=True)
