"""Host memory: capacity from `/proc/meminfo` (or `free`), configuration from `dmidecode -t memory`."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class MemoryInfo:
    total_bytes: int
    configuration: str = ""      # "16x 32GB DDR5-4800"; "" when dmidecode could not be read

    @property
    def capacity_text(self) -> str:
        return format_size_like_free(self.total_bytes)


class MemoryParseError(ValueError):
    pass


def format_size_like_free(num_bytes: int) -> str:
    """What `free -h --si` prints for a total: "202G", "1.5T", "25G" (procps: one decimal if it fits
    in 4 characters, else the truncated integer)."""
    value = float(num_bytes)
    for unit in "BKMGTPE":
        if unit != "B":
            value /= 1000
        text = f"{value:.1f}{unit}"
        if unit != "B" and len(text) <= 4:
            return text
        text = f"{int(value)}{unit}"
        if len(text) <= 4:
            return text
    return f"{int(value)}E"


def parse_meminfo(text: str) -> int:
    """`/proc/meminfo` -> MemTotal in bytes."""
    m = re.search(r"^MemTotal:\s+(\d+)\s*kB", text, re.M)
    if not m:
        raise MemoryParseError("no 'MemTotal: N kB' line: not /proc/meminfo content")
    return int(m.group(1)) * 1024


def parse_free_bytes(text: str) -> int:
    """`free -b` -> total bytes of the Mem: row."""
    m = re.search(r"^Mem:\s+(\d+)\s", text, re.M)
    if not m:
        raise MemoryParseError("no 'Mem:' row with a byte count: run `free -b`")
    return int(m.group(1))


def _size_gb(text: str) -> int | None:
    m = re.match(r"(\d+)\s*(MB|GB|TB)", text)
    if not m:
        return None
    n, unit = int(m.group(1)), m.group(2)
    return n // 1024 if unit == "MB" else n * 1024 if unit == "TB" else n


def parse_dmidecode_memory(text: str) -> str:
    """`dmidecode -t memory` -> "16x 32GB DDR5-4800" (groups joined by " + "); "" if no module is listed."""
    if "Memory Device" not in text:
        if re.search(r"permission denied|must be root|/dev/mem", text, re.I):
            raise MemoryParseError("dmidecode could not read the DMI table (needs root: run it with sudo)")
        return ""
    groups: Counter[str] = Counter()
    for block in text.split("Memory Device")[1:]:
        fields = dict(re.findall(r"^\s+([^:\n]+):\s*(.*)$", block, re.M))
        size = _size_gb(fields.get("Size", ""))
        if not size:
            continue                                    # "No Module Installed" slots
        mem_type = fields.get("Type", "").strip()
        speed = re.match(r"(\d+)", fields.get("Speed", "") or "")
        label = f"{size}GB {mem_type}" + (f"-{speed.group(1)}" if speed else "")
        groups[label] += 1
    return " + ".join(f"{n}x {label}" for label, n in sorted(groups.items(), key=lambda kv: -kv[1]))
