"""The detection steps' edge: detected facts -> the CM_* env keys they publish (the other direction,
env -> the typed inputs of the system description, is sutenv.py: a detection step does not import
the description builder, so editing it does not re-key what is built on detection)."""

from __future__ import annotations

from cmcontract.yesno import yes_no

from .gpu import AcceleratorInfo, format_gpu_memory
from .probe import SystemFacts


def host_env(facts: SystemFacts) -> dict[str, str]:
    """CM_HOST_CPU_* (names as cm4mlops' detect-cpu), CM_HOST_MEMORY_*, CM_HOST_DISK_*, CM_HOST_NETWORK*."""
    env: dict[str, str] = {}
    cpu = facts.cpu
    if cpu:
        env.update({
            "CM_HOST_CPU_MODEL_NAME": cpu.model_name,
            "CM_HOST_CPU_VENDOR_ID": cpu.vendor,
            "CM_HOST_CPU_ARCHITECTURE": cpu.architecture,
            "CM_HOST_CPU_MAX_MHZ": cpu.max_mhz,
            "CM_HOST_CPU_HYPERVISOR": cpu.hypervisor,
            "CM_HOST_CPU_FLAGS_KEY": ",".join(cpu.key_flags),
            "CM_HOST_CPU_HAS_AVX512": yes_no(any(f.startswith("avx512") for f in cpu.flags)),
            "CM_HOST_CPU_HAS_AMX": yes_no(any(f.startswith("amx") for f in cpu.flags)),
            "CM_HOST_CPU_CACHES": cpu.caches_text,
        })
        for key, value in (("SOCKETS", cpu.sockets), ("PHYSICAL_CORES_PER_SOCKET", cpu.cores_per_socket),
                           ("THREADS_PER_CORE", cpu.threads_per_core), ("TOTAL_LOGICAL_CORES", cpu.logical_cpus),
                           ("TOTAL_CORES", cpu.logical_cpus), ("TOTAL_PHYSICAL_CORES", cpu.total_cores),
                           ("NUMA_NODES", cpu.numa_nodes)):
            if value is not None:
                env[f"CM_HOST_CPU_{key}"] = str(value)
        for lvl in ("L1d", "L1i", "L2", "L3"):
            if lvl in cpu.caches:
                env[f"CM_HOST_CPU_{lvl.upper()}_CACHE_SIZE"] = cpu.caches[lvl]
    if facts.memory:
        env["CM_HOST_MEMORY_CAPACITY"] = facts.memory.capacity_text
        env["CM_HOST_MEMORY_BYTES"] = str(facts.memory.total_bytes)
        env["CM_HOST_MEMORY_CONFIGURATION"] = facts.memory.configuration
    if facts.storage and facts.storage.disks:
        env["CM_HOST_DISK_CAPACITY"] = facts.storage.capacity_text
        env["CM_HOST_DISK_TYPE"] = facts.storage.type_text
    if facts.network:
        env["CM_HOST_NETWORK_CARD_COUNT"] = str(facts.network.card_count)
        env["CM_HOST_NETWORKING"] = facts.network.networking_text
    return env


def gpu_env(acc: AcceleratorInfo | None) -> dict[str, str]:
    """CM_GPU_*: vendor none/nvidia/amd (or unknown when the tool failed), count, model, memory, clocks."""
    if acc is None:
        return {"CM_GPU_VENDOR": "unknown", "CM_GPU_COUNT": ""}
    env = {"CM_GPU_VENDOR": acc.vendor, "CM_GPU_COUNT": str(acc.count)}
    if not acc.gpus:
        return env
    g = acc.gpus[0]
    clock = g.clock_base_mhz or g.clock_max_mhz
    env.update({
        "CM_GPU_NAME": acc.model_name,
        "CM_GPU_MEMORY_CAPACITY": format_gpu_memory(g.physical_memory_gib),
        "CM_GPU_MEMORY_MIB": str(g.memory_total_mib or ""),
        "CM_GPU_MEMORY_TYPE": g.memory_type,
        "CM_GPU_FREQUENCY_MHZ": str(clock or ""),
        "CM_GPU_DRIVER_VERSION": g.driver_version,
        "CM_GPU_CUDA_VERSION": acc.cuda_version,
        "CM_GPU_HOST_INTERCONNECT": f"PCIe Gen{g.pcie_gen} x{g.pcie_width}" if g.pcie_gen and g.pcie_width else "",
        "CM_GPU_INTERCONNECT": acc.interconnect,
    })
    return env
