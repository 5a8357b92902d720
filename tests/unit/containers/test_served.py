"""--docker's server (containers/served.py): the host's vLLM command turned into one container of
the image, with the image's vLLM, the host paths it names mounted read-only, the host network, the
server's settings passed and nothing else of the host environment; and how the engine travels in env."""
import pytest

from mlperf_llm.containers import engine, served
from mlperf_llm.containers.recipe import PREFIX

PODMAN = engine.Engine("podman", "/usr/bin/podman", conf="/c/containers.conf", root="/s/storage", runroot="/s/run")


def test_the_host_paths_a_command_names_are_found_once(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    template = tmp_path / "chat.jinja"
    template.write_text("x")
    argv = ["/host/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server", f"--model={model}",
            "--chat-template", str(template), f"--tokenizer={model}", "--download-dir=/no/such/dir", "--port=8000"]
    assert served.host_paths(argv) == [str(model), str(template)]


def test_the_container_serves_the_command_with_the_images_vllm(tmp_path):
    argv = ["/host/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server", f"--model={tmp_path}", "--port=8123"]
    out = served.container_argv(PODMAN, "localhost/cm4mlperf-llm:abc", argv, {"VLLM_CPU_KVCACHE_SPACE": "4"},
                                "cm4mlperf-vllm-8123-x", environ={"VLLM_LOGGING_LEVEL": "DEBUG", "HOME": "/root",
                                                                   "OMP_NUM_THREADS": "2"})
    assert out[:5] == ["/usr/bin/podman", "--root", "/s/storage", "--runroot", "/s/run"]
    at = out.index("localhost/cm4mlperf-llm:abc")
    assert out[at + 1:] == [f"{PREFIX}/vllm/bin/python", *argv[1:]]
    assert out[out.index("--network") + 1] == "host" and "--rm" in out and "--init" in out
    assert f"type=bind,source={tmp_path},target={tmp_path},ro" in out
    env = {out[i + 1] for i, a in enumerate(out) if a == "-e"}
    assert {"VLLM_CPU_KVCACHE_SPACE=4", "VLLM_LOGGING_LEVEL=DEBUG", "OMP_NUM_THREADS=2", "HF_HUB_OFFLINE=1",
            "VLLM_NO_USAGE_STATS=1"} <= env
    assert not any(e.startswith("HOME=") for e in env)                  # the host's environment stays out
    assert not any(a.startswith("--cpuset") or a == "--ipc=host" for a in out)


def test_a_replicas_cpus_and_the_gpus_go_to_the_engine():
    out = served.container_argv(PODMAN, "img", ["/p", "-m", "x"], {}, "n", gpus="nvidia", cpus=(4, 5, 6), environ={})
    assert "--cpuset-cpus=4,5,6" in out and "--ipc=host" in out
    assert out[out.index("--device") + 1] == "nvidia.com/gpu=all"
    assert served.gpu_kind("nvidia", "8") == "nvidia" and served.gpu_kind("amd", "1") == "amd"
    assert served.gpu_kind("nvidia", "0") == "" and served.gpu_kind("unknown", "") == ""
    assert served.gpu_kind("intel", "2") == ""                          # no runtime of ours passes those through


def test_the_engine_travels_as_one_string_and_a_bad_one_is_refused():
    assert engine.Engine.from_json(PODMAN.to_json()) == PODMAN
    with pytest.raises(engine.ContainerError, match="podman or docker"):
        engine.Engine.from_json('{"kind": "sh", "binary": "/bin/sh"}')
    with pytest.raises(engine.ContainerError, match="not a container engine"):
        engine.Engine.from_json("")
