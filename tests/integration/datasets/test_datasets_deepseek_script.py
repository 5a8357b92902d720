"""get-dataset-deepseek-r1 through the engine: the embedded set (by the table's tags, with and without
the calibration stand-in, cached), a file or folder you have (good, of the wrong schema, too short,
replaced), the tokenizer it needs, and the R2 route against a loopback bucket (only deepseek-r1's two
files fetched, MD5-checked)."""
import os

import pandas as pd
import pytest
from tiny_tokenizer import make_tokenizer

from cmengine.registry import Repo
from enginefixtures import Runner
from mlperf_llm.benchmarks import get_benchmark
from mlperf_llm.datasets import deepseek, deepseek_embedded as emb, gptoss, reasoning_embedded

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TAGS = "get,dataset,deepseek-r1"
STEP = "get-dataset-deepseek-r1"
ROWS = [("What is 7 + 5?", "aime", "12"), ("Write 6/8 in lowest terms.", "math500", "\\frac{3}{4}"),
        ("Which planet is closest to the Sun?", "gpqa", "A"), ("What is 2 + 2?", "mmlu_pro", "J"),
        ("Read two integers and print their sum.", "livecodebench", "q1")]


@pytest.fixture
def runner(tmp_path):
    return Runner([Repo("cm4mlperf-llm", ROOT)], str(tmp_path / "cache"), include_project=True)


@pytest.fixture(scope="module")
def tokdir(tmp_path_factory):
    texts = [emb.text_input(p) for p in emb.load()] + [r[0] for r in ROWS] + [emb.THINK_PREFIX]
    return make_tokenizer(tmp_path_factory.mktemp("tok"), texts)


def frame(rows=ROWS):
    return pd.DataFrame({"text_input": [r[0] for r in rows], "dataset": [r[1] for r in rows],
                         "ground_truth": [r[2] for r in rows]})


def lcb_tests_file(path):
    """Our tests file holding LiveCodeBench problem q1 (the tests of an embedded program)."""
    return gptoss.write_tests([gptoss.Problem("q1", reasoning_embedded.load_accuracy()[2].tests)], path)


def test_embedded_by_the_tables_tags_hands_on_one_set_for_both_modes(runner, tokdir, capsys):
    tags = get_benchmark("deepseek-r1").dataset_tags + ",_embedded"
    r = runner.run(tags, tokenizer_path=str(tokdir))
    assert r["return"] == 0, r.get("error")
    env = r["new_env"]
    assert set(env) == {"CM_DATASET_PREPROCESSED_PATH", "CM_DATASET_PERFORMANCE_PATH", "CM_DATASET_REFERENCE_PATH",
                        "CM_DATASET_LCB_TESTS", "CM_DATASET_ROWS", "CM_DATASET_PERFORMANCE_ROWS"}
    assert env["CM_DATASET_PREPROCESSED_PATH"] == env["CM_DATASET_PERFORMANCE_PATH"]
    assert os.path.basename(env["CM_DATASET_PREPROCESSED_PATH"]) == emb.PREPARED_FILE
    assert os.path.basename(env["CM_DATASET_REFERENCE_PATH"]) == emb.REFERENCE_FILE
    assert env["CM_DATASET_ROWS"] == env["CM_DATASET_PERFORMANCE_ROWS"] == "28"
    rows = gptoss.read_set(env["CM_DATASET_PREPROCESSED_PATH"], "accuracy", 28, sources=deepseek.SOURCES)
    assert {r.dataset for r in rows} == set(deepseek.SOURCES)
    gptoss.check_tests_cover(rows, gptoss.read_tests(env["CM_DATASET_LCB_TESTS"]), "embedded")
    assert len(deepseek.read_reference(env["CM_DATASET_REFERENCE_PATH"], "accuracy", 28)) == 28
    assert "dataset deepseek-r1 (embedded): 28 rows in " in capsys.readouterr().out
    again = runner.run(tags, tokenizer_path=str(tokdir))
    assert again["cached"] is True and again["new_env"] == env


def test_embedded_with_the_calibration_stand_in(runner, tokdir):
    r = runner.run(TAGS + ",_embedded", tokenizer_path=str(tokdir), calibration="yes")
    assert r["return"] == 0, r.get("error")
    path = r["new_env"]["CM_DATASET_CALIBRATION_PATH"]
    assert os.path.basename(path) == emb.CALIBRATION_FILE
    assert len(deepseek.read_reference(path, "calibration", emb.expected_rows()["calibration"])) == 24
    r = runner.run(TAGS + ",_embedded", tokenizer_path=str(tokdir), calibration="ture")
    assert r["return"] != 0 and "--calibration='ture' is not a yes/no value; use yes or no" in r["error"]


def test_embedded_plans_the_embedded_model_unless_a_tokenizer_is_given(runner, tokdir):
    steps = [s["script"] for s in runner.plan(TAGS + ",_embedded")["plan"]]
    assert "get-ml-model-smollm2" in steps and STEP in steps
    steps = [s["script"] for s in runner.plan(TAGS + ",_embedded", tokenizer_path=str(tokdir))["plan"]]
    assert "get-ml-model-smollm2" not in steps
    assert "get-ml-model-smollm2" not in [s["script"] for s in runner.plan(TAGS)["plan"]]


def user_folder(tmp_path, rows=ROWS):
    folder = tmp_path / "mine"
    (folder / "sub").mkdir(parents=True, exist_ok=True)
    frame(rows).to_pickle(folder / "sub" / deepseek.ACCURACY_FILE)
    pd.DataFrame({"text_input": ["a", "b", "c"]}).to_pickle(folder / deepseek.CALIBRATION_FILE)
    return folder


def test_a_folder_you_have_rendered_for_the_embedded_model_then_replaced(runner, tokdir, tmp_path):
    folder = user_folder(tmp_path)
    tests = lcb_tests_file(tmp_path / "mine_tests.jsonl")
    args = dict(dataset_path=str(folder), tokenizer_path=str(tokdir), lcb_tests=str(tests), calibration="yes")
    r = runner.run(TAGS + ",_embedded", **args)
    assert r["return"] == 0, r.get("error")
    env = r["new_env"]
    assert (env["CM_DATASET_ROWS"], env["CM_DATASET_PERFORMANCE_ROWS"]) == ("5", "5")
    assert env["CM_DATASET_REFERENCE_PATH"] == str(folder / "sub" / deepseek.ACCURACY_FILE)
    assert env["CM_DATASET_CALIBRATION_PATH"] == str(folder / deepseek.CALIBRATION_FILE)
    assert os.path.basename(env["CM_DATASET_PREPROCESSED_PATH"]) == "deepseek_r1_input_tokens.parquet"
    assert env["CM_DATASET_PREPROCESSED_PATH"] == env["CM_DATASET_PERFORMANCE_PATH"]
    assert list(gptoss.read_tests(env["CM_DATASET_LCB_TESTS"])) == ["q1"]
    rows = gptoss.read_set(env["CM_DATASET_PREPROCESSED_PATH"], "accuracy", 5, sources=deepseek.SOURCES)
    assert [r.ground_truth for r in rows] == [r[2] for r in ROWS]
    assert runner.run(TAGS + ",_embedded", **args)["cached"] is True
    frame(ROWS[:3]).to_pickle(folder / "sub" / deepseek.ACCURACY_FILE)       # replaced in place: read again
    step = [s for s in runner.plan(TAGS + ",_embedded", **args)["plan"] if s["script"] == STEP][0]
    assert step["verdict"] == "run" and f"{folder / 'sub' / deepseek.ACCURACY_FILE} changed since entry" in step["reason"]
    again = runner.run(TAGS + ",_embedded", **args)
    assert again["return"] == 0 and again["cached"] is False and again["new_env"]["CM_DATASET_ROWS"] == "3"


def test_a_file_of_the_wrong_schema_or_count_and_a_missing_tokenizer_are_refused(runner, tokdir, tmp_path):
    bad = tmp_path / "bad.pkl"
    frame().rename(columns={"text_input": "prompt"}).to_pickle(bad)
    r = runner.run(TAGS, dataset_path=str(bad), tokenizer_path=str(tokdir), lcb_tests="skip")
    assert r["return"] != 0
    assert (f"{bad} lacks column(s) ['text_input'] (it has ['prompt', 'dataset', 'ground_truth']); the accuracy set "
            f"of deepseek-r1 ({deepseek.ACCURACY_FILE} of the MLCommons data set) has text_input, dataset, "
            "ground_truth: pass that file.") in r["error"]
    mine = tmp_path / "mine.pkl"
    frame().to_pickle(mine)
    r = runner.run(TAGS, dataset_path=str(mine), tokenizer_path=str(tokdir), lcb_tests="skip")
    assert r["return"] != 0 and f"{mine} has 5 rows, but the accuracy set has 4388; the file is incomplete" in r["error"]
    r = runner.run(TAGS, dataset_path=str(mine), lcb_tests="skip")
    assert r["return"] != 0 and "rendered with DeepSeek-R1's tokenizer, and none was given" in r["error"]


def test_the_model_steps_folder_gives_the_tokenizer(runner, tokdir, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(deepseek, "ROWS", 5)          # the real count would render 4,388 prompts
    mine = tmp_path / "mine.pkl"
    frame().to_pickle(mine)
    r = runner.run(TAGS, dataset_path=str(mine), lcb_tests="skip", env={"CM_ML_MODEL_PATH": str(tokdir)})
    assert r["return"] == 0, r.get("error")
    env = r["new_env"]
    assert env["CM_DATASET_ROWS"] == "5" and "CM_DATASET_LCB_TESTS" not in env
    out = capsys.readouterr().out
    assert f"rendered with the chat template of {tokdir}" in out
    assert "note: no LiveCodeBench tests (--lcb_tests=skip)" in out


def publish(server, accuracy_rows, calibration_rows=4, tmp_path=None):
    """deepseek-r1's two files and one other in a loopback R2 bucket; its metadata URI."""
    acc, cal = tmp_path / "acc.pkl", tmp_path / "cal.pkl"
    frame(ROWS * (accuracy_rows // len(ROWS))).to_pickle(acc)
    pd.DataFrame({"text_input": [f"c{i}" for i in range(calibration_rows)]}).to_pickle(cal)
    return server.publish_r2({deepseek.ACCURACY_FILE: acc.read_bytes(), deepseek.CALIBRATION_FILE: cal.read_bytes(),
                              "other/not_fetched.pkl": b"x" * 10}, "deepseek-r1-datasets-fp8-eval")


def test_the_r2_route_fetches_only_the_sets_files(runner, server, tokdir, tmp_path, monkeypatch):
    monkeypatch.setattr(deepseek, "ROWS", 10)
    monkeypatch.setattr(deepseek, "CALIBRATION_ROWS", 4)
    uri = publish(server, 10, 4, tmp_path)
    tests = lcb_tests_file(tmp_path / "t.jsonl")
    r = runner.run(TAGS, uri=uri, tokenizer_path=str(tokdir), lcb_tests=str(tests))
    assert r["return"] == 0, r.get("error")
    env = r["new_env"]
    assert env["CM_DATASET_ROWS"] == "10" and "CM_DATASET_CALIBRATION_PATH" not in env
    assert env["CM_DATASET_REFERENCE_PATH"].endswith(f"/download/{deepseek.ACCURACY_FILE}")
    fetched = [p for p, _, _ in server.log if p.startswith("/data")]
    assert fetched == [f"/data/deepseek-r1-datasets-fp8-eval/{deepseek.ACCURACY_FILE}"]
    r = runner.run(TAGS, uri=uri, tokenizer_path=str(tokdir), lcb_tests=str(tests), calibration="yes")
    assert r["return"] == 0, r.get("error")
    assert r["new_env"]["CM_DATASET_CALIBRATION_PATH"].endswith(f"/download/{deepseek.CALIBRATION_FILE}")
    assert not any("not_fetched" in p for p, _, _ in server.log)


def test_the_r2_route_refuses_a_corrupt_or_short_file(runner, server, tokdir, tmp_path):
    uri = publish(server, 10, 4, tmp_path)
    r = runner.run(TAGS, uri=uri, tokenizer_path=str(tokdir), lcb_tests="skip")
    assert r["return"] != 0 and f"{deepseek.ACCURACY_FILE} has 10 rows, but the accuracy set has 4388" in r["error"]
    server.files[f"/data/deepseek-r1-datasets-fp8-eval/{deepseek.ACCURACY_FILE}"] = b"corrupt"
    fresh = Runner(runner.repos, str(tmp_path / "cache2"), include_project=True)
    r = fresh.run(TAGS, uri=uri, tokenizer_path=str(tokdir), lcb_tests="skip")
    assert r["return"] != 0 and "md5" in r["error"]
