"""accuracy/reasoning_eval.py: answers of every source marked against their rows (programs in the
sandbox), right and wrong both seen, the figure weighted by repeats."""
import pytest

from mlperf_llm.accuracy.livecodebench import Test
from mlperf_llm.accuracy.reasoning_eval import Row, mark_all

F = "<|channel|>analysis<|message|>thinking<|end|><|start|>assistant<|channel|>final<|message|>{}<|return|>"
ROWS = [
    Row("aime25", "42"), Row("aime25", "7"), Row("gpqa_diamond", "C"), Row("gpqa_diamond", "a"),
    Row("livecodebench_v6", "lcb-1", (Test("2 3\n", "5\n"), Test("4 4\n", "8\n"))),
    Row("livecodebench_v6", "lcb-2", (Test("1\n", "1\n"),)),
]
ANSWERS = [
    (0, F.format("So the answer is \\boxed{42}.")),
    (1, F.format("\\boxed{1000}")),
    (2, F.format("**C**")),
    (3, F.format("Answer: B")),
    (4, F.format("```python\na, b = map(int, input().split())\nprint(a + b)\n```")),
    (5, F.format("```python\nimport os\nos.system('echo hi')\n```")),
]


def test_every_source_is_marked_right_and_wrong_with_what_was_read():
    marked, tally = mark_all(ANSWERS, ROWS, workers=2)
    assert [m.right for m in marked] == [True, False, True, False, True, False]
    assert [m.read for m in marked] == ["42", "", "C", "B", "program", "program"]
    assert marked[1].why == "no integer answer found" and marked[3].why == "B is not A"
    assert "tried os.system" in marked[5].why
    # aime 1/2 (x8), gpqa 1/2 (x5), lcb 1/2 (x3): 0.5 of each weight
    assert tally.exact_match() == pytest.approx(50.0)


def test_bad_rows_are_named():
    with pytest.raises(ValueError, match="row 0: AIME ground truth 'x'"):
        mark_all([(0, "\\boxed{1}")], [Row("aime25", "x")])
    with pytest.raises(ValueError, match="has no tests in the data set"):
        mark_all([(0, "```python\nprint(1)\n```")], [Row("livecodebench_v6", "q9")])
    with pytest.raises(ValueError, match="answer for row 3: the accuracy set has 1 rows"):
        mark_all([(3, "")], [Row("aime25", "1")])
    with pytest.raises(ValueError, match="'mmlu'"):
        mark_all([(0, "A")], [Row("mmlu", "A")])


def test_an_accuracy_log_is_decoded_and_marked(tmp_path):
    """LoadGen's log (hex of int32 ids) through a decoder that keeps the channel markers."""
    import json

    from mlperf_llm.accuracy.log import encode_ids
    from mlperf_llm.accuracy.reasoning_eval import score_log
    texts = [a for _, a in ANSWERS[:4]]
    vocab = sorted({ch for t in texts for ch in t})
    ids = {ch: i for i, ch in enumerate(vocab)}
    log = [{"seq_id": n, "qsl_idx": idx, "data": encode_ids([ids[c] for c in texts[idx]])}
           for n, idx in enumerate((2, 0, 3, 1, 0))]          # out of order, sample 0 twice (the first counts)
    path = tmp_path / "mlperf_log_accuracy.json"
    path.write_text(json.dumps(log))
    marked, tally = score_log(str(path), ROWS, lambda tokens: "".join(vocab[t] for t in tokens))
    assert [(m.index, m.right) for m in marked] == [(2, True), (0, True), (3, False), (1, False)]
    assert tally.total == {"aime25": 2, "gpqa_diamond": 2}


# deepseek-r1: the whole answer (its <think> part included) is read by language/deepseek-r1's rules
THINK = "<think>\nLet me think. Maybe ANSWER: A? No.\n</think>\n{}"
DS_ROWS = [
    Row("aime", "12"), Row("math500", "\\frac{3}{4}"), Row("math500", "(1,2)"), Row("math500", "5"),
    Row("gpqa", "C"), Row("mmlu_pro", "J"), Row("mmlu_pro", "B"),
    Row("livecodebench", "lcb-1", (Test("2 3\n", "5\n"),)), Row("math500", "\\sqrt{2}"),
]
DS_ANSWERS = [
    (0, THINK.format("So \\boxed{12}.")),
    (1, THINK.format("The fraction is \\boxed{\\dfrac{3}{4}}.")),     # equal by PRM800K's rules
    (2, THINK.format("\\boxed{(2, 1)}")),                              # a tuple in the wrong order
    (3, THINK.format("It is five.")),                                   # no box
    (4, THINK.format("ANSWER: C")),                                     # the last ANSWER of the whole text (not
                                                                        # the think part's A)
    (5, THINK.format("I pick (J).\nANSWER: J")),
    (6, "<think>\nhmm\n</think>\nBetween the two, B"),                 # MMLU-Pro's fall-back: a lone letter
    (7, THINK.format("```python\na, b = map(int, input().split())\nprint(a + b)\n```\n```python\nprint(0)\n```")),
    (8, THINK.format("The answer is \\boxed{\\sqrt{")),                 # cut at the output cap
]


def test_deepseek_r1_s_answers_are_read_by_its_rules_and_the_figure_is_the_plain_mean():
    from mlperf_llm.accuracy.reasoning_eval import DEEPSEEK_R1
    marked, tally = mark_all(DS_ANSWERS, DS_ROWS, workers=2, rules=DEEPSEEK_R1)
    assert [m.index for m in marked] == list(range(len(DS_ROWS)))          # the answers' order, MATH500's too
    assert [m.right for m in marked] == [True, True, False, False, True, True, True, True, False]
    assert [m.read for m in marked][:7] == ["12", "\\dfrac{3}{4}", "(2, 1)", "", "C", "J", "B"]
    assert marked[2].why and "no \\boxed{} answer" in marked[3].why and "no \\boxed{} answer" in marked[8].why
    assert tally.exact_match() == pytest.approx(100 * 6 / 9)               # no repeat weights
    assert not DEEPSEEK_R1.keep_special_tokens                               # decoded as the reference does


def test_gpt_oss_rules_refuse_deepseek_r1_s_sources():
    with pytest.raises(ValueError, match="row 0: dataset 'math500' is not a source of gpt-oss-120b's set"):
        mark_all([(0, "\\boxed{1}")], [Row("math500", "1")])
