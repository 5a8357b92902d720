"""The transformers backend (the reference SUT.py way) on the embedded SmolLM2 checkpoint with real
LoadGen: Offline and Server, performance and accuracy, tiny (2 samples, 16 tokens).

The interpreter needs torch, transformers, mlcommons-loadgen, aiohttp, pandas and pyarrow:
$CM_MLPERF_HF_PYTHON, else a venv this test makes once in the run's cache folder
($CM4MLPERF_CACHE_DIR, which CI makes fresh, so CI never rests on a venv left by hand), or under
~/.cache/cm4mlperf-llm without one (torch pinned to the CPU wheel 2.13.0; a few minutes the first time).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from costs import LEDGER, work_in
from mlperf_llm.harness.driver import HarnessRequest, run_all

PACKAGES = ["torch==2.13.0", "transformers", "mlcommons-loadgen==5.1.2", "aiohttp", "pandas", "pyarrow"]
ROWS, MAX_TOKENS = 2, 16
pytestmark = pytest.mark.e2e


def _has_all(python: str) -> bool:
    code = "import torch, transformers, mlperf_loadgen, aiohttp, pandas, pyarrow"
    return subprocess.run([python, "-c", code], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def hf_python():
    given = os.environ.get("CM_MLPERF_HF_PYTHON")
    if given:
        assert _has_all(given), f"CM_MLPERF_HF_PYTHON={given} lacks one of {PACKAGES}"
        return given
    cache = os.environ.get("CM4MLPERF_CACHE_DIR", "").strip()
    venv = (Path(cache) if cache else Path.home() / ".cache" / "cm4mlperf-llm") / "hf-harness-venv"
    python = str(venv / "bin" / "python")
    if not (Path(python).exists() and _has_all(python)):
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", *PACKAGES], check=True)
    return python


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, embedded_model_path):
    from mlperf_llm.datasets.embedded import build_embedded
    return build_embedded(embedded_model_path, tmp_path_factory.mktemp("data"))["pickle"]


def test_transformers_backend_offline_and_server(hf_python, dataset, tmp_path, embedded_model_path):
    req = HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path / "results"), dataset_path=dataset, scenarios=("Offline", "Server"),
                         backend="transformers", model_path=str(embedded_model_path), total_sample_count=ROWS,
                         test_query_count=ROWS, server_target_qps=2.0, max_tokens=MAX_TOKENS, batch_size=ROWS,
                         python=hf_python, progress=False)
    outs = {(o.scenario, o.mode): o for o in run_all(req)}
    LEDGER.charge("test_transformers_backend_offline_and_server", work_in(tmp_path / "results"))
    assert len(outs) == 4 and all(o.verdict != "FAILED" for o in outs.values()), \
        {k: o.reasons for k, o in outs.items()}
    assert outs[("Offline", "performance")].verdict == "VALID"
    assert outs[("Server", "performance")].summary["ttft_p99_ns"] > 0
    ids = {}
    for scenario in ("Offline", "Server"):
        recs = json.loads((Path(outs[(scenario, "accuracy")].directory) / "mlperf_log_accuracy.json").read_text())
        ids[scenario] = {r["qsl_idx"]: list(memoryview(bytes.fromhex(r["data"])).cast("i")) for r in recs}
        assert sorted(ids[scenario]) == list(range(ROWS))
        assert all(1 <= len(v) <= MAX_TOKENS for v in ids[scenario].values())
    # greedy: the left-padded batch (Offline) and the single sample (Server) start the same way
    assert all(ids["Offline"][i][:4] == ids["Server"][i][:4] for i in range(ROWS))
