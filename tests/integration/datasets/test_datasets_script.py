"""get-preprocessed-dataset-openorca through the engine: user file, embedded, R2 (loopback), cache."""
import gzip
import io
import os

import pandas as pd
import pytest
from tiny_tokenizer import make_tokenizer

from cmengine.registry import Repo
from enginefixtures import Runner
from mlperf_llm.datasets import embedded
from mlperf_llm.datasets.schema import COLUMNS, load_processed

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TAGS = "get,dataset,preprocessed,openorca"


@pytest.fixture
def runner(tmp_path):
    return Runner([Repo("cm4mlperf-llm", ROOT)], str(tmp_path / "cache"), include_project=True)


def frame(n):
    return pd.DataFrame([{"id": f"t0.{i}", "system_prompt": "", "question": "q", "output": "a", "input": "i",
                          "tok_input": [1, i], "tok_output": [3], "tok_input_length": 2, "tok_output_length": 1,
                          "origin": "t0"} for i in range(n)], columns=list(COLUMNS))


def test_user_file_with_size(runner, tmp_path):
    p = tmp_path / "mine.pkl"
    frame(40).to_pickle(p)
    r = runner.run(TAGS + ",_size.8", dataset_path=str(p))
    assert r["return"] == 0, r.get("error")
    env = r["new_env"]
    assert env["CM_DATASET_ROWS"] == "8"
    assert len(load_processed(env["CM_DATASET_PREPROCESSED_PATH"])) == 8
    again = runner.run(TAGS + ",_size.8", dataset_path=str(p))
    assert again["new_env"]["CM_DATASET_PREPROCESSED_PATH"] == env["CM_DATASET_PREPROCESSED_PATH"]


def test_bad_user_file_and_bad_size(runner, tmp_path):
    p = tmp_path / "bad.pkl"
    frame(5).drop(columns=["origin"]).to_pickle(p)
    r = runner.run(TAGS, dataset_path=str(p))
    assert r["return"] != 0 and "missing column(s) ['origin']" in r["error"]
    r = runner.run(TAGS + ",_size.x", dataset_path=str(p))
    assert r["return"] != 0 and "_size.x" in r["error"]


def test_embedded_with_given_tokenizer(runner, tmp_path):
    samples = embedded.load_samples()
    tok = make_tokenizer(tmp_path / "tok", [s.question + " " + s.output for s in samples])
    r = runner.run(TAGS + ",_embedded,_size.20", tokenizer_path=str(tok))
    assert r["return"] == 0, r.get("error")
    env = r["new_env"]
    assert env["CM_DATASET_SPLIT"] == "embedded" and env["CM_DATASET_ROWS"] == "20"
    df = load_processed(env["CM_DATASET_PREPROCESSED_PATH"], expect_rows=20)
    assert df.iloc[0].input.startswith("<|im_start|>")
    if embedded.REFERENCE_FILE.is_file():
        assert env["CM_DATASET_REFERENCE_FILE"] == str(embedded.REFERENCE_FILE)
        assert env["CM_DATASET_MAX_NEW_TOKENS"] == str(embedded.load_reference()["settings"]["max_new_tokens"])


def test_calibration_through_r2_loopback(runner, server, tmp_path):
    import hashlib

    buf = io.BytesIO()
    frame(1000).to_pickle(buf, compression=None)
    gz = gzip.compress(buf.getvalue())
    name = "open_orca_gpt4_tokenized_llama.calibration_1000.pkl.gz"
    server.files["/metadata/orca.uri"] = f"{server.url}/bucket/open_orca".encode()
    server.files["/metadata/orca.md5"] = f"{hashlib.md5(gz).hexdigest()}  ./{name}\n".encode()
    server.files[f"/bucket/open_orca/{name}"] = gz
    r = runner.run(TAGS + ",_calibration", uri=f"{server.url}/metadata/orca.uri")
    assert r["return"] == 0, r.get("error")
    assert r["new_env"]["CM_DATASET_ROWS"] == "1000"
    assert r["new_env"]["CM_DATASET_CALIBRATION_PATH"].endswith("calibration_1000.pkl")
    server.files[f"/bucket/open_orca/{name}"] = b"corrupt"
    fresh = Runner(runner.repos, str(tmp_path / "cache2"), include_project=True)
    r = fresh.run(TAGS + ",_calibration", uri=f"{server.url}/metadata/orca.uri")
    assert r["return"] != 0 and "md5" in r["error"]


def test_a_user_file_replaced_since_is_read_again(runner, tmp_path):
    p = tmp_path / "mine.pkl"
    frame(40).to_pickle(p)
    assert runner.run(TAGS + ",_size.8", dataset_path=str(p))["return"] == 0
    replaced = frame(20)
    replaced["question"] = "another question"
    replaced.to_pickle(p)                            # replaced by another data set
    step = [s for s in runner.plan(TAGS + ",_size.8", dataset_path=str(p))["plan"]
            if s["script"] == "get-preprocessed-dataset-openorca"][0]
    assert step["verdict"] == "run" and step["reason"].startswith(f"{p} changed since entry ")
    again = runner.run(TAGS + ",_size.8", dataset_path=str(p))
    assert again["return"] == 0 and again["cached"] is False, again.get("error")
    df = load_processed(again["new_env"]["CM_DATASET_PREPROCESSED_PATH"], expect_rows=8)
    assert set(df.question) == {"another question"}
    assert runner.run(TAGS + ",_size.8", dataset_path=str(p))["cached"] is True
