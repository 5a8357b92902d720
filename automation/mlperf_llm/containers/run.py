"""Running a command in an image: one named container, removed when the command ends however it
ends (its exit, Ctrl-C, SIGTERM, SIGHUP), with only what is mounted of the host, the network off
unless asked, no usage reports, and the GPUs passed through where the host has them.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid
from dataclasses import dataclass, field
from typing import Optional

import yaml
from cmcontract.secret import is_secret

from .engine import ContainerError, Engine
from .recipe import ENV

NAME_PREFIX = "cm4mlperf-"
CDI_NVIDIA = "nvidia.com/gpu"               # the CDI device kind of NVIDIA's GPUs
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")     # where podman reads CDI specs (containers.conf's default)
AMD_DEVICES = ("/dev/kfd", "/dev/dri")       # ROCm's kernel driver and the render nodes, passed as they are
# the engine's removal of a container: podman's stops it first (5 s); docker's `rm` has no such option
# ("unknown shorthand flag: 't'") and kills it at once
REMOVE = {"podman": ("rm", "-f", "-t", "5"), "docker": ("rm", "-f")}


@dataclass(frozen=True)
class Mount:
    host: str
    target: str
    read_only: bool = True

    def arg(self) -> str:
        return f"type=bind,source={os.path.abspath(self.host)},target={self.target}" + (",ro" if self.read_only else "")


@dataclass(frozen=True)
class RunSpec:
    image: str
    argv: tuple
    mounts: tuple = ()
    network: bool = False               # off unless a step needs to download
    gpus: str = ""                      # "", "nvidia" or "amd"
    user: str = ""                      # "uid:gid" ("" : the image's, root)
    env: dict = field(default_factory=dict)
    workdir: str = ""
    name: str = ""
    extra: tuple = ()                   # more engine options (--cpuset-cpus=..., --ipc=host)

    def container_name(self) -> str:
        return self.name or NAME_PREFIX + uuid.uuid4().hex[:12]


def secret_environ(env: dict, environ: dict) -> dict:
    """The environment the engine's command runs in: `environ` and the secrets of a container's `env`
    (cmcontract.secret: --api_key's VLLM_API_KEY). run_args names them only (`-e NAME`): never in an
    argv every user of the machine can read (ps) or the container's recorded command."""
    return {**environ, **{k: v for k, v in env.items() if is_secret(k)}}


def gpu_args(kind: str, engine: Engine) -> list[str]:
    """The engine's arguments that pass the host's GPUs through."""
    if kind == "nvidia":           # podman: CDI (nvidia-ctk cdi generate); docker: the NVIDIA runtime
        return ["--device", f"{CDI_NVIDIA}=all"] if engine.kind == "podman" else ["--gpus", "all"]
    if kind == "amd":              # ROCm: the kernel driver's and the render nodes, as AMD documents
        return [arg for device in AMD_DEVICES for arg in ("--device", device)] + [
            "--group-add", "video", "--security-opt", "seccomp=unconfined"]
    if kind:
        raise ValueError(f"GPU kind {kind!r}: nvidia, amd or none")
    return []


def cdi_kinds(dirs: tuple) -> set:
    """The device kinds (nvidia.com/gpu, ...) the CDI specs in `dirs` define (.yaml or .json files, as
    podman reads them)."""
    kinds = set()
    for folder in dirs:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if not name.endswith((".yaml", ".json")):
                continue
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    spec = json.load(f) if name.endswith(".json") else yaml.safe_load(f)
            except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError):
                continue                        # podman skips a spec it cannot read too
            if isinstance(spec, dict) and isinstance(spec.get("kind"), str):
                kinds.add(spec["kind"])
    return kinds


def check_gpus(kind: str, engine: Engine, dirs: tuple = (), devices: tuple = ()) -> None:
    """ContainerError, before any container starts, where the engine cannot pass these GPUs: podman
    passes NVIDIA's by CDI, which needs a spec of nvidia.com/gpu (the NVIDIA Container Toolkit writes
    it) in `dirs` (default CDI_DIRS); AMD's are their device files (`devices`, default AMD_DEVICES),
    which must exist (the engine's own error names the file, not the fix)."""
    dirs, devices = dirs or CDI_DIRS, devices or AMD_DEVICES
    missing = [d for d in devices if not os.path.exists(d)] if kind == "amd" else []
    if missing:
        raise ContainerError(f"AMD GPUs go to a container as {' and '.join(devices)} (ROCm), and this host has no "
                             f"{' or '.join(missing)}; fix: load ROCm's kernel driver (amdgpu, with ROCm's "
                             "install; `ls /dev/kfd` then lists it), or run on the node that has the GPUs")
    if kind == "nvidia" and engine.kind == "podman" and CDI_NVIDIA not in cdi_kinds(dirs):
        raise ContainerError(f"podman passes NVIDIA GPUs to a container by CDI ({CDI_NVIDIA}=all), and no CDI "
                             f"spec in {' or '.join(dirs)} defines {CDI_NVIDIA}; fix: sudo nvidia-ctk cdi generate "
                             "--output=/etc/cdi/nvidia.yaml (NVIDIA Container Toolkit; again after a driver "
                             "update), or --container_engine=docker with NVIDIA's runtime")


def run_args(spec: RunSpec, engine: Engine, name: str) -> list[str]:
    args = ["run", "--rm", "--name", name, "--pull=never",
            "--network", "host" if spec.network else "none", "--init"]
    usage_off = {k: v for k, v in ENV if k in ("VLLM_NO_USAGE_STATS", "DO_NOT_TRACK", "RAY_USAGE_STATS_ENABLED",
                                               "HF_HUB_DISABLE_TELEMETRY")}
    for key, value in sorted({**usage_off, **spec.env}.items()):
        args += ["-e", key if is_secret(key) else f"{key}={value}"]    # `-e NAME`: from the engine's environment
    for m in spec.mounts:
        args += ["--mount", m.arg()]
    if spec.user:
        args += ["--user", spec.user]
    if spec.workdir:
        args += ["--workdir", spec.workdir]
    return args + list(spec.extra) + gpu_args(spec.gpus, engine) + [spec.image, *spec.argv]


def remove_argv(engine: Engine, name: str) -> list[str]:
    """The engine's command that removes the container `name` (a server's record keeps it)."""
    return engine.argv(*REMOVE[engine.kind], name)


def remove(engine: Engine, name: str) -> None:
    """The container gone (stopped first); nothing said when it is already gone."""
    engine.run(*REMOVE[engine.kind], name, check=False, timeout=120)


def run(engine: Engine, spec: RunSpec, timeout: Optional[float] = None, capture: bool = True) -> subprocess.CompletedProcess:
    """The command's result. The container is removed when it ends, and also when this process is
    interrupted (Ctrl-C) or told to stop (SIGTERM, SIGHUP) while it runs."""
    name = spec.container_name()
    argv = engine.argv(*run_args(spec, engine, name))
    previous = {}

    def stop(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            previous[sig] = signal.signal(sig, stop)
        except ValueError:          # not the main thread: the caller's own handling stands
            pass
    try:
        return subprocess.run(argv, capture_output=capture, text=True, timeout=timeout,
                              env=secret_environ(spec.env, engine.environ()), stdin=subprocess.DEVNULL)
    finally:
        remove(engine, name)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
