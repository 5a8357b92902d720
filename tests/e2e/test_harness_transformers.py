"""The transformers backend (the reference SUT.py way) on the embedded SmolLM2 checkpoint with real
LoadGen: Offline and Server, performance and accuracy, tiny (2 samples, 16 tokens).

The interpreter needs torch, transformers, mlcommons-loadgen, aiohttp, pandas and pyarrow:
$CM_MLPERF_HF_PYTHON, else an overlay of two environments the session already has: a venv with no
package of its own whose .pth file puts the session's ml venv first (made in the session's fresh
cache by the embedded model's step: torch 2.13.0 CPU, transformers, numpy) and then this test
process's own environment (the project's requirements: aiohttp, pandas, pyarrow, and the test
extra's mlcommons-loadgen). Nothing is installed (pip --target of the four, with their
dependencies, took ~53 s on the slow kind of host); where the two interpreters' versions differ, the
four are installed into a folder of the test's own as before.
"""
import json
import os
import subprocess
import sys
import sysconfig
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


def _site_folders(python: str) -> list[str]:
    code = "import sysconfig, json; p = sysconfig.get_paths(); print(json.dumps([p['purelib'], p['platlib']]))"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout
    return list(dict.fromkeys(json.loads(out)))


def _overlay(python: str, folder: Path) -> str:
    """A venv of `python`'s base interpreter with no package of its own: its .pth file puts `python`'s
    site folders first, then this process's (the project's requirements and the test extra)."""
    subprocess.run([python, "-m", "venv", "--without-pip", str(folder)], check=True)
    overlay = str(folder / "bin" / "python")
    own_site = _site_folders(overlay)[0]
    paths = _site_folders(python) + list(dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib")))
    Path(own_site, "session-overlay.pth").write_text("\n".join(paths) + "\n")
    return overlay


@pytest.fixture(scope="module")
def hf_python(request, engine_step, tmp_path_factory):
    """(python, a folder first on its PYTHONPATH or ""): $CM_MLPERF_HF_PYTHON as it is; else the
    session's ml venv (made by the embedded model's step: torch and transformers) overlaid with this
    process's environment (_overlay); the cached venv stays as it was."""
    given = os.environ.get("CM_MLPERF_HF_PYTHON")
    if given:
        assert _has_all(given), f"CM_MLPERF_HF_PYTHON={given} lacks one of {PACKAGES}"
        return given, ""
    request.getfixturevalue("readme_run")       # the first run made the ml venv; cached from then on
    python = engine_step("install,python-venv,_name.ml")["CM_VENV_PYTHON"]
    probe = "import sys, torch; print(torch.__version__, '%d.%d' % sys.version_info[:2])"
    version, minor = subprocess.run([python, "-c", probe], capture_output=True, text=True).stdout.split()
    assert version.startswith(PACKAGES[0].split("==")[1]), f"the ml venv has torch {version}, not {PACKAGES[0]}"
    if minor == "%d.%d" % sys.version_info[:2]:
        overlay = _overlay(python, tmp_path_factory.mktemp("hf-overlay"))
        assert _has_all(overlay), f"{overlay} (the ml venv, then {sys.prefix}) lacks one of {PACKAGES}"
        return overlay, ""
    site = str(tmp_path_factory.mktemp("hf-site"))     # another Python: its own copies of the four
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
