"""The real download code against a loopback server standing in for the R2 metadata and data URLs."""
import gzip
import hashlib
import os

import pandas as pd
import pytest

from mlperf_llm.datasets import get as get_mod
from mlperf_llm.datasets.download import Checksum, ChecksumMismatch, DownloadError, download
from mlperf_llm.datasets.get import DatasetRequest, get_dataset
from mlperf_llm.datasets.r2 import download_dataset
from mlperf_llm.datasets.schema import COLUMNS, DatasetError

PAYLOAD = os.urandom(3 * (1 << 20) + 12345)  # several read chunks
QUIET = lambda msg: None  # noqa: E731


def sha(b, algo="sha256"):
    return hashlib.new(algo, b).hexdigest()


def test_success(server, tmp_path):
    server.files["/f.bin"] = PAYLOAD
    res = download(server.url + "/f.bin", tmp_path / "f.bin", Checksum("sha256", sha(PAYLOAD)), log=QUIET)
    assert (tmp_path / "f.bin").read_bytes() == PAYLOAD
    assert (res.resumed_from, res.attempts, res.reused) == (0, 1, False)
    again = download(server.url + "/f.bin", tmp_path / "f.bin", Checksum("sha256", sha(PAYLOAD)), log=QUIET)
    assert again.reused and len(server.log) == 1  # verified on disk, not fetched again


def test_checksum_mismatch_leaves_nothing(server, tmp_path):
    server.files["/f.bin"] = PAYLOAD
    with pytest.raises(ChecksumMismatch, match="expected 0+; the file is corrupt"):
        download(server.url + "/f.bin", tmp_path / "f.bin", Checksum("md5", "0" * 32), log=QUIET)
    assert list(tmp_path.iterdir()) == []


def test_dropped_connection_resumes_with_range(server, tmp_path):
    server.files["/f.bin"] = PAYLOAD
    server.drop["/f.bin"] = [1_000_000, 500_000]
    res = download(server.url + "/f.bin", tmp_path / "f.bin", Checksum("md5", sha(PAYLOAD, "md5")),
                   backoff=0, log=QUIET)
    assert (tmp_path / "f.bin").read_bytes() == PAYLOAD
    assert res.attempts == 3
    assert server.ranges("/f.bin") == [None, "bytes=1000000-", "bytes=1500000-"]


def test_gave_up_keeps_only_the_part_file_then_resumes(server, tmp_path):
    server.files["/f.bin"] = PAYLOAD
    server.drop["/f.bin"] = [100_000, 100_000, 100_000]
    with pytest.raises(DownloadError, match="gave up after 3 attempts.*300000 bytes are kept"):
        download(server.url + "/f.bin", tmp_path / "f.bin", Checksum("sha256", sha(PAYLOAD)), retries=2,
                 backoff=0, log=QUIET)
    assert not (tmp_path / "f.bin").exists()  # never the final name while partial
    assert (tmp_path / "f.bin.part").stat().st_size == 300_000
    res = download(server.url + "/f.bin", tmp_path / "f.bin", Checksum("sha256", sha(PAYLOAD)), log=QUIET)
    assert res.resumed_from == 300_000 and (tmp_path / "f.bin").read_bytes() == PAYLOAD


def test_server_ignoring_range_restarts_cleanly(server, tmp_path):
    server.files["/f.bin"] = PAYLOAD
    (tmp_path / "f.bin.part").write_bytes(b"garbage that is not the start of the file")
    server.no_range = True
    download(server.url + "/f.bin", tmp_path / "f.bin", Checksum("sha256", sha(PAYLOAD)), log=QUIET)
    assert (tmp_path / "f.bin").read_bytes() == PAYLOAD


def test_corrupt_part_is_caught_by_checksum(server, tmp_path):
    server.files["/f.bin"] = PAYLOAD
    (tmp_path / "f.bin.part").write_bytes(b"X" * 1000)  # wrong prefix; the server resumes after it
    with pytest.raises(ChecksumMismatch):
        download(server.url + "/f.bin", tmp_path / "f.bin", Checksum("sha256", sha(PAYLOAD)), log=QUIET)
    assert list(tmp_path.iterdir()) == []


def test_existing_corrupt_final_file_is_replaced(server, tmp_path):
    server.files["/f.bin"] = PAYLOAD
    (tmp_path / "f.bin").write_bytes(b"old")
    download(server.url + "/f.bin", tmp_path / "f.bin", Checksum("sha256", sha(PAYLOAD)), log=QUIET)
    assert (tmp_path / "f.bin").read_bytes() == PAYLOAD


def test_http_404_is_named(server, tmp_path):
    with pytest.raises(DownloadError, match=r"/nope: HTTP 404.*check the URL"):
        download(server.url + "/nope", tmp_path / "x", log=QUIET)


def processed_frame(n):
    return pd.DataFrame([{"id": f"cot.{i}", "system_prompt": "", "question": "q", "output": "a", "input": "i",
                          "tok_input": [1, 2], "tok_output": [3], "tok_input_length": 2, "tok_output_length": 1,
                          "origin": "cot"} for i in range(n)], columns=list(COLUMNS))


ORCA = "llama-2-70b-open-orca-dataset"


def test_r2_protocol_fetches_listed_files(server, tmp_path):
    uri = server.publish_r2({"a.bin": b"alpha" * 1000, "sub/b.bin": b"beta" * 1000}, ORCA)
    results = download_dataset(uri, tmp_path, log=QUIET)
    assert (tmp_path / "a.bin").read_bytes() == b"alpha" * 1000
    assert (tmp_path / "sub" / "b.bin").read_bytes() == b"beta" * 1000
    assert len(results) == 2
    only = download_dataset(uri, tmp_path / "o", only=["b.bin"], log=QUIET)
    assert [r.path.name for r in only] == ["b.bin"]
    with pytest.raises(DownloadError, match=r"\['c.bin'\] not in the checksum list"):
        download_dataset(uri, tmp_path / "o", only=["c.bin"], log=QUIET)


def test_r2_private_needs_token_and_sends_it(server, tmp_path):
    uri = server.publish_r2({"a.bin": b"x" * 10}, ORCA, private=True)
    with pytest.raises(DownloadError, match="CM_R2_ACCESS_TOKEN"):
        download_dataset(uri, tmp_path, log=QUIET)
    download_dataset(uri, tmp_path, token="t0ken", log=QUIET)
    assert all({k.lower(): v for k, v in h.items()}.get("cf-access-token") == "t0ken" for _, _, h in server.log)


def test_r2_corrupt_published_file_is_refused(server, tmp_path):
    uri = server.publish_r2({"a.bin": b"good" * 100}, ORCA)
    server.files[f"/data/{ORCA}/a.bin"] = b"evil" * 100
    with pytest.raises(ChecksumMismatch):
        download_dataset(uri, tmp_path, log=QUIET)
    assert not (tmp_path / "a.bin").exists()


def gz_pickle(df):
    import io

    buf = io.BytesIO()
    df.to_pickle(buf, compression=None)
    return gzip.compress(buf.getvalue())


def test_get_dataset_calibration_via_r2(server, tmp_path):
    name = "open_orca_gpt4_tokenized_llama.calibration_1000.pkl.gz"
    uri = server.publish_r2({name: gz_pickle(processed_frame(1000)),
                             "open_orca_gpt4_tokenized_llama.sampled_24576.pkl.gz": b"not fetched"}, ORCA)
    res = get_dataset(DatasetRequest(split="calibration", out_dir=str(tmp_path), uri=uri, size=10))
    assert res.rows == 10 and res.path.name.endswith(".size_10.pkl")
    assert (tmp_path / "open_orca_gpt4_tokenized_llama.calibration_1000.pkl").is_file()
    assert not any("sampled_24576" in p for p, _, _ in server.log if p.startswith("/data"))


def test_get_dataset_refuses_wrong_row_count(server, tmp_path):
    uri = server.publish_r2({"open_orca_gpt4_tokenized_llama.sampled_24576.pkl.gz": gz_pickle(processed_frame(7))},
                            ORCA)
    with pytest.raises(DatasetError, match="has 7 rows, expected 24576"):
        get_dataset(DatasetRequest(split="validation", out_dir=str(tmp_path), uri=uri))


def test_truncated_gzip_never_becomes_the_pickle(tmp_path):
    gz = tmp_path / "x.pkl.gz"
    gz.write_bytes(gz_pickle(processed_frame(50))[:-40])
    with pytest.raises(DatasetError, match="not a complete gzip file"):
        get_mod.gunzip_atomic(gz, tmp_path / "x.pkl")
    assert not (tmp_path / "x.pkl").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["x.pkl.gz"]


def test_user_file_route(tmp_path):
    p = tmp_path / "mine.pkl"
    processed_frame(30).to_pickle(p)
    res = get_dataset(DatasetRequest(dataset_path=str(p), out_dir=str(tmp_path / "o"), size=5))
    assert res.rows == 5 and res.source.startswith("user file")
