"""--device chooses the vLLM build: the one command hands it to run-vllm-server, which refuses a
device this machine cannot serve before anything is installed (the engine on the project's steps)."""
import os

import pytest

from cmengine.registry import Repo
from enginefixtures import Runner

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture
def runner(tmp_path):
    return Runner([Repo("cm4mlperf-llm", ROOT)], str(tmp_path / "cache"), include_project=True)


def test_cuda_on_a_machine_without_nvidia_gpu_is_refused_before_any_install(runner, tmp_path):
    gpu = runner.run("detect,gpu")
    assert gpu["return"] == 0, gpu.get("error")
    if gpu["new_env"]["CM_GPU_COUNT"] != "0":
        pytest.skip("this host has a GPU: the run would install the CUDA build here, not refuse")
    r = runner.run("run,vllm-server", model=str(tmp_path / "model"), device="cuda")
    assert r["return"] != 0
    assert "--device=cuda: detect-gpu found no NVIDIA GPU on this machine" in r["error"]
    assert "use --device=cpu" in r["error"]
    assert "install-vllm" not in runner.output and "installing vllm" not in runner.output


def test_the_one_commands_device_reaches_the_vllm_install_and_keys_its_venv(runner):
    def install_key(device):
        r = runner.plan("run-mlperf,inference,_embedded", device=device, model="llama2-70b-99")
        assert r["return"] == 0, r.get("error")
        return {n["key"] for n in r["plan"] if n["script"] == "install-vllm"}
    cpu, cuda = install_key("cpu"), install_key("cuda")
    assert len(cpu) == len(cuda) == 1 and cpu != cuda       # one venv per build, never the CPU one reused
