"""The transformers backend (the reference SUT.py way) on the embedded SmolLM2 checkpoint with real
LoadGen: Offline and Server, performance and accuracy, tiny (2 samples, 16 tokens).

The interpreter needs torch, transformers, mlcommons-loadgen, aiohttp, pandas and pyarrow:
$CM_MLPERF_HF_PYTHON, else the session's ml venv (made in the session's fresh cache by the embedded
model's step: torch 2.13.0 CPU, transformers) with the other four installed into a folder of the
test's own, first on the harness's PYTHONPATH (about 15 s instead of a venv with torch, 47 s).
"""
import json
import os
import subprocess
from pathlib import Path

import pytest

from costs import LEDGER, work_in
from mlperf_llm.harness.driver import HarnessRequest, run_all

PACKAGES = ["torch==2.13.0", "transformers", "mlcommons-loadgen==5.1.2", "aiohttp", "pandas", "pyarrow"]
# what the embedded model's ml venv lacks of them (it has torch 2.13.0 CPU and transformers, as the
# transformers backend's step pins them)
EXTRA = PACKAGES[2:]
ROWS, MAX_TOKENS = 2, 16
pytestmark = pytest.mark.e2e


def _has_all(python: str, path: str = "") -> bool:
    code = "import torch, transformers, mlperf_loadgen, aiohttp, pandas, pyarrow"
    env = dict(os.environ, PYTHONPATH=path) if path else None
    return subprocess.run([python, "-c", code], capture_output=True, env=env).returncode == 0


@pytest.fixture(scope="module")
def hf_python(request, engine_step, tmp_path_factory):
    """(python, a folder first on its PYTHONPATH): $CM_MLPERF_HF_PYTHON as it is; else the session's
    ml venv (made by the embedded model's step: torch and transformers) with the packages it lacks
    installed into a folder of their own (pip --target: the cached venv stays as it was)."""
    given = os.environ.get("CM_MLPERF_HF_PYTHON")
    if given:
        assert _has_all(given), f"CM_MLPERF_HF_PYTHON={given} lacks one of {PACKAGES}"
        return given, ""
    request.getfixturevalue("readme_run")       # the first run made the ml venv; cached from then on
    python = engine_step("install,python-venv,_name.ml")["CM_VENV_PYTHON"]
    version = subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                             text=True).stdout.strip()
    assert version.startswith(PACKAGES[0].split("==")[1]), f"the ml venv has torch {version}, not {PACKAGES[0]}"
    site = str(tmp_path_factory.mktemp("hf-site"))
    subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile",   # imported once
                    "--target", site, *EXTRA],
                   check=True)
    assert _has_all(python, site), f"{python} with {site} first on PYTHONPATH lacks one of {PACKAGES}"
    return python, site


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, embedded_model_path):
    from mlperf_llm.datasets.embedded import build_embedded
    return build_embedded(embedded_model_path, tmp_path_factory.mktemp("data"))["pickle"]


def test_transformers_backend_offline_and_server(hf_python, dataset, tmp_path, embedded_model_path, pace):
    python, site = hf_python
    req = HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path / "results"), dataset_path=dataset, scenarios=("Offline", "Server"),
                         backend="transformers", model_path=str(embedded_model_path), total_sample_count=ROWS,
                         test_query_count=ROWS, server_target_qps=pace.burst_qps(ROWS), max_tokens=MAX_TOKENS, batch_size=ROWS,
                         python=python, loadgen_path=site, progress=False)
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
