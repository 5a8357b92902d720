"""get-dataset-cnndm through the engine: the R2 downloader (a loopback server plays the bucket), a
file you have (good, bad, replaced), the embedded set, the edge split, and the table's tags."""
import hashlib
import os

import pytest
from tiny_tokenizer import make_tokenizer

from cmengine.registry import Repo
from enginefixtures import Runner
from mlperf_llm.benchmarks import get_benchmark
from mlperf_llm.datasets import cnndm, cnndm_embedded as emb

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TAGS = "get,dataset,cnndm"
STEP = "get-dataset-cnndm"


@pytest.fixture
def runner(tmp_path):
    return Runner([Repo("cm4mlperf-llm", ROOT)], str(tmp_path / "cache"), include_project=True)


def fresh(runner, tmp_path, name):
    return Runner(runner.repos, str(tmp_path / name), include_project=True)


def data_file(path, n, word="article"):
    rows = [cnndm.SummaryRow(input=f"{word} {i}", output=f"summary {i}", tok_input=(1, i + 2)) for i in range(n)]
    return cnndm.write_rows(rows, path)


def publish(server, name, body, others=()):
    """The split's file (and others) in a loopback R2 bucket; returns its metadata URI."""
    return server.publish_r2({p.name: p.read_bytes() for p in (*others, body)}, name)


def test_validation_through_r2_with_a_resumed_download(runner, server, tmp_path):
    body = data_file(tmp_path / cnndm.VALIDATION_FILE, cnndm.VALIDATION_ROWS)
    uri = publish(server, "llama3-1-8b-cnn-eval", body)
    server.drop[f"/data/llama3-1-8b-cnn-eval/{body.name}"] = [200_000]     # the connection drops once
    r = runner.run(TAGS, uri=uri)
    assert r["return"] == 0, r.get("error")
    env = r["new_env"]
    assert (env["CM_DATASET_SPLIT"], env["CM_DATASET_ROWS"], env["CM_DATASET_MAX_NEW_TOKENS"]) == \
        ("validation", "13368", "128")
    assert env["CM_DATASET_PREPROCESSED_PATH"].endswith(f"/download/{cnndm.VALIDATION_FILE}")
    assert "CM_DATASET_REFERENCE_FILE" not in env
    assert server.ranges(f"/data/llama3-1-8b-cnn-eval/{body.name}") == [None, "bytes=200000-"]
    assert open(env["CM_DATASET_PREPROCESSED_PATH"], "rb").read() == body.read_bytes()
    again = runner.run(TAGS, uri=uri)
    assert again["cached"] is True and again["new_env"] == env


def test_a_corrupt_download_is_refused_by_its_md5(runner, server, tmp_path):
    body = data_file(tmp_path / cnndm.EDGE_FILE, cnndm.EDGE_ROWS)
    uri = publish(server, "llama3-1-8b-sample-cnn-eval-5000", body)
    server.files[f"/data/llama3-1-8b-sample-cnn-eval-5000/{body.name}"] = body.read_bytes()[:-10] + b"x" * 10
    r = runner.run(TAGS + ",_edge", uri=uri)
    assert r["return"] != 0 and "md5 is" in r["error"] and "expected " + hashlib.md5(
        body.read_bytes()).hexdigest() in r["error"]


def test_edge_through_r2_fetches_only_its_file(runner, server, tmp_path):
    body = data_file(tmp_path / cnndm.EDGE_FILE, cnndm.EDGE_ROWS)
    other = data_file(tmp_path / cnndm.VALIDATION_FILE, 3)
    uri = publish(server, "llama3-1-8b-sample-cnn-eval-5000", body, others=[other])
    r = runner.run(TAGS + ",_edge", uri=uri)
    assert r["return"] == 0, r.get("error")
    assert (r["new_env"]["CM_DATASET_SPLIT"], r["new_env"]["CM_DATASET_ROWS"]) == ("edge", "5000")
    assert [p for p, _, _ in server.log if p.startswith("/data")] == \
        [f"/data/llama3-1-8b-sample-cnn-eval-5000/{cnndm.EDGE_FILE}"]


def test_a_downloaded_file_of_the_wrong_row_count_is_refused(runner, server, tmp_path):
    body = data_file(tmp_path / cnndm.VALIDATION_FILE, 12)
    uri = publish(server, "llama3-1-8b-cnn-eval", body)
    r = runner.run(TAGS, uri=uri)
    assert r["return"] != 0
    assert f"{cnndm.VALIDATION_FILE} has 12 rows, but split 'validation' has 13368" in r["error"]


def test_a_user_file_good_then_replaced_then_bad(runner, tmp_path):
    mine = data_file(tmp_path / "mine.json", cnndm.EDGE_ROWS)
    r = runner.run(TAGS + ",_edge", dataset_path=str(mine))
    assert r["return"] == 0, r.get("error")
    assert r["new_env"]["CM_DATASET_PREPROCESSED_PATH"] == str(mine.resolve())
    assert runner.run(TAGS + ",_edge", dataset_path=str(mine))["cached"] is True
    data_file(mine, cnndm.EDGE_ROWS, word="another article")        # replaced by other rows
    step = [s for s in runner.plan(TAGS + ",_edge", dataset_path=str(mine))["plan"] if s["script"] == STEP][0]
    assert step["verdict"] == "run" and step["reason"].startswith(f"{mine} changed since entry ")
    data_file(mine, 40)                                              # now too short: checked again, refused
    r = runner.run(TAGS + ",_edge", dataset_path=str(mine))
    assert r["return"] != 0
    assert f"{mine.resolve()} has 40 rows, but split 'edge' has 5000; the file is incomplete" in r["error"]


def test_a_user_file_of_the_edge_split_given_for_validation(runner, tmp_path):
    mine = data_file(tmp_path / cnndm.EDGE_FILE, cnndm.EDGE_ROWS)
    r = runner.run(TAGS, dataset_path=str(mine))
    assert r["return"] != 0 and "that is the edge split's count: run with _edge" in r["error"]
    bad = tmp_path / "bad.json"
    bad.write_text('[{"instruction": {"llama": "{input}"}, "input": "a", "output": "b"}]')
    r = runner.run(TAGS, dataset_path=str(bad))
    assert r["return"] != 0 and f"{bad}: row 0 (0-based: the sample index) lacks key(s) ['tok_input']" in r["error"]


@pytest.fixture
def tokdir(tmp_path):
    return make_tokenizer(tmp_path / "tok", [cnndm.PROMPT_TEMPLATE] + [s.article for s in emb.load_stories()[:40]])


@pytest.mark.parametrize("name,rows", [("llama3.1-8b", 300), ("llama3.1-8b-edge", 112)])
def test_embedded_by_the_tags_the_benchmark_table_names(runner, tokdir, capsys, name, rows):
    # the top step asks for `get,dataset` + the table's dataset_tags, and `_embedded` adds _embedded
    tags = get_benchmark(name).dataset_tags + ",_embedded"
    r = runner.run(tags, tokenizer_path=str(tokdir))
    assert r["return"] == 0, r.get("error")
    env = r["new_env"]
    split = "edge" if name.endswith("-edge") else "validation"
    assert (env["CM_DATASET_SPLIT"], env["CM_DATASET_ROWS"]) == (split, str(rows))
    assert os.path.basename(env["CM_DATASET_PREPROCESSED_PATH"]) == emb.output_name(split, rows)
    assert cnndm.read_rows(env["CM_DATASET_PREPROCESSED_PATH"], expect_rows=rows)[0].tok_input[0] == 1  # <s>
    ref = emb.reference_file(split)
    if ref.is_file():
        assert env["CM_DATASET_REFERENCE_FILE"] == str(ref)
    else:
        assert "CM_DATASET_REFERENCE_FILE" not in env
        assert f"note: the embedded summarisation set's reference numbers for split '{split}' are not made " \
               f"yet ({ref} is missing)" in capsys.readouterr().out


def test_embedded_is_built_again_when_its_tokenizer_is_replaced(runner, tokdir, tmp_path):
    tags = TAGS + ",_edge,_embedded"
    first = runner.run(tags, tokenizer_path=str(tokdir))
    assert first["return"] == 0, first.get("error")
    old = cnndm.read_rows(first["new_env"]["CM_DATASET_PREPROCESSED_PATH"])     # the entry is replaced below
    assert runner.run(tags, tokenizer_path=str(tokdir))["cached"] is True
    make_tokenizer(tokdir, [cnndm.PROMPT_TEMPLATE] + [s.article for s in emb.load_stories()[40:90]], vocab_size=350)
    step = [s for s in runner.plan(tags, tokenizer_path=str(tokdir))["plan"] if s["script"] == STEP][0]
    assert step["verdict"] == "run" and step["reason"].startswith(f"{tokdir.resolve()}/tokenizer.json changed")
    again = runner.run(tags, tokenizer_path=str(tokdir))
    assert again["return"] == 0 and again["cached"] is False
    new = cnndm.read_rows(again["new_env"]["CM_DATASET_PREPROCESSED_PATH"])
    assert [r.input for r in old] == [r.input for r in new] and [r.tok_input for r in old] != [r.tok_input for r in new]


def test_embedded_plans_the_embedded_model_unless_a_tokenizer_is_given(runner, tokdir):
    steps = [s["script"] for s in runner.plan(TAGS + ",_embedded")["plan"]]
    assert "get-ml-model-smollm2" in steps and STEP in steps
    steps = [s["script"] for s in runner.plan(TAGS + ",_embedded", tokenizer_path=str(tokdir))["plan"]]
    assert "get-ml-model-smollm2" not in steps
    assert "get-ml-model-smollm2" not in [s["script"] for s in runner.plan(TAGS + ",_edge")["plan"]]
