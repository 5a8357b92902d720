import json
import os

import pytest

from mlperf_llm.sysinfo.memory import (MemoryParseError, format_size_like_free, parse_dmidecode_memory,
                                       parse_free_bytes, parse_meminfo)
from mlperf_llm.sysinfo.network import parse_ethtool_speed, read_sys_class_net
from mlperf_llm.sysinfo.storage import StorageParseError, parse_lsblk_json


@pytest.mark.parametrize("folder,expected", [("xeon_w7_2495x_2x4090", "202G"), ("epyc9254_2s_8xl40s", "1.5T")])
def test_capacity_written_like_free_h_si(fixture_text, folder, expected):
    assert format_size_like_free(parse_meminfo(fixture_text(folder, "meminfo.txt"))) == expected


def test_this_machine_matches_the_recorded_free_output(fixture_text):
    total = parse_meminfo(fixture_text("this_machine", "meminfo.txt"))
    free_row = [ln for ln in fixture_text("this_machine", "free_h_si.txt").splitlines() if ln.startswith("Mem:")][0]
    assert format_size_like_free(total) == free_row.split()[1]


@pytest.mark.parametrize("num,text", [(999, "999B"), (1500, "1.5K"), (9_950_000_000, "9.9G"),
                                      (25_276_502_016, "25G"), (1_478_981_644_288, "1.5T")])
def test_free_rounding_rules(num, text):
    assert format_size_like_free(num) == text


def test_meminfo_and_free_errors():
    with pytest.raises(MemoryParseError, match="MemTotal"):
        parse_meminfo("garbage")
    assert parse_free_bytes("              total        used\nMem:     25276502016  1\n") == 25276502016


def test_dmidecode_configuration(fixture_text):
    assert parse_dmidecode_memory(fixture_text("dmidecode-memory-16x32GB.txt")) == "16x 32GB DDR5-4800"
    with pytest.raises(MemoryParseError, match="needs root"):
        parse_dmidecode_memory("/dev/mem: Permission denied\n")
    assert parse_dmidecode_memory("# dmidecode 3.4\nNo SMBIOS nor DMI entry point found, sorry.\n") == ""


def test_lsblk(fixture_text):
    st = parse_lsblk_json(fixture_text("lsblk-2xnvme.json"))
    assert [d.name for d in st.disks] == ["sda", "nvme0n1", "nvme1n1"]
    assert st.capacity_text == "8.2 TB" and st.type_text == "NVMe SSD, SSD"
    here = parse_lsblk_json(fixture_text("this_machine", "lsblk.json"))
    assert [d.name for d in here.disks] == ["vda"]            # zram0 of size 0 is not storage
    assert here.capacity_text == "275 GB" and here.type_text == "Virtual disk"
    with pytest.raises(StorageParseError, match="lsblk -J"):
        parse_lsblk_json("lsblk: unknown column")


def _make_sys_net(root, spec):
    """Build a /sys/class/net look-alike: {iface: {device, type, speed, driver}}."""
    for name, rec in spec.items():
        base = root / "class" / "net" / name
        base.mkdir(parents=True)
        (base / "type").write_text((rec.get("type") or "1") + "\n")
        if rec.get("speed") is not None:
            (base / "speed").write_text(rec["speed"] + "\n")
        if rec.get("device"):
            dev = root / "devices" / name
            dev.mkdir(parents=True)
            os.symlink(dev, base / "device")
            if rec.get("driver"):
                drv = root / "drivers" / rec["driver"]
                drv.mkdir(parents=True, exist_ok=True)
                os.symlink(drv, dev / "driver")
    return str(root / "class" / "net")


def test_network_this_machine(fixture_text, tmp_path):
    spec = json.loads(fixture_text("this_machine", "sys-class-net.json"))
    net = read_sys_class_net(_make_sys_net(tmp_path, spec))
    assert [c.name for c in net.cards] == ["eth0"]            # lo and ifb* have no device
    assert net.cards[0].driver == "virtio_net" and net.cards[0].speed_mbps is None
    assert net.networking_text == "unknown speed Ethernet (eth0, virtio_net)"


def test_network_server(tmp_path):
    spec = {"eno1": {"device": True, "speed": "1000", "driver": "igb"},
            "ens1f0np0": {"device": True, "speed": "100000", "driver": "mlx5_core"},
            "ib0": {"device": True, "type": "32", "speed": "200000", "driver": "mlx5_core"},
            "docker0": {"device": False, "speed": "-1"}}
    net = read_sys_class_net(_make_sys_net(tmp_path, spec))
    assert net.card_count == 2
    assert net.networking_text == "1 Gbit/s Ethernet (eno1, igb); 100 Gbit/s Ethernet (ens1f0np0, mlx5_core)"
    assert read_sys_class_net(str(tmp_path / "missing")).cards == ()


def test_ethtool_speed():
    assert parse_ethtool_speed("Settings for eno1:\n\tSpeed: 25000Mb/s\n\tDuplex: Full\n") == 25000
    assert parse_ethtool_speed("\tSpeed: Unknown!\n") is None
