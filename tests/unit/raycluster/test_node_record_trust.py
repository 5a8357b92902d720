"""A Ray node record is a JSON file anyone may have edited (issue 37): the stop kills by its token and
folder and removes the folder, so a record naming a folder a start did not make is refused whole,
and nothing is killed or deleted."""
import json
import os
import types

import pytest

from mlperf_llm.raycluster import node
from mlperf_llm.raycluster.placement import RayClusterError

TOKEN = "0123456789abcdef0123456789abcdef"


@pytest.fixture
def done(monkeypatch):
    """What the stop did: nothing it does here is real (a wrong verdict must not kill or delete)."""
    calls = []
    monkeypatch.setattr(node, "processes", lambda token, temp_dir="": calls.append(("processes", temp_dir)) or [])
    monkeypatch.setattr(node, "shutil", types.SimpleNamespace(rmtree=lambda p, **kw: calls.append(("rmtree", p))))
    return calls


@pytest.fixture
def base(tmp_path, monkeypatch, done):
    """The folder start() makes node folders in, here a test's own."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(node, "TEMP_BASE", str(folder))
    return folder


def _record(tmp_path, base, **changes):
    fields = {"role": "head", "address": "10.0.0.1:6379", "node_ip": "10.0.0.1",
              "temp_dir": str(base / "cmray-abc"), "token": TOKEN, "python": "/venv/bin/python",
              "log_path": str(tmp_path / "ray-head-10.0.0.1.log"), "usage_stats": False, "started_at": 1.5, **changes}
    (base / "cmray-abc").mkdir(exist_ok=True)
    path = tmp_path / "ray-node-head-10.0.0.1.json"
    path.write_text(json.dumps({k: v for k, v in fields.items() if v is not ...}))
    return path


def _victim(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("x")
    return victim


def _refused(done, path, field, says):
    with pytest.raises(RayClusterError) as e:
        node.stop(node.NodeRecord.load(path))
    text = str(e.value)
    assert str(path) in text and field in text and says in text
    assert "nothing was stopped or deleted" in text and "delete the record file and stop the node's processes by " \
        "hand" in text and node.MARK in text
    assert done == []


def test_a_record_a_start_wrote_is_stopped_and_its_folder_removed(tmp_path, base, done):
    assert node.stop(node.NodeRecord.load(_record(tmp_path, base))) == "Ray head on 10.0.0.1 stopped"
    assert done == [("processes", str(base / "cmray-abc")), ("rmtree", str(base / "cmray-abc"))]


def test_a_record_whose_folder_is_gone_still_stops_its_processes(tmp_path, base):
    path = _record(tmp_path, base, temp_dir=str(base / "cmray-gone"))
    assert node.NodeRecord.load(path).temp_dir == str(base / "cmray-gone")


@pytest.mark.parametrize("target", ["home", "root", "base", "dotdot", "elsewhere"])
def test_a_folder_a_start_did_not_make_is_refused_and_left_alone(tmp_path, base, done, target):
    victim = _victim(tmp_path)
    temp_dir = {"home": os.path.expanduser("~"), "root": "/", "base": str(base),
                "dotdot": f"{base}/cmray-abc/../../victim", "elsewhere": str(victim)}[target]
    _refused(done, _record(tmp_path, base, temp_dir=temp_dir), f"temp_dir={temp_dir!r}",
             f"is not a folder cmray-* directly in {base}")
    assert os.path.isdir(temp_dir) and (victim / "precious").exists()


def test_a_symlink_named_like_a_nodes_folder_is_refused(tmp_path, base, done):
    victim = _victim(tmp_path)
    (base / "cmray-x").symlink_to(victim)
    _refused(done, _record(tmp_path, base, temp_dir=str(base / "cmray-x")), "temp_dir=", "is a symbolic link")
    assert (victim / "precious").exists() and (base / "cmray-x").is_symlink()


def test_a_file_or_another_users_folder_is_refused(tmp_path, base, monkeypatch, done):
    (base / "cmray-file").write_text("")
    _refused(done, _record(tmp_path, base, temp_dir=str(base / "cmray-file")), "temp_dir=", "is not a folder")
    monkeypatch.setattr(node.os, "getuid", lambda: os.stat(base).st_uid + 1)
    _refused(done, _record(tmp_path, base), "temp_dir=", "belongs to another user")
    assert (base / "cmray-abc").is_dir()


@pytest.mark.parametrize("field, value, says", [
    ("role", "master", "is not one of head, worker"),
    ("role", ["head"], "is not one of head, worker"),
    ("token", "", "is not 32 lowercase hex digits"),
    ("token", "abc", "is not 32 lowercase hex digits"),
    ("token", None, "is not 32 lowercase hex digits"),
    ("address", "10.0.0.1", "is not HOST:PORT"),
    ("node_ip", 7, "is not a non-empty string"),
    ("usage_stats", "no", "is not true or false"),
    ("started_at", True, "is not a time"),
    ("temp_dir", 3, "is not a path"),
    ("token", ..., "is missing"),
    ("extra", 1, "is not a field of a Ray node record"),
])
def test_a_field_start_would_not_write_is_refused(tmp_path, base, done, field, value, says):
    _refused(done, _record(tmp_path, base, **{field: value}), field, says)
    assert (base / "cmray-abc").is_dir()


def test_a_record_that_is_not_an_object_is_refused(tmp_path, base, done):
    path = tmp_path / "ray-node.json"
    path.write_text("[]")
    _refused(done, path, "its content", "is a JSON list, not an object")
