"""The slow-host rehearsal's quota and where it goes (benchmarks/slow_host_rehearsal.py), on folders
laid out as cgroup v2 and v1 are: nothing is started or slowed here."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from slow_host_rehearsal import Quota, RehearsalError, find_cpu_controller, make_cgroup, remove_cgroup  # noqa: E402


def test_the_quota_is_cores_over_the_factor_in_either_version(tmp_path):
    assert Quota(tmp_path, 2).files(cores=2, factor=3) == {"cpu.max": "66666 100000"}
    assert Quota(tmp_path, 1).files(cores=16, factor=4) == {"cpu.cfs_period_us": "100000",
                                                            "cpu.cfs_quota_us": "400000"}


def test_v2_with_cpu_delegated_else_v1_else_the_reason(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("memory pids\n")
    with pytest.raises(RehearsalError, match=r"echo \+cpu >"):
        find_cpu_controller(tmp_path)
    (tmp_path / "cgroup.subtree_control").write_text("cpu memory pids\n")
    assert find_cpu_controller(tmp_path) == (tmp_path, 2)
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert find_cpu_controller(v1) == (v1 / "cpu", 1)
    with pytest.raises(RehearsalError, match="no cgroup CPU controller"):
        find_cpu_controller(tmp_path / "none")


def test_the_cgroup_is_made_with_its_quota_and_removed(tmp_path):
    q = make_cgroup(tmp_path, 2, cores=2, factor=3)
    assert q.directory.parent == tmp_path and (q.directory / "cpu.max").read_text() == "66666 100000"
    for f in q.directory.iterdir():     # a real cgroup's files go with it; here they are plain files
        f.unlink()
    remove_cgroup(q)
    assert not q.directory.exists()
