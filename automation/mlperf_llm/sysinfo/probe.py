"""Run the detection commands and gather their parsed facts; every tool that is missing or fails
becomes a named `Gap` instead of an exception, so a partial description can still be written."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Callable

from .cpu import CpuInfo, LscpuParseError, parse_lscpu
from .gpu import (NVIDIA_QUERY_ARGS, AcceleratorInfo, GpuParseError, nvidia_info,
                  parse_amd_smi_static, parse_rocm_smi)
from .memory import MemoryInfo, MemoryParseError, parse_dmidecode_memory, parse_meminfo
from .network import NetworkInfo, read_sys_class_net
from .storage import LSBLK_ARGS, StorageInfo, StorageParseError, parse_lsblk_json


@dataclass(frozen=True)
class CommandResult:
    returncode: int
    stdout: str
    stderr: str = ""

    @property
    def first_error_line(self) -> str:
        text = (self.stderr or self.stdout).strip()
        return text.splitlines()[0] if text else f"exit status {self.returncode}"


Runner = Callable[[list[str]], CommandResult]
NOT_FOUND = 127


def run_command(argv: list[str], timeout: float = 30) -> CommandResult:
    """Run a tool with the C locale; a missing tool is exit 127, like a shell says it."""
    if shutil.which(argv[0]) is None:
        return CommandResult(NOT_FOUND, "", f"{argv[0]}: command not found")
    env = dict(os.environ, LC_ALL="C")
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return CommandResult(124, "", f"{argv[0]} timed out after {timeout:.0f} s")
    return CommandResult(p.returncode, p.stdout, p.stderr)


@dataclass(frozen=True)
class Gap:
    source: str          # the tool or file, e.g. "nvidia-smi"
    reason: str          # what went wrong, e.g. "command not found"
    affects: str         # which description fields stay undetected

    def __str__(self) -> str:
        reason = self.reason[len(self.source) + 2:] if self.reason.startswith(self.source + ": ") else self.reason
        return f"{self.source}: {reason} (affects {self.affects})"


@dataclass
class SystemFacts:
    cpu: CpuInfo | None = None
    memory: MemoryInfo | None = None
    storage: StorageInfo | None = None
    network: NetworkInfo | None = None
    accelerators: AcceleratorInfo | None = None    # None = unknown; AcceleratorInfo.none() = no accelerator
    operating_system: str = ""
    gaps: list[Gap] = field(default_factory=list)


def os_description(os_release: str, kernel: str, glibc: str = "") -> str:
    """"Ubuntu 23.04 (linux-6.2.0-39-generic-glibc2.37)" as in the seeds."""
    fields = dict(re.findall(r'^(\w+)="?([^"\n]*)"?$', os_release, re.M))
    name = fields.get("NAME", "Linux").split()[0] if fields.get("NAME") else "Linux"
    version = fields.get("VERSION_ID", "")
    head = f"{name} {version}".strip()
    inner = f"linux-{kernel}" + (f"-glibc{glibc}" if glibc else "")
    return f"{head} ({inner})" if kernel else head


def _detect_cpu(run: Runner, facts: SystemFacts) -> None:
    res = run(["lscpu"])
    affects = "host_processor_* fields"
    if res.returncode != 0:
        facts.gaps.append(Gap("lscpu", res.first_error_line, affects))
        return
    try:
        facts.cpu = parse_lscpu(res.stdout)
    except LscpuParseError as e:
        facts.gaps.append(Gap("lscpu", str(e), affects))


def _dmidecode_hint(res: CommandResult) -> str:
    text = res.stdout + res.stderr
    if res.returncode == NOT_FOUND:
        return "install it (apt-get install dmidecode); it reads the DIMM layout as root"
    if re.search(r"permission denied|operation not permitted", text, re.I):
        return "it needs root: run this step with sudo"
    if re.search(r"/dev/mem|No SMBIOS", text):
        return "this machine exposes no SMBIOS table (VM or container without /sys/firmware/dmi)"
    return "see dmidecode -t memory"


def _detect_memory(run: Runner, facts: SystemFacts, meminfo_path: str) -> None:
    try:
        with open(meminfo_path) as f:
            total = parse_meminfo(f.read())
    except (OSError, MemoryParseError) as e:
        facts.gaps.append(Gap(meminfo_path, str(e), "host_memory_capacity"))
        return
    res = run(["dmidecode", "-t", "memory"])
    config = ""
    if res.returncode != 0:
        facts.gaps.append(Gap("dmidecode", f"{res.first_error_line}: {_dmidecode_hint(res)}",
                              "host_memory_configuration"))
    else:
        try:
            config = parse_dmidecode_memory(res.stdout)
        except MemoryParseError as e:
            facts.gaps.append(Gap("dmidecode", str(e), "host_memory_configuration"))
    facts.memory = MemoryInfo(total_bytes=total, configuration=config)


def _detect_storage(run: Runner, facts: SystemFacts) -> None:
    res = run(["lsblk", *LSBLK_ARGS])
    affects = "host_storage_capacity, host_storage_type"
    if res.returncode != 0:
        facts.gaps.append(Gap("lsblk", res.first_error_line, affects))
        return
    try:
        facts.storage = parse_lsblk_json(res.stdout)
    except StorageParseError as e:
        facts.gaps.append(Gap("lsblk", str(e), affects))


def detect_accelerators(run: Runner, facts: SystemFacts) -> None:
    affects = "accelerator_* fields"
    query = run(["nvidia-smi", *NVIDIA_QUERY_ARGS])
    if query.returncode != NOT_FOUND:
        if query.returncode != 0:
            facts.gaps.append(Gap("nvidia-smi", query.first_error_line, affects))
            return
        banner, topo = run(["nvidia-smi"]), run(["nvidia-smi", "topo", "-m"])
        nvlink = run(["nvidia-smi", "nvlink", "-s"])
        try:
            extra = [r.stdout if r.returncode == 0 else "" for r in (banner, topo, nvlink)]
            facts.accelerators = nvidia_info(query.stdout, *extra)
        except GpuParseError as e:
            facts.gaps.append(Gap("nvidia-smi", str(e), affects))
        return
    for argv, parser in ((["amd-smi", "static", "--asic", "--vram", "--bus", "--json"], parse_amd_smi_static),
                         (["rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json"], parse_rocm_smi)):
        res = run(argv)
        if res.returncode == NOT_FOUND:
            continue
        if res.returncode != 0:
            facts.gaps.append(Gap(argv[0], res.first_error_line, affects))
            return
        try:
            gpus = parser(res.stdout)
        except GpuParseError as e:
            facts.gaps.append(Gap(argv[0], str(e), affects))
            return
        facts.accelerators = AcceleratorInfo(vendor="amd", gpus=tuple(gpus)) if gpus else AcceleratorInfo.none()
        return
    facts.accelerators = AcceleratorInfo.none()        # no vendor tool at all: no accelerator


def _glibc_version() -> str:
    libc = platform.libc_ver()
    return libc[1] if libc[0] == "glibc" else ""


def collect(run: Runner = run_command, meminfo_path: str = "/proc/meminfo",
            net_root: str = "/sys/class/net", os_release_path: str = "/etc/os-release",
            kernel: str | None = None, glibc: str | None = None, accelerators: bool = True) -> SystemFacts:
    """Detect everything (accelerators=False skips the vendor tools); `kernel`/`glibc` default to this
    process's (tests pass recorded values)."""
    facts = SystemFacts()
    _detect_cpu(run, facts)
    _detect_memory(run, facts, meminfo_path)
    _detect_storage(run, facts)
    facts.network = read_sys_class_net(net_root)
    if not facts.network.cards:
        facts.gaps.append(Gap(net_root, "no physical network interface found", "host_networking"))
    if accelerators:
        detect_accelerators(run, facts)
    try:
        with open(os_release_path) as f:
            os_release = f.read()
        facts.operating_system = os_description(os_release, platform.release() if kernel is None else kernel,
                                                _glibc_version() if glibc is None else glibc)
    except OSError as e:
        facts.gaps.append(Gap(os_release_path, str(e), "operating_system"))
    return facts
