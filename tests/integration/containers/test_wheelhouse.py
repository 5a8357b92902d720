"""containers/wheels.py with the real pip and no index: a lock entry without a hash (a record's run
environment: versions only) whose archive the wheelhouse already holds is taken from it, so a
record replayed again, its image in the store, needs no network; one the wheelhouse lacks is named
with pip's reason. The index is a loopback port where nothing listens, pip's own configuration is
left out (PIP_CONFIG_FILE=/dev/null), so nothing is fetched from anywhere."""
import hashlib
import os
import socket
import zipfile

import pytest

from mlperf_llm.containers import wheels
from mlperf_llm.sysinfo.envlock import Locked


def write_wheel(folder, name: str, version: str) -> str:
    """A minimal pure-Python wheel of `name` `version`: what pip needs to take it as one."""
    dist = f"{name}-{version}.dist-info"
    path = os.path.join(folder, f"{name}-{version}-py3-none-any.whl")
    files = {f"{name}/__init__.py": "",
             f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    with zipfile.ZipFile(path, "w") as z:
        for arc, text in files.items():
            z.writestr(arc, text)
        z.writestr(f"{dist}/RECORD", "".join(f"{arc},,\n" for arc in files) + f"{dist}/RECORD,,\n")
    return path


@pytest.fixture
def no_index(monkeypatch):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                                   # nothing listens there
    for key, value in {"PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": f"http://127.0.0.1:{port}/simple",
                       "PIP_RETRIES": "0", "PIP_DEFAULT_TIMEOUT": "5"}.items():
        monkeypatch.setenv(key, value)
    for key in ("PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX"):
        monkeypatch.delenv(key, raising=False)


def test_pins_whose_archives_the_wheelhouse_holds_need_no_index(tmp_path, no_index):
    house = tmp_path / "wheels"
    house.mkdir()
    first = write_wheel(house, "cm4mlperf_probe_a", "1.0")
    second = write_wheel(house, "cm4mlperf_probe_b", "2.1")
    got = wheels.download([Locked("cm4mlperf-probe-a", "1.0"), Locked("cm4mlperf_probe_b", "2.1")], str(house))
    assert [(d.name, d.sha256) for d in got] == [
        ("cm4mlperf-probe-a", hashlib.sha256(open(first, "rb").read()).hexdigest()),
        ("cm4mlperf_probe_b", hashlib.sha256(open(second, "rb").read()).hexdigest())]
    assert sorted(os.listdir(house)) == sorted(os.path.basename(p) for p in (first, second))
    assert sorted(os.listdir(tmp_path)) == ["wheels"]          # pip's own download folder is gone


def test_a_pin_the_wheelhouse_lacks_is_named_when_the_index_cannot_be_reached(tmp_path, no_index):
    house = tmp_path / "wheels"
    house.mkdir()
    write_wheel(house, "cm4mlperf_probe_a", "1.0")
    with pytest.raises(wheels.WheelError, match=r"1 package\(s\) of the lock could not be had: cm4mlperf_probe_c==3\.0 "):
        wheels.download([Locked("cm4mlperf_probe_a", "1.0"), Locked("cm4mlperf_probe_c", "3.0")], str(house))
    assert sorted(os.listdir(tmp_path)) == ["wheels"]
