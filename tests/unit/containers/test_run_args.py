"""containers/run.py's command line: the network off unless asked, usage reports off, only what is
mounted of the host (read-only unless said), GPUs passed the way each engine and vendor wants."""
import pytest

from mlperf_llm.containers import engine, run

PODMAN = engine.Engine("podman", "/usr/bin/podman")
DOCKER = engine.Engine("docker", "/usr/bin/docker")


def test_a_run_has_the_network_off_usage_reports_off_and_its_own_name():
    args = run.run_args(run.RunSpec("img", ("cm", "run")), PODMAN, "cm4mlperf-x")
    assert args[:4] == ["run", "--rm", "--name", "cm4mlperf-x"] and args[-3:] == ["img", "cm", "run"]
    assert args[args.index("--network") + 1] == "none"
    for setting in ("VLLM_NO_USAGE_STATS=1", "DO_NOT_TRACK=1", "RAY_USAGE_STATS_ENABLED=0", "HF_HUB_DISABLE_TELEMETRY=1"):
        assert setting in args
    networked = run.run_args(run.RunSpec("img", (), network=True), PODMAN, "n")
    assert networked[networked.index("--network") + 1] == "host"
    assert run.RunSpec("img", ()).container_name().startswith("cm4mlperf-")


def test_mounts_are_read_only_unless_said_and_the_user_and_folder_are_passed(tmp_path):
    spec = run.RunSpec("img", ("true",), mounts=(run.Mount(str(tmp_path), "/data"),
                                                  run.Mount(str(tmp_path / "out"), "/results", read_only=False)),
                       user="1000:1000", workdir="/results")
    args = run.run_args(spec, PODMAN, "n")
    assert f"type=bind,source={tmp_path},target=/data,ro" in args
    assert f"type=bind,source={tmp_path}/out,target=/results" in args
    assert args[args.index("--user") + 1] == "1000:1000" and args[args.index("--workdir") + 1] == "/results"


def test_gpus_are_passed_as_each_engine_and_vendor_expects():
    assert run.gpu_args("nvidia", PODMAN) == ["--device", "nvidia.com/gpu=all"]
    assert run.gpu_args("nvidia", DOCKER) == ["--gpus", "all"]
    assert run.gpu_args("amd", DOCKER)[:4] == ["--device", "/dev/kfd", "--device", "/dev/dri"]
    assert run.gpu_args("", PODMAN) == []
    with pytest.raises(ValueError, match="nvidia, amd or none"):
        run.gpu_args("intel", PODMAN)


def test_a_secret_is_named_on_the_command_line_and_its_value_is_in_the_engines_environment():
    """--api_key's VLLM_API_KEY (any cmcontract.secret name) on podman's argv would be read by every
    user of the machine (ps) and kept in the container's recorded command: `-e NAME` takes it from
    the engine's environment."""
    spec = run.RunSpec("img", ("vllm",), env={"VLLM_API_KEY": "s3cret", "OMP_NUM_THREADS": "4"})
    args = run.run_args(spec, PODMAN, "n")
    assert "VLLM_API_KEY" in args and "OMP_NUM_THREADS=4" in args
    assert not [a for a in args if "s3cret" in a]
    assert run.secret_environ(spec.env, {"PATH": "/usr/bin"}) == {"PATH": "/usr/bin", "VLLM_API_KEY": "s3cret"}


# the head of what `nvidia-ctk cdi generate` writes (NVIDIA Container Toolkit 1.17, one GPU)
NVIDIA_CDI = """---
cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
- name: "0"
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
- name: all
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
containerEdits:
  deviceNodes:
  - path: /dev/nvidiactl
"""


def test_podman_without_a_cdi_spec_of_nvidias_gpus_is_refused_before_any_container_with_the_fix(tmp_path):
    etc, var = tmp_path / "etc-cdi", tmp_path / "var-cdi"
    etc.mkdir()
    (etc / "amd.json").write_text('{"cdiVersion": "0.6.0", "kind": "amd.com/gpu", "devices": []}')
    (etc / "broken.yaml").write_text("kind: [unclosed")
    with pytest.raises(engine.ContainerError, match=r"no CDI spec in .*etc-cdi or .*var-cdi defines nvidia\.com/gpu; "
                                                    r"fix: sudo nvidia-ctk cdi generate"):
        run.check_gpus("nvidia", PODMAN, (str(etc), str(var)))
    run.check_gpus("nvidia", DOCKER, (str(etc), str(var)))          # docker: its NVIDIA runtime, not CDI
    dev = tmp_path / "dev"
    kfd, dri = dev / "kfd", dev / "dri"
    with pytest.raises(engine.ContainerError, match=r"AMD GPUs go to a container as .*kfd and .*dri \(ROCm\), and this "
                                                    r"host has no .*kfd or .*dri; fix: load ROCm's kernel driver"):
        run.check_gpus("amd", PODMAN, (str(etc), str(var)), (str(kfd), str(dri)))
    dri.mkdir(parents=True)
    with pytest.raises(engine.ContainerError, match=r"host has no \S*kfd; fix"):
        run.check_gpus("amd", DOCKER, (str(etc), str(var)), (str(kfd), str(dri)))    # either engine
    kfd.write_text("")
    run.check_gpus("amd", PODMAN, (str(etc), str(var)), (str(kfd), str(dri)))   # AMD: device files, no CDI
    run.check_gpus("", PODMAN, (str(etc), str(var)))
    var.mkdir()
    (var / "nvidia.yml").write_text(NVIDIA_CDI)                      # not a name podman reads
    with pytest.raises(engine.ContainerError):
        run.check_gpus("nvidia", PODMAN, (str(etc), str(var)))
    (var / "nvidia.yaml").write_text(NVIDIA_CDI)
    assert run.cdi_kinds((str(etc), str(var))) == {"amd.com/gpu", "nvidia.com/gpu"}
    run.check_gpus("nvidia", PODMAN, (str(etc), str(var)))
    (var / "nvidia.yaml").unlink()
    (var / "nvidia.json").write_text('{\n\t"cdiVersion": "0.5.0",\n\t"kind": "nvidia.com/gpu",\n\t"devices": []\n}')
    run.check_gpus("nvidia", PODMAN, (str(etc), str(var)))         # JSON indented with tabs, as JSON allows
