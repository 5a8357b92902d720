"""Accelerator facts from `nvidia-smi` (CSV queries, banner, `topo -m`) and from `amd-smi`/`rocm-smi` JSON,
and an accelerator's model from any of the names tools and systems JSONs give it (`accelerator_key`).

No accelerator is an answer (`AcceleratorInfo.none()`), not an error.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass

# The query detect-gpu runs; the parser reads the header, so extra or reordered columns are fine.
NVIDIA_QUERY_FIELDS = (
    "index", "name", "memory.total", "clocks.max.graphics", "clocks.default_applications.graphics",
    "driver_version", "pcie.link.gen.max", "pcie.link.width.max", "ecc.mode.current",
)
NVIDIA_QUERY_ARGS = ("--query-gpu=" + ",".join(NVIDIA_QUERY_FIELDS), "--format=csv")

# nvidia-smi cannot say the memory technology; this short table can (unknown -> left for review).
_MEMORY_TYPES = (
    (r"H100.*HBM3|H100 SXM|H100 80GB HBM3", "HBM3"), (r"H200", "HBM3e"), (r"H100", "HBM2e"),
    (r"A100", "HBM2e"), (r"B200|GB200", "HBM3e"), (r"L40S|L40\b|L4\b|A10\b|RTX 6000 Ada|A40\b", "GDDR6"),
    (r"RTX 4090|RTX 4080|RTX 3090", "GDDR6X"), (r"MI300X|MI300A", "HBM3"), (r"MI325X", "HBM3E"),
    (r"MI250|MI210", "HBM2e"),
)


def memory_type_for(model_name: str) -> str:
    for pattern, mem_type in _MEMORY_TYPES:
        if re.search(pattern, model_name):
            return mem_type
    return ""


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    memory_total_mib: int | None = None       # as the driver reports it (after ECC carve-out)
    clock_max_mhz: int | None = None          # highest clock the board can reach
    clock_base_mhz: int | None = None         # default application clock (= CUDA's "max clock rate")
    driver_version: str = ""
    pcie_gen: int | None = None
    pcie_width: int | None = None
    ecc_enabled: bool | None = None

    @property
    def memory_type(self) -> str:
        return memory_type_for(self.name)

    @property
    def physical_memory_gib(self) -> float | None:
        """Board memory: GDDR boards with ECC on lose 1/16 to ECC, which is added back here."""
        if self.memory_total_mib is None:
            return None
        mib = self.memory_total_mib
        if self.ecc_enabled and self.memory_type.startswith("GDDR"):
            mib = mib * 16 / 15
        return mib / 1024


@dataclass(frozen=True)
class AcceleratorInfo:
    vendor: str                                   # "nvidia", "amd" or "none"
    gpus: tuple[Gpu, ...] = ()
    cuda_version: str = ""
    interconnect: str = ""                        # e.g. "NVLink (NV18)"; "" when none was seen
    interconnect_topology: str = ""

    @classmethod
    def none(cls) -> "AcceleratorInfo":
        return cls(vendor="none")

    @property
    def count(self) -> int:
        return len(self.gpus)

    @property
    def model_name(self) -> str:
        names = sorted({g.name for g in self.gpus})
        return " + ".join(names) if names else "N/A"


class GpuParseError(ValueError):
    pass


def _na(value: str) -> str | None:
    value = value.strip()
    if not value or value.startswith("[") or value in ("N/A", "Not Supported"):
        return None
    return value


def _num(value: str | None) -> int | None:
    if value is None:
        return None
    m = re.match(r"\s*(\d+)", value)
    return int(m.group(1)) if m else None


def parse_nvidia_smi_query(text: str) -> list[Gpu]:
    """`nvidia-smi --query-gpu=... --format=csv` (with header) -> one Gpu per row."""
    rows = list(csv.reader(io.StringIO(text.strip()), skipinitialspace=True))
    if not rows or "name" not in [h.split(" [")[0].strip() for h in rows[0]]:
        raise GpuParseError("nvidia-smi CSV has no header with 'name' (run it with --format=csv, "
                            "without noheader)")
    header = [h.split(" [")[0].strip() for h in rows[0]]
    gpus = []
    for n, row in enumerate(rows[1:]):
        if not row:
            continue
        if len(row) != len(header):
            raise GpuParseError(f"nvidia-smi CSV row {n + 2} has {len(row)} fields, header has {len(header)}")
        rec = {k: _na(v) for k, v in zip(header, row)}
        ecc = rec.get("ecc.mode.current")
        gpus.append(Gpu(
            index=_num(rec.get("index")) if rec.get("index") is not None else n,
            name=rec.get("name") or "",
            memory_total_mib=_num(rec.get("memory.total")),
            clock_max_mhz=_num(rec.get("clocks.max.graphics")),
            clock_base_mhz=_num(rec.get("clocks.default_applications.graphics")),
            driver_version=rec.get("driver_version") or "",
            pcie_gen=_num(rec.get("pcie.link.gen.max")),
            pcie_width=_num(rec.get("pcie.link.width.max")),
            ecc_enabled=None if ecc is None else ecc.lower() == "enabled",
        ))
    return gpus


def parse_nvidia_smi_banner(text: str) -> dict[str, str]:
    """Plain `nvidia-smi` table header -> {'driver_version': ..., 'cuda_version': ...}."""
    out = {}
    m = re.search(r"Driver Version:\s*([\d.]+)", text)
    if m:
        out["driver_version"] = m.group(1)
    m = re.search(r"CUDA Version:\s*([\d.]+)", text)
    if m:
        out["cuda_version"] = m.group(1)
    return out


def parse_nvidia_topo(text: str) -> tuple[str, str]:
    """`nvidia-smi topo -m` -> (interconnect, topology). NVLink shows as NV<n> between GPU pairs."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return "", ""
    header = lines[0].split()
    gpu_cols = [i for i, h in enumerate(header) if re.fullmatch(r"GPU\d+", h)]
    links: dict[tuple[str, str], str] = {}
    for ln in lines[1:]:
        cells = ln.split()
        if not cells or not re.fullmatch(r"GPU\d+", cells[0]):
            continue
        for col in gpu_cols:
            if col + 1 < len(cells) and header[col] != cells[0]:
                links[tuple(sorted((cells[0], header[col])))] = cells[col + 1]
    nv = sorted({v for v in links.values() if v.startswith("NV")})
    if not nv:
        return "", ""
    pairs_with_nv = sum(1 for v in links.values() if v.startswith("NV"))
    topology = ("all-to-all" if pairs_with_nv == len(links) else f"{pairs_with_nv} of {len(links)} GPU pairs")
    return f"NVLink ({', '.join(nv)} per GPU pair in nvidia-smi topo -m)", f"NVLink, {topology}"


def parse_nvidia_nvlink_status(text: str) -> tuple[int, float]:
    """`nvidia-smi nvlink -s` -> (active links per GPU, GB/s per link) of GPU 0; (0, 0.0) if none."""
    per_gpu: list[list[float]] = []
    for line in text.splitlines():
        if re.match(r"GPU \d+:", line):
            per_gpu.append([])
        m = re.search(r"Link \d+:\s*([\d.]+)\s*GB/s", line)
        if m and per_gpu:
            per_gpu[-1].append(float(m.group(1)))
    if not per_gpu or not per_gpu[0]:
        return 0, 0.0
    return len(per_gpu[0]), max(per_gpu[0])


def nvidia_info(query_csv: str, banner: str = "", topo: str = "", nvlink: str = "") -> AcceleratorInfo:
    gpus = parse_nvidia_smi_query(query_csv)
    if not gpus:
        return AcceleratorInfo.none()
    interconnect, topology = parse_nvidia_topo(topo) if topo else ("", "")
    links, speed = parse_nvidia_nvlink_status(nvlink) if nvlink else (0, 0.0)
    if links:
        interconnect = f"NVLink, {links} links x {speed:g} GB/s per GPU"
    return AcceleratorInfo(
        vendor="nvidia", gpus=tuple(gpus),
        cuda_version=parse_nvidia_smi_banner(banner).get("cuda_version", "") if banner else "",
        interconnect=interconnect, interconnect_topology=topology,
    )


def _amd_size_mib(size) -> int | None:
    """amd-smi writes {"value": 196592, "unit": "MB"} (newer) or "196592 MB" (older)."""
    if isinstance(size, dict):
        value, unit = size.get("value"), str(size.get("unit", "MB"))
    else:
        m = re.match(r"\s*(\d+)\s*(\w+)?", str(size or ""))
        if not m:
            return None
        value, unit = m.group(1), m.group(2) or "MB"
    try:
        value = int(value)
    except (TypeError, ValueError):
        return None
    return value // 1024 if unit.upper() in ("KB", "KIB") else value * 1024 if unit.upper() in ("GB", "GIB") else value


def parse_amd_smi_static(text: str) -> list[Gpu]:
    """`amd-smi static --asic --vram --bus --json` -> Gpus."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise GpuParseError(f"amd-smi output is not JSON ({e})") from e
    if isinstance(data, dict):
        data = data.get("gpu_data", [data])
    gpus = []
    for n, rec in enumerate(data):
        asic, vram, bus = rec.get("asic", {}), rec.get("vram", {}), rec.get("bus", {})
        gen = re.search(r"(\d+)", str(bus.get("pcie_interface_version", "")))
        gpus.append(Gpu(
            index=int(rec.get("gpu", n)), name=asic.get("market_name", ""),
            memory_total_mib=_amd_size_mib(vram.get("size")),
            driver_version=str(rec.get("driver", {}).get("version", "")),
            pcie_gen=int(gen.group(1)) if gen else None,
            pcie_width=_num(str(bus.get("max_pcie_width", ""))),
        ))
    return gpus


def parse_rocm_smi(text: str) -> list[Gpu]:
    """`rocm-smi --showproductname --showmeminfo vram --json` -> Gpus."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise GpuParseError(f"rocm-smi output is not JSON ({e})") from e
    gpus = []
    for key in sorted((k for k in data if k.startswith("card")), key=lambda k: int(k[4:] or 0)):
        rec = data[key]
        total = _num(rec.get("VRAM Total Memory (B)"))
        gpus.append(Gpu(index=int(key[4:] or 0), name=rec.get("Card Series") or rec.get("Card series", ""),
                        memory_total_mib=total // (1024 * 1024) if total else None))
    return gpus


def format_gpu_memory(gib: float | None) -> str:
    """The board's memory as systems JSONs write it: the driver reports a little less than the board
    holds (a reserve), never more, so the whole number at or above `gib` within 1% of it (23.99 GiB
    -> "24 GB"; the H200's 140.4 -> "141 GB", as NVIDIA and its submitters name it), else one
    decimal (23.6 GiB -> "23.6 GB")."""
    if gib is None:
        return ""
    whole = math.ceil(round(gib, 6))            # 80.0000001 of a float's sum is 80
    if whole and (whole - gib) / whole <= 0.01:
        return f"{whole} GB"
    return f"{gib:.1f} GB"


# Accelerator models by the token that names them, as nvidia-smi ("NVIDIA H100 80GB HBM3", "Tesla T4"),
# amd-smi / rocm-smi ("AMD Instinct MI325X", "MI300X") and systems JSONs ("NVIDIA H100-SXM-80GB",
# "H200-SXM-141GB") write them: token -> vendor. A model is its family: H100 SXM, PCIe and NVL are one.
KNOWN_MODELS = {
    **dict.fromkeys(("gb300", "b300", "gb200", "b200", "b100", "gh200", "h200", "h100", "h800", "h20", "l40s", "l40",
                     "l4", "a100", "a800", "a40", "a30", "a10g", "a10", "a2", "t4", "v100", "p100", "p40", "p4"), "nvidia"),
    **dict.fromkeys(("mi355x", "mi350x", "mi325x", "mi308x", "mi300x", "mi300a", "mi250x", "mi250", "mi210", "mi100"),
                    "amd"),
    **dict.fromkeys(("gaudi3", "gaudi2"), "intel"),
}
VENDOR_WORDS = {"nvidia": "nvidia", "tesla": "nvidia", "geforce": "nvidia", "quadro": "nvidia", "rtx": "nvidia",
                "amd": "amd", "instinct": "amd", "radeon": "amd", "intel": "intel", "habana": "intel", "google": "google"}
NOT_MODEL = re.compile(r"\d+gb|hbm\d*e?|gddr\d*x?|sxm\d*|pcie\d*|nvl\d*|oam|gpu|accelerator|card|device")
VENDOR_LABELS = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel", "google": "Google"}


def accelerator_key(name: str) -> tuple[str, str]:
    """(vendor, model) of an accelerator's name, '' where not known: ("nvidia", "h100") for "NVIDIA
    H100 80GB HBM3", "H100-SXM5-80GB" and "NVIDIA H100-SXM-80GB"; ("amd", "mi325x") for "AMD Instinct
    MI325X 256GB HBM3e" and "MI325X". A model outside KNOWN_MODELS: the vendor of its vendor word
    (none: ''), and its first token with a digit that is not a memory size or a form factor (none: ''),
    so "NVIDIA RTX A6000" is ("nvidia", "a6000"), and "NVIDIA GPU" ("nvidia", ''): a model not known."""
    tokens = [t for t in re.split(r"[^a-z0-9]+", str(name).lower()) if t]
    vendor = next((VENDOR_WORDS[t] for t in tokens if t in VENDOR_WORDS), "")
    known = next((t for t in tokens if t in KNOWN_MODELS), "")
    if known:
        return KNOWN_MODELS[known], known
    rest = [t for t in tokens if t not in VENDOR_WORDS and not NOT_MODEL.fullmatch(t)]
    return vendor, next((t for t in rest if any(c.isdigit() for c in t)), "")


def same_model(published: tuple[str, str], here: tuple[str, str]) -> bool:
    """Whether two keys can be one model: their vendors and their models agree where both are known."""
    return all(not a or not b or a == b for a, b in zip(published, here))
