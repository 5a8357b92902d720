"""Knowing the machine: parsers of system tools' output, detection with named gaps, the MLPerf
system description builder, and helpers for venvs, pinned packages, LoadGen and the inference sources."""

from .cpu import CpuInfo, parse_lscpu
from .gpu import AcceleratorInfo, Gpu, nvidia_info, parse_amd_smi_static, parse_rocm_smi
from .memory import MemoryInfo, format_size_like_free, parse_dmidecode_memory, parse_meminfo
from .network import NetCard, NetworkInfo, read_sys_class_net
from .probe import Gap, SystemFacts, collect
from .storage import StorageInfo, parse_lsblk_json
from .sut import REQUIRED_FIELDS, SoftwareStack, SutDescription, SutInputs, build_sut_description

__all__ = [
    "AcceleratorInfo", "CpuInfo", "Gap", "Gpu", "MemoryInfo", "NetCard", "NetworkInfo", "REQUIRED_FIELDS",
    "SoftwareStack", "StorageInfo", "SutDescription", "SutInputs", "SystemFacts", "build_sut_description",
    "collect", "format_size_like_free", "nvidia_info", "parse_amd_smi_static", "parse_dmidecode_memory",
    "parse_lscpu", "parse_lsblk_json", "parse_meminfo", "parse_rocm_smi", "read_sys_class_net",
]
