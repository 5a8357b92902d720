"""Host CPU facts from `lscpu` output.

`parse_lscpu` accepts both layouts lscpu prints: the flat one (what `lscpu > file` writes, and what
submitters' tools recorded: `L1d cache: 1.1 MiB (24 instances)`) and the hierarchic one a terminal
shows (`Caches (sum of all):` then `L1d: ...`). Values are kept as lscpu wrote them where submitters
copy them verbatim (model name, cache sizes, `CPU max MHz`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

CACHE_LEVELS = ("L1d", "L1i", "L2", "L3")

# Flags a reviewer of an LLM inference result cares about (vector width, matrix engines, low precision).
_KEY_FLAG_PATTERNS = (r"avx512.*", r"amx.*", r"avx_vnni", r"avx2", r"fma")


@dataclass(frozen=True)
class CpuInfo:
    model_name: str
    vendor: str = ""
    architecture: str = ""
    logical_cpus: int | None = None
    sockets: int | None = None
    cores_per_socket: int | None = None
    threads_per_core: int | None = None
    max_mhz: str = ""                                   # lscpu's text, e.g. "4800.0000"; "" when absent
    caches: dict[str, str] = field(default_factory=dict)  # {"L1d": "1.1 MiB (24 instances)", ...}
    numa_nodes: int | None = None
    flags: tuple[str, ...] = ()
    hypervisor: str = ""

    @property
    def caches_text(self) -> str:
        """`L1d cache: ..., L1i cache: ..., L2 cache: ..., L3 cache: ...` as submitters write it."""
        return ", ".join(f"{lvl} cache: {self.caches[lvl]}" for lvl in CACHE_LEVELS if lvl in self.caches)

    @property
    def key_flags(self) -> tuple[str, ...]:
        pats = [re.compile(p) for p in _KEY_FLAG_PATTERNS]
        return tuple(f for f in self.flags if any(p.fullmatch(f) for p in pats))

    @property
    def total_cores(self) -> int | None:
        if self.sockets is None or self.cores_per_socket is None:
            return None
        return self.sockets * self.cores_per_socket

    def topology_warning(self) -> str:
        """A sentence when lscpu's topology does not add up (seen in VM guests), else ""."""
        parts = (self.sockets, self.cores_per_socket, self.threads_per_core, self.logical_cpus)
        if any(p is None for p in parts):
            return ""
        product = self.sockets * self.cores_per_socket * self.threads_per_core
        if product == self.logical_cpus:
            return ""
        return (f"lscpu topology does not add up: {self.sockets} socket(s) x {self.cores_per_socket} "
                f"core(s) x {self.threads_per_core} thread(s) = {product}, but CPU(s) = {self.logical_cpus}"
                + (f" ({self.hypervisor} guest)" if self.hypervisor else ""))


class LscpuParseError(ValueError):
    pass


_HIER_CACHE = re.compile(r"^(L1d|L1i|L2|L3)$")


def _lscpu_pairs(text: str) -> dict[str, str]:
    """`Key: value` lines -> dict (first occurrence wins). The hierarchic layout wraps the flag list at
    the terminal width, mid-word ("re" / "p_good"): continuation lines are cut at the value column
    and joined as they are."""
    pairs: dict[str, str] = {}
    last_key, value_col = "", 0
    for raw in text.splitlines():
        if not raw.strip():
            continue
        if last_key == "Flags" and ":" not in raw and raw[:value_col].strip() == "":
            pairs["Flags"] += raw[value_col:]
            continue
        if ":" not in raw:
            continue
        key, _, value = raw.partition(":")
        value_col = len(raw) - len(value.lstrip())
        key, value = key.strip(), value.strip()
        if _HIER_CACHE.match(key):                      # hierarchic: "  L1d:  1.1 MiB (24 instances)"
            key = f"{key} cache"
        if key and key not in pairs:
            pairs[key] = value
        last_key = key
    return pairs


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    m = re.match(r"\s*(\d+)", value)
    return int(m.group(1)) if m else None


def parse_lscpu(text: str) -> CpuInfo:
    """Parse `LC_ALL=C lscpu` output (flat or hierarchic). Raises LscpuParseError if it is not lscpu."""
    pairs = _lscpu_pairs(text)
    model = pairs.get("Model name", "")
    if not model and "CPU(s)" not in pairs:
        raise LscpuParseError("not lscpu output: neither 'Model name' nor 'CPU(s)' found "
                              "(run it as `LC_ALL=C lscpu`; localized output is not understood)")
    cores = _int(pairs.get("Core(s) per socket")) or _int(pairs.get("Core(s) per cluster"))
    sockets_text = pairs.get("Socket(s)", "")
    sockets = 1 if sockets_text == "-" else _int(sockets_text)  # ARM lscpu prints "-"
    caches = {lvl: pairs[f"{lvl} cache"] for lvl in CACHE_LEVELS if f"{lvl} cache" in pairs}
    return CpuInfo(
        model_name=model,
        vendor=pairs.get("Vendor ID", ""),
        architecture=pairs.get("Architecture", ""),
        logical_cpus=_int(pairs.get("CPU(s)")),
        sockets=sockets,
        cores_per_socket=cores,
        threads_per_core=_int(pairs.get("Thread(s) per core")),
        max_mhz=pairs.get("CPU max MHz", ""),
        caches=caches,
        numa_nodes=_int(pairs.get("NUMA node(s)")),
        flags=tuple(pairs.get("Flags", "").split()),
        hypervisor=pairs.get("Hypervisor vendor", ""),
    )
