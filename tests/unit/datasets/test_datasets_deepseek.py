"""deepseek-r1's data set without a network: the reference's pickle schema read and checked (each
refusal names the file, the column or row, and the fix), its rendering into gpt-oss-120b's token-set
layout with a tokenizer trained in the test, the embedded stand-in, and the data step's library entry
point on the embedded set and on a file you have."""
import pickle

import pandas as pd
import pytest
from tiny_tokenizer import make_tokenizer

from mlperf_llm.accuracy import reasoning
from mlperf_llm.benchmarks import BENCHMARKS
from mlperf_llm.datasets import deepseek, deepseek_embedded as emb, gptoss, reasoning_embedded
from mlperf_llm.datasets.get_deepseek import DeepSeekRequest, get_deepseek
from mlperf_llm.datasets.schema import DatasetError
from mlperf_llm.datasets.tokenizer import ModelTokenizer

ROWS = [("What is 7 + 5?", "aime", "12"), ("Write 6/8 in lowest terms.", "math500", "\\frac{3}{4}"),
        ("Which planet is closest to the Sun?", "gpqa", "a"), ("What is 2 + 2?", "mmlu_pro", "J"),
        ("Read two integers and print their sum.", "livecodebench", "q1")]


def frame(rows=ROWS, truth="ground_truth", **extra):
    df = pd.DataFrame({"text_input": [r[0] for r in rows], "dataset": [r[1] for r in rows],
                       truth: [r[2] for r in rows]})
    for k, v in extra.items():
        df[k] = v
    return df


def pickled(tmp_path, df, name="set.pkl"):
    path = tmp_path / name
    df.to_pickle(path)
    return path


def test_the_constants_agree_with_the_benchmark_table_and_the_scorer():
    b = BENCHMARKS["deepseek-r1"]
    assert deepseek.ROWS == b.dataset_rows == b.performance_sample_count == 4388
    assert b.dataset_tags == "get,dataset,deepseek-r1"
    # every source of the set is one the scorer tells apart, and named as source_of names it
    assert set(deepseek.SOURCES) <= set(reasoning.SOURCES)
    assert [reasoning.source_of(s) for s in deepseek.SOURCES] == list(deepseek.SOURCES)
    assert set(deepseek.LETTERS) <= set(deepseek.SOURCES)
    assert deepseek.MAX_PROMPT_TOKENS == 3136 + 4


@pytest.mark.parametrize("truth", deepseek.TRUTHS)
def test_a_good_pickle_is_read_under_either_name_of_its_answers(tmp_path, truth):
    path = pickled(tmp_path, frame(truth=truth, question=[r[0] for r in ROWS]))
    got = deepseek.read_reference(path, "accuracy", expect_rows=5)
    assert [(q.text_input, q.dataset, q.ground_truth) for q in got] == \
        [(t, s, a.upper() if s in deepseek.LETTERS else a) for t, s, a in ROWS]    # letters upper-cased
    assert got[0].question == "What is 7 + 5?"


def test_integral_floats_and_source_names_by_substring_are_read(tmp_path):
    df = pd.DataFrame({"text_input": ["q1", "q2"], "dataset": ["aime1983", "MMLU_Pro-law"],
                       "ground_truth": [70.0, " c "]})
    got = deepseek.read_reference(pickled(tmp_path, df))
    assert [(q.dataset, q.ground_truth, q.question) for q in got] == [("aime1983", "70", ""),
                                                                     ("MMLU_Pro-law", "C", "")]


def test_a_parquet_file_is_read_too(tmp_path):
    frame().to_parquet(tmp_path / "set.parquet")
    assert len(deepseek.read_reference(tmp_path / "set.parquet")) == 5


def test_the_calibration_set_needs_only_its_text(tmp_path):
    path = pickled(tmp_path, pd.DataFrame({"text_input": ["a", "b", "c"]}))
    assert [q.text_input for q in deepseek.read_reference(path, "calibration", 3)] == ["a", "b", "c"]
    with pytest.raises(DatasetError, match=r"lacks column\(s\) \['dataset', 'ground_truth'\] .* the accuracy set "
                                           r"of deepseek-r1 \(mlperf_deepseek_r1_dataset_4388_fp8_eval.pkl"):
        deepseek.read_reference(path, "accuracy")
    with pytest.raises(DatasetError, match=r"kind 'performance': a deepseek-r1 data set file is one of accuracy, "
                                           r"calibration"):
        deepseek.read_reference(path, "performance")


@pytest.mark.parametrize("drop, named", [
    ("text_input", r"\['text_input'\]"), ("dataset", r"\['dataset'\]"), ("ground_truth", r"\['ground_truth'\]")])
def test_a_file_of_the_wrong_schema_names_the_missing_column_and_the_file_to_pass(tmp_path, drop, named):
    path = pickled(tmp_path, frame().drop(columns=[drop]), "other.pkl")
    with pytest.raises(DatasetError, match=rf"other.pkl lacks column\(s\) {named} \(it has \[.*\]\); the accuracy set "
                                           r"of deepseek-r1 \(mlperf_deepseek_r1_dataset_4388_fp8_eval.pkl of the "
                                           r"MLCommons data set\) has text_input, dataset, ground_truth: pass that file"):
        deepseek.read_reference(path)


def bad_row(rows, i, **change):
    rows = [list(r) for r in rows]
    for k, v in change.items():
        rows[i][("text_input", "dataset", "ground_truth").index(k)] = v
    return [tuple(r) for r in rows]


@pytest.mark.parametrize("row, change, words", [
    (3, {"dataset": "hellaswag"}, r"dataset 'hellaswag' is not a source of the deepseek-r1 set \(its sources: "
                                  r"gpqa, aime, livecodebench, math500, mmlu_pro\); the file is damaged or another "
                                  r"benchmark's: pass mlperf_deepseek_r1_dataset_4388_fp8_eval.pkl"),
    (0, {"ground_truth": "twelve"}, r"an AIME row's ground_truth 'twelve' is not an integer; .*download it again"),
    (0, {"ground_truth": "1.5"}, r"an AIME row's ground_truth '1.5' is not an integer"),
    (0, {"ground_truth": "\u00b2"}, r"an AIME row's ground_truth '\u00b2' is not an integer"),
    (2, {"ground_truth": "E"}, r"a gpqa row's ground_truth 'E' is not one letter of ABCD; the file is damaged"),
    (2, {"ground_truth": "AB"}, r"a gpqa row's ground_truth 'AB' is not one letter of ABCD"),
    (3, {"ground_truth": "K"}, r"a mmlu_pro row's ground_truth 'K' is not one letter of ABCDEFGHIJ"),
    (1, {"ground_truth": " "}, r"ground_truth is empty; .*download it again"),
    (4, {"ground_truth": None}, r"ground_truth is empty"),
    (1, {"text_input": "  "}, r"text_input is empty; every row is a question: the file is damaged: download it again"),
    (1, {"text_input": None}, r"text_input is empty;"),
    (1, {"text_input": 42}, r"text_input is not text \(int\);"),
])
def test_a_bad_row_is_named_with_its_file_and_the_fix(tmp_path, row, change, words):
    path = pickled(tmp_path, frame(bad_row(ROWS, row, **change)), "bad.pkl")
    with pytest.raises(DatasetError, match=rf"bad.pkl: row {row}: {words}"):
        deepseek.read_reference(path)


def test_the_older_answer_column_is_named_in_its_messages(tmp_path):
    path = pickled(tmp_path, frame(bad_row(ROWS, 2, ground_truth="Z"), truth="gt_output"), "old.pkl")
    with pytest.raises(DatasetError, match=r"old.pkl: row 2: a gpqa row's gt_output 'Z' is not one letter"):
        deepseek.read_reference(path)


def test_a_wrong_row_count_an_empty_file_and_a_missing_one_are_named(tmp_path):
    path = pickled(tmp_path, frame(), "short.pkl")
    with pytest.raises(DatasetError, match=r"short.pkl has 5 rows, but the accuracy set has 4388; the file is incomplete "
                                           r"or the other set \(accuracy 4388 rows, calibration 500\): download it "
                                           r"again or pass the right file"):
        deepseek.read_reference(path, "accuracy", deepseek.ROWS)
    empty = pickled(tmp_path, frame().iloc[:0], "empty.pkl")
    with pytest.raises(DatasetError, match=r"empty.pkl has no rows; download it again"):
        deepseek.read_reference(empty)
    with pytest.raises(DatasetError, match=r"gone.pkl does not exist; pass the file \(or its folder\) you have, let "
                                           r"the data step download the MLCommons set, or run with _embedded"):
        deepseek.read_reference(tmp_path / "gone.pkl")


def test_a_pickle_of_something_else_and_a_damaged_file_are_refused(tmp_path):
    (tmp_path / "list.pkl").write_bytes(pickle.dumps([{"text_input": "q"}]))
    with pytest.raises(DatasetError, match=r"list.pkl holds a list, not a pandas DataFrame; the deepseek-r1 data set "
                                           r"\(mlperf_deepseek_r1_dataset_4388_fp8_eval.pkl\) is a DataFrame \(parquet or pickle\): "
                                           r"pass that file"):
        deepseek.read_reference(tmp_path / "list.pkl")
    good = pickled(tmp_path, frame(), "cut.pkl")
    good.write_bytes(good.read_bytes()[:40])                    # an interrupted copy
    with pytest.raises(DatasetError, match=r"cut.pkl is not a readable pandas pickle \(\w+Error.*\); it is damaged or "
                                           r"not a deepseek-r1 data set file: download it again"):
        deepseek.read_reference(good)
    (tmp_path / "junk.pkl").write_bytes(b"not a pickle at all")
    with pytest.raises(DatasetError, match=r"junk.pkl is not a readable pandas pickle"):
        deepseek.read_reference(tmp_path / "junk.pkl")
    (tmp_path / "junk.parquet").write_bytes(b"not parquet either")
    with pytest.raises(DatasetError, match=r"junk.parquet is not a readable parquet table \(\w+"):
        deepseek.read_reference(tmp_path / "junk.parquet")


@pytest.fixture(scope="module")
def tokdir(tmp_path_factory):
    texts = [emb.text_input(p) for p in emb.load()] + [r[0] for r in ROWS] + [emb.THINK_PREFIX]
    return make_tokenizer(tmp_path_factory.mktemp("tok"), texts)


def test_render_gives_the_chat_template_with_a_generation_prompt_then_the_think_prefix(tokdir):
    tok = ModelTokenizer.from_folder(tokdir)
    questions = [deepseek.Question(t, s, a) for t, s, a in ROWS]
    plain = deepseek.render(questions, tok)
    assert [p.input_tokens for p in plain] == [tuple(tok.chat_ids("", q.text_input)) for q in questions]
    assert [(p.dataset, p.ground_truth) for p in plain] == [(q.dataset, q.ground_truth) for q in questions]
    assert tok.decode(plain[0].input_tokens, skip_special_tokens=False).endswith(
        "<|im_start|>user\nWhat is 7 + 5?<|im_end|>\n<|im_start|>assistant\n")
    think = deepseek.render(questions, tok, think_prefix=emb.THINK_PREFIX)
    prefix = tuple(tok.encode(emb.THINK_PREFIX, add_special_tokens=False))
    assert all(t.input_tokens == p.input_tokens + prefix for t, p in zip(think, plain))
    assert tok.decode(think[0].input_tokens, skip_special_tokens=False).endswith("<|im_start|>assistant\n<think>\n")


def test_an_over_long_prompt_is_refused_by_row_and_length(tokdir):
    tok = ModelTokenizer.from_folder(tokdir)
    questions = [deepseek.Question("short", "aime", "1"), deepseek.Question("word " * 40, "gpqa", "A")]
    n = len(tok.chat_ids("", "word " * 40))
    assert deepseek.render(questions, tok, limit=n)                # exactly the limit is allowed
    with pytest.raises(DatasetError, match=rf"row 1 \(gpqa\): its prompt is {n} tokens, over the {n - 1} the benchmark "
                                           r"allows \(MAX_ISL 3136 \+ 4 of template\); the data set or the tokenizer is "
                                           r"not deepseek-r1's: check both"):
        deepseek.render(questions, tok, limit=n - 1)
    with pytest.raises(DatasetError, match=r"row 0 \(no source\): its prompt is \d+ tokens, over the 3140"):
        deepseek.render([deepseek.Question("word " * 4000)], tok)


def test_render_takes_a_transformers_tokenizer_too():
    class Fake:                              # apply_chat_template as transformers 5 answers it: a BatchEncoding
        def apply_chat_template(self, messages, add_generation_prompt, tokenize):
            assert messages == [{"role": "user", "content": "q"}] and add_generation_prompt and tokenize
            return {"input_ids": [1, 2, 3]}

        def encode(self, text, add_special_tokens=True):
            assert not add_special_tokens
            return [9]
    got = deepseek.render([deepseek.Question("q", "aime", "3")], Fake(), think_prefix="<think>\n")
    assert got == [gptoss.Prompt((1, 2, 3, 9), "aime", "3")]


def test_the_embedded_questions_hold_every_source_taking_turns():
    problems = emb.load()
    assert len(problems) == 28 == emb.expected_rows()["accuracy"]
    assert {p.source for p in problems} == set(deepseek.SOURCES)
    order = ("aime", "math500", "gpqa", "mmlu_pro", "livecodebench")     # the file's turns (its README)
    assert [p.source for p in problems] == [order[i % len(order)] for i in range(len(problems))]
    assert all(p.dataset == p.source for p in problems)             # named as the reference names them
    code = [p for p in problems if p.source == "livecodebench"]
    assert code and all(p.tests and p.solution for p in code)
    assert all(len(p.options) == len(deepseek.LETTERS[p.source]) for p in problems if p.source in deepseek.LETTERS)
    assert len({p.id for p in problems}) == 28
    # the calibration stand-in is kept apart from the scored questions, as the real one is
    assert emb.expected_rows()["calibration"] == len(reasoning_embedded.load_performance())
    assert not set(reasoning_embedded.load_performance()) & {p.question for p in problems}


def test_each_source_is_asked_for_its_answer_in_the_references_manner():
    by = {p.source: emb.text_input(p) for p in emb.load()}
    assert by["aime"].endswith("within \\boxed{}.") and by["math500"].endswith("within \\boxed{}.")
    assert "one of ABCD" in by["gpqa"] and "\nD) " in by["gpqa"] and "\nE) " not in by["gpqa"]
    assert "one of ABCDEFGHIJ" in by["mmlu_pro"] and "\nJ) " in by["mmlu_pro"]
    assert "```python" in by["livecodebench"]
    assert not any(p.solution and p.solution in emb.text_input(p) for p in emb.load())


@pytest.mark.parametrize("line, words", [
    ('{"from": "int-99"}', r"'from' 'int-99' is not an id of accuracy.jsonl"),
    ('{"id": "x", "dataset": "hellaswag", "question": "q", "ground_truth": "1"}', r"dataset 'hellaswag': new rows are"),
    ('{"id": "x", "dataset": "gpqa", "question": "q", "ground_truth": "A", "options": ["a"]}',
     r"a gpqa row needs 4 options \(has 1\)"),
    ('{"id": "x", "dataset": "math500", "question": "", "ground_truth": "1"}', r"'question' must be a non-empty string"),
    ('{"id": ', r"not JSON"),
])
def test_an_embedded_row_that_breaks_the_schema_is_named(tmp_path, line, words):
    path = tmp_path / "questions.jsonl"
    path.write_text('{"from": "int-01"}\n' + line + "\n")
    with pytest.raises(DatasetError, match=rf"questions.jsonl line 2: {words}.*; fix the line"):
        emb.load(path)
    path.write_text('{"from": "int-01"}\n{"from": "int-01"}\n')
    with pytest.raises(DatasetError, match=r"questions.jsonl: an id is there twice \(\['int-01'\]\)"):
        emb.load(path)


def test_the_embedded_set_is_built_and_read_back_with_all_five_sources(tokdir, tmp_path):
    paths = emb.build_embedded(tokdir, tmp_path, calibration=True)
    problems = emb.load()
    rows = gptoss.read_set(paths["prepared"], "accuracy", 28, sources=deepseek.SOURCES)
    assert [(r.dataset, r.ground_truth) for r in rows] == [(p.dataset, p.ground_truth) for p in problems]
    with pytest.raises(DatasetError, match=r"row 1: dataset 'math500' is not a source of this set"):
        gptoss.read_set(paths["prepared"], "accuracy")           # gpt-oss-120b's sources alone: refused
    reference = deepseek.read_reference(paths["reference"], "accuracy", 28)
    assert [q.text_input for q in reference] == [emb.text_input(p) for p in problems]
    tok = ModelTokenizer.from_folder(tokdir)
    assert tok.decode(rows[0].input_tokens, skip_special_tokens=False).endswith("assistant\n<think>\n")
    tests = gptoss.read_tests(paths["tests"])
    assert sorted(tests) == sorted(p.id for p in problems if p.source == "livecodebench")
    gptoss.check_tests_cover(rows, tests, "embedded")
    assert len(deepseek.read_reference(paths["calibration"], "calibration", emb.expected_rows()["calibration"])) == 24
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [emb.REFERENCE_FILE, emb.PREPARED_FILE, emb.TESTS_FILE, emb.CALIBRATION_FILE])


def test_the_data_step_builds_the_embedded_set(tokdir, tmp_path):
    res = get_deepseek(DeepSeekRequest(embedded=True, tokenizer_dir=str(tokdir), out_dir=str(tmp_path)))
    assert (res.rows, res.calibration, res.calibration_rows, res.notes) == (28, None, None, ())
    assert res.prepared.name == emb.PREPARED_FILE and res.reference.name == emb.REFERENCE_FILE
    assert res.tests.name == emb.TESTS_FILE
    with pytest.raises(DatasetError, match=r"the embedded data set needs the embedded model's tokenizer: pass "
                                           r"--tokenizer_path=DIR"):
        get_deepseek(DeepSeekRequest(embedded=True, out_dir=str(tmp_path)))


def user_folder(tmp_path, rows=ROWS, calibration=3):
    (tmp_path / "data" / "sub").mkdir(parents=True)
    pickled(tmp_path / "data" / "sub", frame(rows), deepseek.ACCURACY_FILE)
    if calibration:
        pickled(tmp_path / "data", pd.DataFrame({"text_input": ["c"] * calibration}), deepseek.CALIBRATION_FILE)
    tests = gptoss.write_tests([gptoss.Problem("q1", (reasoning_embedded.load_accuracy()[2].tests[0],))],
                               tmp_path / "mine_tests.jsonl")
    return tmp_path / "data", tests


def test_a_folder_you_have_is_checked_and_rendered_with_the_models_template(tokdir, tmp_path, monkeypatch):
    folder, tests = user_folder(tmp_path)
    req = DeepSeekRequest(dataset_path=str(folder), tokenizer_dir=str(tokdir), out_dir=str(tmp_path / "out"),
                          lcb_tests=(str(tests),), calibration=True)
    with pytest.raises(DatasetError, match=r"mlperf_deepseek_r1_dataset_4388_fp8_eval.pkl has 5 rows, but the "
                                           r"accuracy set has 4388"):
        get_deepseek(req)
    monkeypatch.setattr(deepseek, "ROWS", 5)
    monkeypatch.setattr(deepseek, "CALIBRATION_ROWS", 3)
    res = get_deepseek(req)
    assert (res.rows, res.calibration_rows) == (5, 3)
    assert res.reference == (folder / "sub" / deepseek.ACCURACY_FILE).resolve()
    assert res.calibration == (folder / deepseek.CALIBRATION_FILE).resolve()
    assert res.prepared == tmp_path / "out" / "deepseek_r1_input_tokens.parquet"
    rows = gptoss.read_set(res.prepared, "accuracy", sources=deepseek.SOURCES)
    tok = ModelTokenizer.from_folder(tokdir)
    assert rows[0].input_tokens == tuple(tok.chat_ids("", ROWS[0][0]))      # no think prefix: R1's template has it
    assert [r.ground_truth for r in rows] == ["12", "\\frac{3}{4}", "A", "J", "q1"]
    assert list(gptoss.read_tests(res.tests)) == ["q1"]
    assert res.source.startswith("user file ") and str(tokdir) in res.source
    # the file itself, and no tests (a performance-only run)
    res = get_deepseek(DeepSeekRequest(dataset_path=str(res.reference), tokenizer_dir=str(tokdir),
                                       out_dir=str(tmp_path / "out2"), lcb_tests=("skip",)))
    assert res.tests is None and "--lcb_tests=skip" in res.notes[0]


def test_a_folder_you_have_is_refused_with_what_is_missing(tokdir, tmp_path):
    folder, tests = user_folder(tmp_path, calibration=0)
    base = dict(tokenizer_dir=str(tokdir), out_dir=str(tmp_path / "out"), lcb_tests=("skip",))
    with pytest.raises(DatasetError, match=rf"--dataset_path {folder}: no "
                                           r"mlperf_deepseek_r1_calibration_dataset_500_fp8_eval.pkl under .*: pass the "
                                           r"folder that holds them"):
        get_deepseek(DeepSeekRequest(dataset_path=str(folder), calibration=True, **base))
    with pytest.raises(DatasetError, match=r"--dataset_path .*nowhere: no such file or folder; pass the file "
                                           r"mlperf_deepseek_r1_dataset_4388_fp8_eval.pkl or the folder"):
        get_deepseek(DeepSeekRequest(dataset_path=str(tmp_path / "nowhere"), **base))
    with pytest.raises(DatasetError, match=r"rendered with DeepSeek-R1's tokenizer, and none was given: pass "
                                           r"--tokenizer_path=DIR .* get,ml-model,deepseek-r1"):
        get_deepseek(DeepSeekRequest(dataset_path=str(folder), out_dir=str(tmp_path / "out")))


def test_the_embedded_model_on_a_file_of_yours_takes_any_row_count_and_opens_the_think_section(tokdir, tmp_path):
    folder, tests = user_folder(tmp_path)
    res = get_deepseek(DeepSeekRequest(embedded=True, dataset_path=str(folder), tokenizer_dir=str(tokdir),
                                       out_dir=str(tmp_path / "out"), lcb_tests=(str(tests),), calibration=True))
    assert (res.rows, res.calibration_rows) == (5, 3)
    rows = gptoss.read_set(res.prepared, "accuracy", sources=deepseek.SOURCES)
    tok = ModelTokenizer.from_folder(tokdir)
    assert tok.decode(rows[3].input_tokens, skip_special_tokens=False).endswith("assistant\n<think>\n")


def test_a_programs_row_without_tests_is_named(tokdir, tmp_path, monkeypatch):
    monkeypatch.setattr(deepseek, "ROWS", 5)
    folder, _ = user_folder(tmp_path)
    other = gptoss.write_tests([gptoss.Problem("q9", (reasoning_embedded.load_accuracy()[2].tests[0],))],
                               tmp_path / "other_tests.jsonl")
    with pytest.raises(DatasetError, match=r"deepseek_r1_input_tokens.parquet: 1 LiveCodeBench problem\(s\) of the "
                                           r"accuracy set have no tests \(first: q1\)"):
        get_deepseek(DeepSeekRequest(dataset_path=str(folder), tokenizer_dir=str(tokdir),
                                     out_dir=str(tmp_path / "out"), lcb_tests=(str(other),)))


def test_a_chat_template_is_compiled_once_and_its_refusal_is_a_dataset_error(tmp_path):
    from mlperf_llm.datasets import tokenizer as tk
    refusing = tk.ModelTokenizer(tmp_path, None, {}, "{% if messages[0].role == 'system' %}"
                                 "{{ raise_exception('no system role') }}{% endif %}{{ messages[0].content }}")
    with pytest.raises(DatasetError, match="chat template refused the messages: no system role"):
        refusing.chat_prompt("sys", "q")
    assert refusing.chat_prompt("", "q") == "q"
    before = tk._compiled.cache_info().hits
    refusing.chat_prompt("", "again")
    assert tk._compiled.cache_info().hits == before + 1          # the same template: not compiled again
