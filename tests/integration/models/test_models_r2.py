"""The MLCommons R2 route for the model (the data sets' downloader) against a loopback server."""
import pytest

from faker2 import StaticServer, r2_files
from mlperf_llm.models import hf_hub
from mlperf_llm.models.errors import ModelError

NAME = "llama-2-70b-chat-hf"


def test_r2_route_downloads_checks_and_renames(tmp_path):
    with StaticServer({}) as s:
        s.files.update(r2_files(s.url, NAME, NAME))
        res = hf_hub.download_r2(f"{s.url}/metadata/llama-2-70b-chat-hf.uri", tmp_path / "ckpt", log=lambda m: None)
    assert res.path == str(tmp_path / "ckpt" / "llama-2-70b-chat-hf") and res.source.startswith("r2:")
    assert res.report.path == res.path and res.report.tensors == 4
    assert not (tmp_path / "ckpt.partial").exists()


def test_r2_md5_mismatch_publishes_nothing(tmp_path):
    with StaticServer({}) as s:
        s.files.update(r2_files(s.url, NAME, NAME, corrupt="model-00002-of-00002.safetensors"))
        with pytest.raises(ModelError, match="R2 download of .* failed: .*md5"):
            hf_hub.download_r2(f"{s.url}/metadata/llama-2-70b-chat-hf.uri", tmp_path / "ckpt", log=lambda m: None)
    assert not (tmp_path / "ckpt").exists()
    assert not (tmp_path / "ckpt.partial" / "llama-2-70b-chat-hf" / "model-00002-of-00002.safetensors").exists()
