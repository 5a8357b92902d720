"""--dry-run of the one command on recorded GPU hosts (their nvidia-smi / amd-smi outputs on PATH:
tests/recorded_hosts.py): the vLLM layout the run would choose there, and an AMD node planned as an
NVIDIA one is (the engine on the project's steps; nothing runs)."""
import os
import sys

import pytest

from cmengine.registry import Repo
from enginefixtures import Runner
from recorded_hosts import amd_host, nvidia_host, on_path

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CLOSED = dict(division="closed", execution_mode="valid", submitter="Acme", quiet=True)


@pytest.fixture
def runner(tmp_path):
    return Runner([Repo("cm4mlperf-llm", ROOT)], str(tmp_path / "cache"), include_project=True)


@pytest.mark.parametrize("model, says", [
    ("llama3.1-8b", ["llama3.1-8b on 8x NVIDIA H100 80GB HBM3 (80 GB each): 8 server(s) of 1 GPU(s) each",
                     "--tensor_parallel_size=1: as published: Red Hat v5.1 (closed), 1x H100",
                     "--replicas=8: 8 GPU(s) / 1 per server"]),
    ("llama2-70b-99.9", ["llama2-70b-99.9 on 8x NVIDIA H100 80GB HBM3 (80 GB each): 4 server(s) of 2 GPU(s) each",
                         "--tensor_parallel_size=2: as published: Krai v5.1 (open), 8x H100",
                         "--max_num_seqs=2476 --max_num_batched_tokens=12140 --gpu_memory_utilization=0.9"]),
])
def test_a_recorded_8x_h100_node_plans_the_benchmarks_layout(runner, tmp_path, monkeypatch, model, says):
    nvidia_host(tmp_path / "bin", "h100_8x")
    on_path(monkeypatch, tmp_path / "bin")
    r = runner.plan("run-mlperf,inference,_full,_r6.1", model=model, device="cuda", **CLOSED)
    assert r["return"] == 0, r.get("error")
    for words in says:
        assert words in runner.output, (words, runner.output[-3000:])
    assert runner.output.index("Plan for") < runner.output.index("vLLM on this node's GPUs")


def test_the_user_s_tensor_parallel_size_wins_in_the_plan(runner, tmp_path, monkeypatch):
    nvidia_host(tmp_path / "bin", "h100_8x")
    on_path(monkeypatch, tmp_path / "bin")
    r = runner.plan("run-mlperf,inference,_full,_r6.1", model="llama2-70b-99.9", device="cuda",
                    tensor_parallel_size="8", **CLOSED)
    assert r["return"] == 0, r.get("error")
    assert "1 server(s) of 8 GPU(s) each" in runner.output and "--tensor_parallel_size=8: as given" in runner.output


def test_an_amd_node_with_its_own_vllm_plans_the_chain_an_nvidia_node_gets(runner, tmp_path, monkeypatch):
    """--device=rocm --vllm_python=PATH on recorded amd-smi output: the same steps as --device=cuda
    with the same vLLM on a recorded NVIDIA node (no install step in either), and its own layout."""
    def steps(host, device):
        (amd_host if host == "amd" else lambda b: nvidia_host(b, host))(tmp_path / host)
        monkeypatch.setenv("PATH", f"{tmp_path / host}{os.pathsep}{PATH}")
        r = runner.plan("run-mlperf,inference,_full,_r6.1", model="llama2-70b-99.9", device=device,
                        vllm_python=sys.executable, **CLOSED)
        assert r["return"] == 0, r.get("error")
        return [(n["script"], tuple(n["variations"])) for n in r["plan"]], runner.output
    PATH = os.environ["PATH"]
    amd, amd_out = steps("amd", "rocm")
    nvidia, _ = steps("h100_8x", "cuda")
    assert amd == nvidia and "install-vllm" not in {s for s, _ in amd}
    assert "llama2-70b-99.9 on 2x AMD Instinct MI300X (192 GB each): 2 server(s) of 1 GPU(s) each" in amd_out
    assert "server_mi300x.yaml" in amd_out


def test_rocm_without_a_vllm_is_refused_naming_vllm_python(runner, tmp_path, monkeypatch):
    amd_host(tmp_path / "bin")
    on_path(monkeypatch, tmp_path / "bin")
    r = runner.plan("run-mlperf,inference,_full,_r6.1", model="llama2-70b-99.9", device="rocm", **CLOSED)
    assert r["return"] != 0 and "--vllm_python=PATH" in r["error"]


def test_a_gpu_device_on_a_machine_without_gpus_says_the_layout_waits(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")          # no vendor tool: no GPU
    r = runner.plan("run-mlperf,inference,_full,_r6.1", model="llama3.1-8b", device="cuda", **CLOSED)
    assert r["return"] == 0, r.get("error")
    assert "show no GPU on this machine" in runner.output


def test_a_cpu_build_on_a_gpu_node_gets_no_gpu_layout(runner, tmp_path, monkeypatch):
    """--device=cpu (vLLM's CPU build) on the recorded 8x H100: no servers spread over GPUs it cannot use."""
    nvidia_host(tmp_path / "bin", "h100_8x")
    on_path(monkeypatch, tmp_path / "bin")
    r = runner.plan("run-mlperf,inference,_full,_r6.1", model="llama3.1-8b", device="cpu", **CLOSED)
    assert r["return"] == 0, r.get("error")
    assert "vLLM on this node's GPUs" not in runner.output
