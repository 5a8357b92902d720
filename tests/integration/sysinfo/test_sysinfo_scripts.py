"""The sysinfo script folders run through the engine on this machine (no network, no pip)."""
import json
import os
import subprocess

import pytest

from cmengine.registry import Repo
from enginefixtures import Runner
from recorded_hosts import fake_tool, nvidia_host, on_path
from mlperf_llm.sysinfo.cpu import parse_lscpu
from mlperf_llm.sysinfo.sut import MEANINGFUL_FIELDS, REQUIRED_FIELDS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture
def runner(tmp_path):
    return Runner([Repo("cm4mlperf-llm", ROOT)], str(tmp_path / "cache"), include_project=True)


def test_detect_cpu_matches_lscpu(runner):
    r = runner.run("detect,cpu")
    assert r["return"] == 0, r.get("error")
    env = r["new_env"]
    lscpu = parse_lscpu(subprocess.run(["lscpu"], capture_output=True, text=True,
                                       env=dict(os.environ, LC_ALL="C")).stdout)
    assert env["CM_HOST_CPU_MODEL_NAME"] == lscpu.model_name
    assert env["CM_HOST_CPU_TOTAL_LOGICAL_CORES"] == str(os.cpu_count())
    assert env["CM_HOST_CPU_L3_CACHE_SIZE"] == lscpu.caches["L3"]
    assert env["CM_HOST_MEMORY_CAPACITY"][-1] in "GT" and int(env["CM_HOST_MEMORY_BYTES"]) > 0


def test_detect_gpu_says_none_here(runner):
    r = runner.run("detect,gpu")
    assert r["return"] == 0, r.get("error")
    assert (r["new_env"]["CM_GPU_VENDOR"], r["new_env"]["CM_GPU_COUNT"]) == ("none", "0")
    r = runner.run("detect,gpu", env={"CM_GPU_REQUIRED": "yes"})
    assert r["return"] != 0 and "an accelerator is required" in r["error"]


def test_sut_description_is_written_complete(runner, tmp_path):
    user = tmp_path / "mine.json"
    user.write_text(json.dumps({"cooling": "liquid", "hw_notes": "test box"}))
    out = tmp_path / "systems"
    r = runner.run("get,mlperf,inference,sut,description", hw_name="test_sut", submitter="Acme",
                   division="open", sut_json=str(user), output_dir=str(out),
                   env={"CM_VLLM_VERSION": "0.32.0", "CM_PYTHON_VERSION": "3.11.7", "CM_LOADGEN_VERSION": "5.1.2"})
    assert r["return"] == 0, r.get("error")
    path = r["new_env"]["CM_MLPERF_SUT_DESC_PATH"]
    assert path == str(out / "test_sut.json")
    data = json.loads(open(path).read())
    assert set(REQUIRED_FIELDS) <= set(data) and all(data[k] for k in MEANINGFUL_FIELDS)
    assert (data["submitter"], data["division"]) == ("Acme", "open")
    assert (data["cooling"], data["hw_notes"]) == ("liquid", "test box")
    assert data["framework"] == "vLLM 0.32.0"
    assert data["other_software_stack"] == "Python: 3.11.7, mlcommons-loadgen 5.1.2"
    assert data["accelerators_per_node"] == "0"
    assert data["sw_notes"].startswith("Automated by cm4mlperf-llm 0.1.0")
    review = open(r["new_env"]["CM_MLPERF_SUT_DESC_REVIEW_PATH"]).read()
    assert "status = 'available'" in review and "cooling" not in review
    assert "status" in r["new_env"]["CM_MLPERF_SUT_DESC_REVIEW_FIELDS"].split(",")
    assert sorted(os.listdir(out)) == ["review-test_sut.txt", "test_sut.json"]


def test_sut_description_refuses_bad_input(runner, tmp_path):
    r = runner.run("get,mlperf,inference,sut,description", hw_name="x", status="GA", output_dir=str(tmp_path / "o"))
    assert r["return"] != 0 and "--status='GA'" in r["error"] and "available, preview, rdi" in r["error"]
    assert not os.path.exists(tmp_path / "o" / "x.json")


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                            GIT_COMMITTER_EMAIL="t@t"))


@pytest.fixture
def inference_repo(tmp_path):
    repo = tmp_path / "upstream"
    for rel in ("loadgen/mlperf.conf", "tools/submission/submission_checker.py", "language/llama2-70b/main.py"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(rel + "\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "r4.1")
    _git(repo, "tag", "v4.1")
    (repo / "mlperf.conf").write_text("top\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "r5.1")
    _git(repo, "tag", "v5.1")
    return repo


def test_inference_src_clone_is_cached_per_tag(runner, inference_repo):
    url = f"file://{inference_repo}"
    r1 = runner.run("get,mlperf,inference,src,_r4.1", git_url=url)
    assert r1["return"] == 0, r1.get("error")
    env = r1["new_env"]
    assert env["CM_MLPERF_INFERENCE_SOURCE_TAG"] == "v4.1"
    assert not os.path.exists(os.path.join(env["CM_MLPERF_INFERENCE_SOURCE"], "mlperf.conf"))
    assert os.path.isfile(env["CM_MLPERF_INFERENCE_CHECKER"])
    r2 = runner.run("get,mlperf,inference,src,_r4.1", git_url=url)
    assert r2["new_env"]["CM_MLPERF_INFERENCE_SOURCE"] == env["CM_MLPERF_INFERENCE_SOURCE"]
    assert "cached" in runner.output
    r3 = runner.run("get,mlperf,inference,src,_r5.1", git_url=url)
    assert r3["new_env"]["CM_MLPERF_INFERENCE_SOURCE_TAG"] == "v5.1"
    r3 = runner.plan("get,mlperf,inference,src", git_url=url)     # no round: the newest round's
    assert r3["return"] == 0 and "Plan for 'get-mlperf-inference-src _r6.1'" in runner.output
    r4 = runner.run("get,mlperf,inference,src,_r5.0", git_url=url)
    assert r4["return"] != 0 and "v5.0" in r4["error"]


def test_inference_src_at_a_commit_with_the_package_checker(runner, inference_repo):
    """v6.x: the source is a commit of master (a shallow fetch of that commit), whose checker is the
    package tools/submission/submission_checker."""
    (inference_repo / "tools/submission/submission_checker.py").unlink()
    (inference_repo / "tools/submission/submission_checker").mkdir()
    (inference_repo / "tools/submission/submission_checker/main.py").write_text("# package\n")
    _git(inference_repo, "add", "-A")
    _git(inference_repo, "commit", "-q", "-m", "master")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=inference_repo, capture_output=True,
                          text=True, check=True).stdout.strip()
    _git(inference_repo, "commit", "-q", "--allow-empty", "-m", "later")
    r = runner.run(f"get,mlperf,inference,src,_tag.{head}", git_url=f"file://{inference_repo}")
    assert r["return"] == 0, r.get("error")
    env = r["new_env"]
    assert env["CM_MLPERF_INFERENCE_SOURCE_COMMIT"] == head
    assert env["CM_MLPERF_INFERENCE_CHECKER"].endswith(os.path.join("submission_checker", "main.py"))


def test_inference_src_given_path(runner, inference_repo):
    r = runner.run("get,mlperf,inference,src,_r5.1", src_path=str(inference_repo))
    assert r["return"] == 0, r.get("error")
    assert r["new_env"]["CM_MLPERF_INFERENCE_SOURCE"] == str(inference_repo)
    assert r["new_env"]["CM_MLPERF_INFERENCE_SOURCE_TAG"] == "v5.1"
    r = runner.run("get,mlperf,inference,src", src_path=str(inference_repo / "loadgen"))
    assert r["return"] != 0 and "not an mlcommons/inference checkout" in r["error"]


def test_detect_gpu_reads_nvidia_smi_on_path(runner, tmp_path, monkeypatch):
    nvidia_host(tmp_path / "bin", "epyc9254_2s_8xl40s")
    on_path(monkeypatch, tmp_path / "bin")
    r = runner.run("detect,gpu")
    assert r["return"] == 0, r.get("error")
    env = r["new_env"]
    assert (env["CM_GPU_VENDOR"], env["CM_GPU_COUNT"], env["CM_GPU_NAME"]) == ("nvidia", "8", "NVIDIA L40S")
    assert (env["CM_GPU_MEMORY_CAPACITY"], env["CM_GPU_CUDA_VERSION"]) == ("48 GB", "12.2")
    out = tmp_path / "sys"
    r = runner.run("get,mlperf,inference,sut,description", hw_name="l40s", output_dir=str(out),
                   env={"CM_VLLM_VERSION": "0.5.2"})
    data = json.loads((out / "l40s.json").read_text())
    assert (data["accelerators_per_node"], data["accelerator_host_interconnect"]) == ("8", "PCIe Gen4 x16")
    assert "CUDA 12.2, NVIDIA driver 535.183.01" in data["other_software_stack"]


def test_a_failing_nvidia_smi_is_a_named_gap_not_a_crash(runner, tmp_path, monkeypatch):
    fake_tool(tmp_path / "bin", "nvidia-smi",
               'echo "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver." >&2\nexit 9\n')
    on_path(monkeypatch, tmp_path / "bin")
    r = runner.run("detect,gpu")
    assert r["return"] == 0 and r["new_env"]["CM_GPU_VENDOR"] == "unknown"
    out = tmp_path / "sys"
    r = runner.run("get,mlperf,inference,sut,description", hw_name="broken", output_dir=str(out))
    assert r["return"] == 0, r.get("error")
    data = json.loads((out / "broken.json").read_text())
    assert data["accelerator_model_name"] == "undefined" and data["host_processor_model_name"] != "undefined"
    review = (out / "review-broken.txt").read_text()
    assert "couldn't communicate with the NVIDIA driver" in review


def test_get_python3_is_keyed_on_the_interpreter_running_cm(runner, monkeypatch, tmp_path):
    """get-python3 takes the interpreter running cm first (without --python): `cm` of another venv
    sharing the cache found the first venv's entry and ran the harness, LoadGen and the record's
    project files from that other venv. Its key now holds the environment's interpreter (the
    engine's CM_RUN_PYTHON, places.running_python): two venvs, two keys; `venv/bin/python` and
    `venv/bin/python3.11` (pytest's and the `cm` script's names for one venv), one key."""
    import sys
    real = os.path.realpath(sys.executable)

    def venv(name, alias):
        (tmp_path / name / "bin").mkdir(parents=True, exist_ok=True)
        for n in {"python", os.path.basename(real)}:
            if not (tmp_path / name / "bin" / n).exists():
                (tmp_path / name / "bin" / n).symlink_to(real)
        monkeypatch.setattr(sys, "prefix", str(tmp_path / name))
        monkeypatch.setattr(sys, "executable", str(tmp_path / name / "bin" / alias))
        return runner.plan("get,python3")["key"]
    a = venv("venv-a", "python")
    assert venv("venv-a", os.path.basename(real)) == a
    assert venv("venv-b", "python") != a
