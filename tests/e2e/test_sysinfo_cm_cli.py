"""The SUT description and detection scripts through the real `cm` command (cmind) of this venv."""
import json
import os
import subprocess
import sys

import pytest

from costs import NO_QUERY_WORK_S

pytestmark = pytest.mark.e2e

CM = os.path.join(os.path.dirname(sys.executable), "cm")


def cm(tmp_path, *args):
    if not os.path.exists(CM):
        pytest.fail(f"the cm command is not installed next to {sys.executable}: pip install . (see README)")
    env = dict(os.environ, CM_REPOS=str(tmp_path / "CM"), CM4MLPERF_CACHE_DIR=str(tmp_path / "cache"))
    os.makedirs(env["CM_REPOS"], exist_ok=True)
    return subprocess.run([CM, "run", "script", *args, "--quiet", "-j"], env=env, capture_output=True, text=True,
                          timeout=NO_QUERY_WORK_S, stdin=subprocess.DEVNULL)


def test_sut_description_through_cm(tmp_path):
    out = tmp_path / "systems"
    r = cm(tmp_path, "--tags=get,mlperf,inference,sut,description", "--hw_name=ci_box", "--submitter=Acme",
           "--division=open", f"--output_dir={out}", "--env.CM_VLLM_VERSION=0.32.0")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["new_env"]["CM_MLPERF_SUT_DESC_PATH"] == str(out / "ci_box.json")
    data = json.loads((out / "ci_box.json").read_text())
    assert (data["submitter"], data["division"], data["framework"]) == ("Acme", "open", "vLLM 0.32.0")


def test_bad_status_is_a_clear_error_through_cm(tmp_path):
    r = cm(tmp_path, "--tags=get,mlperf,inference,sut,description", "--hw_name=x", "--status=GA",
           f"--output_dir={tmp_path / 'o'}")
    assert r.returncode != 0 and "available, preview, rdi" in r.stderr + r.stdout
    assert "Traceback" not in r.stderr + r.stdout


def test_detect_cpu_and_gpu_through_cm(tmp_path):
    r = cm(tmp_path, "--tags=detect,cpu")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["new_env"]["CM_HOST_CPU_TOTAL_LOGICAL_CORES"] == str(os.cpu_count())
    r = cm(tmp_path, "--tags=detect,gpu")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["new_env"]["CM_GPU_VENDOR"] in ("none", "nvidia", "amd", "unknown")
