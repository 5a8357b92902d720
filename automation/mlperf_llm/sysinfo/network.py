"""Network cards from `/sys/class/net` (physical interfaces only), speed from sysfs or `ethtool`."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class NetCard:
    name: str
    driver: str = ""
    speed_mbps: int | None = None     # None when the link reports no speed (down, or virtio)

    @property
    def description(self) -> str:
        speed = _speed_text(self.speed_mbps) if self.speed_mbps else "unknown speed"
        return f"{speed} Ethernet ({self.name}{', ' + self.driver if self.driver else ''})"


def _speed_text(mbps: int) -> str:
    return f"{mbps // 1000} Gbit/s" if mbps >= 1000 and mbps % 1000 == 0 else f"{mbps} Mbit/s"


@dataclass(frozen=True)
class NetworkInfo:
    cards: tuple[NetCard, ...]

    @property
    def card_count(self) -> int:
        return len(self.cards)

    @property
    def networking_text(self) -> str:
        return "; ".join(c.description for c in self.cards) if self.cards else "N/A"


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def read_sys_class_net(root: str = "/sys/class/net") -> NetworkInfo:
    """Interfaces with a `device` link (real or virtio NICs); loopback, bridges, ifb, veth are skipped."""
    cards = []
    for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        base = os.path.join(root, name)
        if not os.path.exists(os.path.join(base, "device")):
            continue
        if _read(os.path.join(base, "type")) not in ("", "1"):      # 1 = ARPHRD_ETHER
            continue
        driver_link = os.path.join(base, "device", "driver")
        driver = os.path.basename(os.path.realpath(driver_link)) if os.path.exists(driver_link) else ""
        speed = _read(os.path.join(base, "speed"))
        mbps = int(speed) if speed.lstrip("-").isdigit() and int(speed) > 0 else None
        cards.append(NetCard(name=name, driver=driver, speed_mbps=mbps))
    return NetworkInfo(cards=tuple(cards))


def parse_ethtool_speed(text: str) -> int | None:
    """`ethtool IFACE` -> link speed in Mb/s, None for `Speed: Unknown!`."""
    m = re.search(r"Speed:\s*(\d+)\s*Mb/s", text)
    return int(m.group(1)) if m else None
