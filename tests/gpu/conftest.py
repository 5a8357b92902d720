"""The GPU node's tests (marker `gpu`, tests/conftest.py): they run where torch sees a CUDA device
and are skipped, with the reason, everywhere else. benchmarks/gpu_check.sh runs them on a lent GPU
machine (CUDA, torch, transformers; no vLLM, no network) and prints what ran."""
import os
import sys
from pathlib import Path

DATASETS = Path(__file__).resolve().parents[1] / "fixtures" / "datasets"     # tiny_tokenizer
if str(DATASETS) not in sys.path:
    sys.path.insert(0, str(DATASETS))

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def check_out(tmp_path_factory) -> Path:
    """Where the check keeps what it read (nvidia-smi's outputs: the next recorded fixture):
    $GPU_CHECK_OUT (benchmarks/gpu_check.sh sets it), else a temporary folder."""
    given = os.environ.get("GPU_CHECK_OUT", "").strip()
    out = Path(given) if given else tmp_path_factory.mktemp("gpu-check")
    out.mkdir(parents=True, exist_ok=True)
    return out
