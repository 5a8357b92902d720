"""The rclone route with the real rclone binary; a `local` remote stands in for the MLCommons bucket."""
import shutil
import subprocess

import pytest

from mlperf_llm.datasets.download import DownloadError
from mlperf_llm.datasets.rclone import copy_files

pytestmark = pytest.mark.skipif(shutil.which("rclone") is None,
                                reason="rclone is not installed (apt-get install rclone)")


@pytest.fixture
def remote(tmp_path, monkeypatch):
    conf = tmp_path / "rclone.conf"
    monkeypatch.setenv("RCLONE_CONFIG", str(conf))
    subprocess.run(["rclone", "config", "create", "mlc-test", "local"], check=True, capture_output=True)
    bucket = tmp_path / "bucket" / "open_orca"
    bucket.mkdir(parents=True)
    (bucket / "a.pkl.gz").write_bytes(b"payload" * 1000)
    return f"mlc-test:{bucket}"


def test_copy_lands_whole_file(remote, tmp_path):
    out = copy_files(remote, ["a.pkl.gz"], tmp_path / "dl")
    assert out[0].read_bytes() == b"payload" * 1000
    assert sorted(p.name for p in (tmp_path / "dl").iterdir()) == ["a.pkl.gz"]  # no temp folder left


def test_missing_file_leaves_nothing(remote, tmp_path):
    with pytest.raises(DownloadError, match="failed"):
        copy_files(remote, ["a.pkl.gz", "nope.pkl.gz"], tmp_path / "dl")
    assert list((tmp_path / "dl").iterdir()) == []


def test_unconfigured_remote_says_how_to_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("RCLONE_CONFIG", str(tmp_path / "empty.conf"))
    with pytest.raises(DownloadError, match="no remote 'mlc-inference:' configured.*rclone config create"):
        copy_files("mlc-inference:mlcommons-inference-wg-public/open_orca", ["x"], tmp_path / "dl")
