"""The real huggingface_hub download code against a loopback hub (HF_ENDPOINT)."""
import os
import subprocess
import sys

import pytest

from fakehub import FakeHub, FakeRepo
from mlperf_llm.models import hf_hub
from mlperf_llm.models.errors import ModelError
from tinyckpt import checkpoint_files

pytest.importorskip("huggingface_hub", reason="the hub tests need huggingface_hub (pip install '.[test]')")

REPO = "acme/Tiny-Llama"
SHARD = "model-00001-of-00002.safetensors"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture
def env(monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "5")
    monkeypatch.setenv("HF_HUB_DOWNLOAD_TIMEOUT", "5")
    return monkeypatch


def hub(files=None, **repo_kw):
    return FakeHub({REPO: FakeRepo(files or checkpoint_files(), **repo_kw)}, tokens={"hf_goodtoken"})


def test_success_through_hf_endpoint(env, tmp_path):
    with hub() as h:
        env.setenv("HF_ENDPOINT", h.url)
        res = hf_hub.download_snapshot(hf_hub.HubRequest(REPO, str(tmp_path / "model")), log=lambda m: None)
    model = tmp_path / "model"
    assert res.path == str(model) and res.source == f"hf:{REPO}@{FakeRepo({}).commit}"
    assert sorted(os.listdir(model)) == sorted(checkpoint_files())          # no .cache, nothing extra
    assert all((model / p).read_bytes() == d for p, d in checkpoint_files().items())
    assert res.report.tensors == 4 and res.report.loaded_with.startswith("transformers")
    assert not (tmp_path / "model.partial").exists()
    assert any(r["path"] == f"/{REPO}/resolve/{FakeRepo({}).commit}/{SHARD}" for r in h.requests)
    # a second call finds the folder and only checks it
    again = hf_hub.download_snapshot(hf_hub.HubRequest(REPO, str(model), endpoint=h.url), log=lambda m: None)
    assert again.reused


def test_a_commit_answered_with_another_is_refused_before_any_download(env, tmp_path):
    pinned, served = "a" * 40, FakeRepo({}).commit
    with hub() as h:                                        # it has FakeRepo's commit, not the pinned one
        with pytest.raises(ModelError, match=rf"asked .* for commit {pinned}, it answered with commit "
                                             rf"{served}: another revision"):
            hf_hub.download_snapshot(hf_hub.HubRequest(REPO, str(tmp_path / "model"), revision=pinned,
                                                       endpoint=h.url), log=lambda m: None)
        assert not [r for r in h.requests if "/resolve/" in r["path"]]
    assert not (tmp_path / "model").exists() and not (tmp_path / "model.partial").exists()
    # a branch or tag is resolved to its commit, as before
    with hub() as h:
        res = hf_hub.download_snapshot(hf_hub.HubRequest(REPO, str(tmp_path / "m2"), revision="main",
                                                         endpoint=h.url), log=lambda m: None)
    assert res.source.endswith(served)


def test_checksum_mismatch_is_refused_and_nothing_is_published(env, tmp_path):
    good = checkpoint_files()[SHARD]
    bad = good[:-4] + bytes(b ^ 0xFF for b in good[-4:])       # same size, other bytes
    with hub(corrupt={SHARD: bad}) as h:
        with pytest.raises(ModelError, match=rf"1 file\(s\) do not match the hub's checksums \({SHARD}: sha256"):
            hf_hub.download_snapshot(hf_hub.HubRequest(REPO, str(tmp_path / "model"), endpoint=h.url),
                                     log=lambda m: None)
    assert not (tmp_path / "model").exists()
    assert not (tmp_path / "model.partial" / SHARD).exists()            # the corrupt file is not kept


def test_dropped_connection_resumes_with_range(env, tmp_path):
    files = checkpoint_files(big_floats=3_000_000)                       # a 12 MB shard
    chunk = 10 * 1024 * 1024                                             # huggingface_hub's write size
    with hub(files, drop_once={SHARD: chunk + 12345}) as h:
        res = hf_hub.download_snapshot(hf_hub.HubRequest(REPO, str(tmp_path / "model"), endpoint=h.url),
                                       log=lambda m: None)
        ranges = [r["range"] for r in h.requests if r["path"].endswith(SHARD) and r["method"] == "GET"]
    assert ranges == [None, f"bytes={chunk}-"]                           # resumed, not restarted
    assert (tmp_path / "model" / SHARD).read_bytes() == files[SHARD]
    assert res.report.tensors == 5


def test_connection_that_keeps_dropping_gives_a_clear_error_and_no_model(env, tmp_path):
    with hub(drop_always={SHARD: 0}) as h:
        with pytest.raises(ModelError) as e:
            hf_hub.download_snapshot(hf_hub.HubRequest(REPO, str(tmp_path / "model"), endpoint=h.url),
                                     log=lambda m: None)
    msg = str(e.value)
    assert f"downloading {REPO} from {h.url} failed" in msg and "next run resumes" in msg
    assert not (tmp_path / "model").exists()
    assert not (tmp_path / "model.partial" / SHARD).exists()


def test_gated_repo_without_token_says_where_and_which_variable(env, tmp_path):
    with hub(gated=True) as h:
        with pytest.raises(ModelError) as e:
            hf_hub.download_snapshot(hf_hub.HubRequest(REPO, str(tmp_path / "model"), endpoint=h.url),
                                     log=lambda m: None)
        msg = str(e.value)
        assert f"request access at {h.url}/{REPO}" in msg and "set HF_TOKEN=<token>" in msg
        assert not (tmp_path / "model").exists()
        # a token without access: another message; a granted token: success, token never in files
        env.setenv("HF_TOKEN", "hf_wrongtoken")
        with pytest.raises(ModelError, match="the token in HF_TOKEN has no access"):
            hf_hub.download_snapshot(hf_hub.HubRequest(REPO, str(tmp_path / "model"), endpoint=h.url),
                                     log=lambda m: None)
        env.setenv("HF_TOKEN", "hf_goodtoken")
        logs = []
        res = hf_hub.download_snapshot(hf_hub.HubRequest(REPO, str(tmp_path / "model"), endpoint=h.url),
                                       log=logs.append)
    assert res.report.tensors == 4 and any(r["auth"] for r in h.requests)
    assert not any("hf_goodtoken" in line for line in logs)
    assert "hf_goodtoken" not in repr(hf_hub.HubRequest(REPO, "x", token="hf_goodtoken"))
    for p in (tmp_path / "model").rglob("*"):
        assert b"hf_goodtoken" not in p.read_bytes()


def test_unknown_repo(env, tmp_path):
    with hub() as h:
        with pytest.raises(ModelError, match="acme/None was not found at .*set HF_TOKEN"):
            hf_hub.download_snapshot(hf_hub.HubRequest("acme/None", str(tmp_path / "m"), endpoint=h.url),
                                     log=lambda m: None)


def test_cli_writes_a_result_without_the_token(env, tmp_path):
    with hub(gated=True) as h:
        out = tmp_path / "result.json"
        proc = subprocess.run([sys.executable, "-m", "mlperf_llm.models.hf_hub", "--repo-id", REPO,
                               "--dest", str(tmp_path / "m"), "--result-json", str(out)],
                              env=dict(os.environ, HF_ENDPOINT=h.url, HF_TOKEN="hf_goodtoken",
                                       PYTHONPATH=os.path.join(ROOT, "automation")),
                              capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "hf_goodtoken" not in proc.stdout + proc.stderr + out.read_text()
    assert '"source": "hf:acme/Tiny-Llama@' in out.read_text()
