"""LiveCodeBench's release fetched by the gpt-oss data step from a loopback stand-in for the Hugging
Face hub (tests/integration/models/fakehub.py, which speaks the protocol huggingface_hub uses): the
release's files only, at the commit the revision resolves to (recorded), checked against the hub's
checksums, resumed after a dropped connection, refused when corrupt (nothing put in place), and the
tests file the scorer reads made from them."""
import base64
import json
import pickle
import sys
import zlib
from pathlib import Path

import pytest

from mlperf_llm.datasets import gptoss
from mlperf_llm.datasets.get_gptoss import GptOssRequest, _lcb_tests
from mlperf_llm.datasets.lcb_release import REPO, RELEASES, fetch_release
from mlperf_llm.datasets.schema import DatasetError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))     # the hub stand-in lives there
from fakehub import FakeHub, FakeRepo  # noqa: E402


def line(qid: str, n: int) -> bytes:
    private = base64.b64encode(zlib.compress(pickle.dumps(json.dumps(
        [{"input": f"{n}\n", "output": f"{n * 2}\n", "testtype": "stdin"}])))).decode()
    return (json.dumps({"question_id": qid, "public_test_cases": json.dumps([{"input": "1\n", "output": "2\n",
                                                                              "testtype": "stdin"}]),
                        "private_test_cases": private, "metadata": "{}"}) + "\n").encode()


def repo(**faults) -> FakeRepo:
    files = {name: line(f"q{i}", i) * 3 for i, name in enumerate(RELEASES["release_v6"])}
    files["code_generation_lite.py"] = b"# the loading script: not fetched\n"
    return FakeRepo(files=files, **faults)


@pytest.fixture
def hub_env(monkeypatch):
    def use(hub):
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.delenv("HF_TOKEN", raising=False)
        monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    return use


def test_the_release_is_fetched_verified_recorded_and_made_into_the_tests_file(tmp_path, hub_env):
    with FakeHub({REPO: repo()}) as hub:
        hub_env(hub)
        got = fetch_release(tmp_path / "lcb", log=lambda m: None)
        notes: list[str] = []
        tests = _lcb_tests(GptOssRequest(out_dir=str(tmp_path)), tmp_path, notes)
    assert [f.name for f in got.files] == list(RELEASES["release_v6"])
    assert got.commit == repo().commit and got.source == f"hf:{REPO}@{got.commit}"
    assert not (tmp_path / "lcb" / "code_generation_lite.py").exists()       # the release's files only
    assert not (tmp_path / "lcb.partial").exists()
    problems = gptoss.read_tests(tests)
    assert sorted(problems) == [f"q{i}" for i in range(6)]
    assert [(t.given, t.expected) for t in problems["q3"].tests] == [("1\n", "2\n"), ("3\n", "6\n")]
    assert notes == [f"LiveCodeBench's tests: hf:{REPO}@{got.commit}"]


def test_a_dropped_connection_resumes_and_a_corrupt_file_is_never_put_in_place(tmp_path, hub_env):
    with FakeHub({REPO: repo(drop_once={"test3.jsonl": 40})}) as hub:
        hub_env(hub)
        fetch_release(tmp_path / "lcb", log=lambda m: None)
    assert (tmp_path / "lcb" / "test3.jsonl").read_bytes() == repo().files["test3.jsonl"]
    bad = repo()
    bad.corrupt = {"test2.jsonl": b"x" * len(bad.files["test2.jsonl"])}
    with FakeHub({REPO: bad}) as hub:
        hub_env(hub)
        with pytest.raises(DatasetError, match=r"test2.jsonl does not match the hub's checksum; run again"):
            fetch_release(tmp_path / "other", log=lambda m: None)
    assert not (tmp_path / "other").exists() and not (tmp_path / "other.partial" / "test2.jsonl").exists()


def test_an_unreachable_hub_names_the_way_out(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    with pytest.raises(DatasetError, match=r"fetching LiveCodeBench's release_v6 from http://127.0.0.1:9 failed.*"
                                           r"--lcb_tests=FILE"):
        fetch_release(tmp_path / "lcb", log=lambda m: None)
