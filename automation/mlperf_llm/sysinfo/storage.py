"""Host storage from `lsblk -J -b -o NAME,SIZE,TYPE,ROTA,TRAN,MODEL`."""

from __future__ import annotations

import json
from dataclasses import dataclass

LSBLK_ARGS = ("-J", "-b", "-o", "NAME,SIZE,TYPE,ROTA,TRAN,MODEL")


@dataclass(frozen=True)
class Disk:
    name: str
    size_bytes: int
    kind: str            # "NVMe SSD", "SSD", "HDD", "Virtual disk"


@dataclass(frozen=True)
class StorageInfo:
    disks: tuple[Disk, ...]

    @property
    def capacity_text(self) -> str:
        """Total of whole disks, SI units as disks are sold: "3.8 TB", "275 GB"."""
        total = sum(d.size_bytes for d in self.disks)
        for unit, scale in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
            if total >= scale:
                value = total / scale
                return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"
        return f"{total} B"

    @property
    def type_text(self) -> str:
        kinds = sorted({d.kind for d in self.disks})
        return ", ".join(kinds)


class StorageParseError(ValueError):
    pass


def _kind(dev: dict) -> str:
    name, tran = str(dev.get("name", "")), (dev.get("tran") or "")
    if tran == "nvme" or name.startswith("nvme"):
        return "NVMe SSD"
    if name.startswith(("vd", "xvd")):
        return "Virtual disk"
    rota = dev.get("rota")
    rotational = rota in (True, "1", 1)
    return "HDD" if rotational else "SSD"


def parse_lsblk_json(text: str) -> StorageInfo:
    try:
        devices = json.loads(text)["blockdevices"]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise StorageParseError(f"not `lsblk -J` output ({e}); run lsblk {' '.join(LSBLK_ARGS)}") from e
    disks = []
    for dev in devices:
        size = int(dev.get("size") or 0)
        name = str(dev.get("name", ""))
        if dev.get("type") != "disk" or size == 0 or name.startswith(("zram", "loop", "ram")):
            continue
        disks.append(Disk(name=name, size_bytes=size, kind=_kind(dev)))
    return StorageInfo(disks=tuple(disks))
