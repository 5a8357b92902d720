"""gpt-oss-120b's data sets without a network: the parquet layout read and checked, LiveCodeBench's
tests from its release-file form (the private tests' compressed pickle read as plain data only), the
embedded stand-in built with a tokenizer, and a folder you have."""
import base64
import json
import pickle
import zlib

import pandas as pd
import pytest
from tiny_tokenizer import make_tokenizer

from mlperf_llm.benchmarks import BENCHMARKS
from mlperf_llm.datasets import gptoss, gptoss_embedded, reasoning_embedded
from mlperf_llm.datasets.get_gptoss import GptOssRequest, get_gptoss
from mlperf_llm.datasets.schema import DatasetError


def prompts(n, source="gpqa_diamond", truth="B"):
    return [gptoss.Prompt((200006, i + 1, 7), source, truth) for i in range(n)]


def test_the_sets_agree_with_the_benchmark_table():
    b = BENCHMARKS["gpt-oss-120b"]
    assert gptoss.SETS["accuracy"].rows == b.dataset_rows == 4395
    assert gptoss.SETS["performance"].rows == b.performance_rows == b.performance_sample_count == 6396
    assert gptoss.SETS["compliance"].rows == 990      # TEST07's audit.config: min_query_count 990


def test_a_set_round_trips_and_is_read_by_position(tmp_path):
    rows = prompts(3) + [gptoss.Prompt((1, 2), "aime25", "42"), gptoss.Prompt((3,), "livecodebench_v6", "abc123")]
    path = gptoss.write_set(rows, tmp_path / "acc.parquet")
    assert gptoss.read_set(path, "accuracy", 5) == rows
    assert [r.input_tokens for r in gptoss.read_set(path, "performance")] == [r.input_tokens for r in rows]


def test_the_pre_v4_column_name_and_a_pickle_are_read(tmp_path):
    df = pd.DataFrame({"tok_input": [[5, 6]], "dataset": ["aime25"], "ground_truth": ["7"]})
    df.to_pickle(tmp_path / "old.pkl")
    assert gptoss.read_set(tmp_path / "old.pkl", "accuracy") == [gptoss.Prompt((5, 6), "aime25", "7")]


def test_a_file_of_the_wrong_schema_is_refused_by_name(tmp_path):
    pd.DataFrame({"prompt": ["hi"], "answer": ["x"]}).to_parquet(tmp_path / "other.parquet")
    with pytest.raises(DatasetError, match=r"other.parquet lacks column\(s\) \['input_tokens', 'dataset', "
                                           r"'ground_truth'\] .* the accuracy set of gpt-oss-120b"):
        gptoss.read_set(tmp_path / "other.parquet", "accuracy")
    # the performance set needs the prompts alone
    pd.DataFrame({"input_tokens": [[1, 2]]}).to_parquet(tmp_path / "perf.parquet")
    assert gptoss.read_set(tmp_path / "perf.parquet", "performance")[0].input_tokens == (1, 2)
    with pytest.raises(DatasetError, match="lacks column"):
        gptoss.read_set(tmp_path / "perf.parquet", "compliance")
    (tmp_path / "junk.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(DatasetError, match=r"junk.parquet is not a readable parquet table"):
        gptoss.read_set(tmp_path / "junk.parquet", "performance")
    pd.DataFrame({"input_tokens": [["a", "b"]]}).to_parquet(tmp_path / "text.parquet")
    with pytest.raises(DatasetError, match=r"text.parquet: row 0: input_tokens is not a list of token ids"):
        gptoss.read_set(tmp_path / "text.parquet", "performance")


def test_an_unknown_source_a_missing_truth_and_a_short_file_are_named(tmp_path):
    gptoss.write_set([gptoss.Prompt((1,), "mmlu_pro", "C")], tmp_path / "a.parquet")
    with pytest.raises(DatasetError, match=r"a.parquet: row 0: .*mmlu_pro"):
        gptoss.read_set(tmp_path / "a.parquet", "accuracy")
    gptoss.write_set([gptoss.Prompt((1,), "aime25", " ")], tmp_path / "b.parquet")
    with pytest.raises(DatasetError, match=r"b.parquet: row 0: ground_truth is empty"):
        gptoss.read_set(tmp_path / "b.parquet", "accuracy")
    gptoss.write_set(prompts(4), tmp_path / "c.parquet")
    with pytest.raises(DatasetError, match=r"c.parquet has 4 rows, but the compliance set has 990; .*incomplete"):
        gptoss.read_set(tmp_path / "c.parquet", "compliance", 990)


def release_line(qid, public, private, func=""):
    packed = base64.b64encode(zlib.compress(pickle.dumps(json.dumps(private)))).decode()
    return json.dumps({"question_id": qid, "public_test_cases": json.dumps(public), "private_test_cases": packed,
                       "metadata": json.dumps({"func_name": func} if func else {})})


def test_release_files_give_each_problems_tests_with_the_private_ones_unpacked():
    pub = [{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]
    priv = [{"input": "5 5\n", "output": "10\n", "testtype": "stdin"}]
    fn = [{"input": "[1, 2]", "output": "3", "testtype": "functional"}]
    got = gptoss.problems_from_release([release_line("q1", pub, priv), "", release_line("q2", fn, [], "add")], "rel")
    assert [p.question_id for p in got] == ["q1", "q2"]
    assert [(t.given, t.expected) for t in got[0].tests] == [("1 2\n", "3\n"), ("5 5\n", "10\n")]
    assert got[1].fn_name == "add" and got[1].tests[0].kind == "functional"


def test_a_private_test_blob_that_unpickles_code_is_refused():
    class Boom:
        def __reduce__(self):
            return (print, ("pwned",))
    packed = base64.b64encode(zlib.compress(pickle.dumps(Boom()))).decode()
    line = json.dumps({"question_id": "q", "public_test_cases": "[]", "private_test_cases": packed, "metadata": "{}"})
    with pytest.raises(DatasetError, match=r"rel line 1: not a LiveCodeBench problem \(UnpicklingError: "
                                           r"builtins.print: not plain data\)"):
        gptoss.problems_from_release([line], "rel")


def test_the_tests_file_round_trips_and_must_cover_the_accuracy_sets_programs(tmp_path):
    problems = gptoss.problems_from_release([release_line("q1", [{"input": "1\n", "output": "1\n"}], [])], "r")
    path = gptoss.write_tests(problems, tmp_path / gptoss.TESTS_FILE)
    read = gptoss.read_tests(path)
    assert list(read) == ["q1"] and read["q1"] == problems[0]
    rows = [gptoss.Prompt((1,), "livecodebench_v6", "q1"), gptoss.Prompt((1,), "livecodebench_v6", "q9")]
    with pytest.raises(DatasetError, match=r"1 LiveCodeBench problem\(s\) of the accuracy set have no tests "
                                           r"\(first: q9\)"):
        gptoss.check_tests_cover(rows, read, "acc")
    (tmp_path / "bad.jsonl").write_text('{"question_id": "x"}\n')
    with pytest.raises(DatasetError, match=r"bad.jsonl line 1: not a problem's tests \(KeyError"):
        gptoss.read_tests(tmp_path / "bad.jsonl")


@pytest.fixture(scope="module")
def tokdir(tmp_path_factory):
    texts = [p.prompt() for p in reasoning_embedded.load_accuracy()] + reasoning_embedded.load_performance()
    return make_tokenizer(tmp_path_factory.mktemp("tok"), texts)


def test_the_embedded_sets_are_built_apart_in_the_real_layout(tokdir, tmp_path):
    res = get_gptoss(GptOssRequest(embedded=True, tokenizer_dir=str(tokdir), out_dir=str(tmp_path)))
    problems = reasoning_embedded.load_accuracy()
    assert res.rows == gptoss_embedded.expected_rows() == {
        "accuracy": len(problems), "performance": len(reasoning_embedded.load_performance()),
        "compliance": sum(p.source == "gpqa" for p in problems)}
    acc = gptoss.read_set(res.paths["accuracy"], "accuracy")
    assert [(r.dataset, r.ground_truth) for r in acc] == [(p.dataset, p.ground_truth) for p in problems]
    assert {r.dataset for r in gptoss.read_set(res.paths["compliance"], "compliance")} == {"gpqa_diamond"}
    perf = gptoss.read_set(res.paths["performance"], "performance")
    assert not {r.input_tokens for r in perf} & {r.input_tokens for r in acc}     # the sets are kept apart
    tests = gptoss.read_tests(res.tests)
    assert sorted(tests) == sorted(p.ground_truth for p in problems if p.source == "livecodebench")
    # the reasoning effort is in each prompt's system message, as in the real sets
    from mlperf_llm.datasets.tokenizer import ModelTokenizer
    tok = ModelTokenizer.from_folder(tokdir)
    assert "Reasoning: high" in tok.decode(acc[0].input_tokens, skip_special_tokens=False)
    assert "Reasoning: low" in tok.decode(perf[0].input_tokens, skip_special_tokens=False)
    assert res.paths["accuracy"].name == "embedded_acc_eval_inputs.parquet"


def test_a_folder_you_have_is_found_in_its_sub_folders(tmp_path):
    (tmp_path / "perf").mkdir()
    (tmp_path / "acc").mkdir()
    acc = prompts(5) + [gptoss.Prompt((9,), "livecodebench_v6", "q1")]
    gptoss.write_set(acc, tmp_path / "acc_eval_inputs.parquet")
    gptoss.write_set(prompts(3), tmp_path / "perf" / "perf_eval_ref.parquet")
    gptoss.write_set(prompts(2), tmp_path / "acc" / "acc_eval_compliance_gpqa.parquet")
    with pytest.raises(DatasetError, match=r"acc_eval_inputs.parquet has 6 rows, but the accuracy set has 4395"):
        get_gptoss(GptOssRequest(dataset_dir=str(tmp_path), out_dir=str(tmp_path / "out")))
    (tmp_path / "perf" / "perf_eval_ref.parquet").unlink()
    with pytest.raises(DatasetError, match=r"no perf_eval_ref.parquet under it"):
        get_gptoss(GptOssRequest(dataset_dir=str(tmp_path), out_dir=str(tmp_path / "out")))
