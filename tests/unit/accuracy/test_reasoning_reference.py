"""accuracy/reasoning.py beside the reference evaluator's own parsing functions (read at test time from
../shared/mlcommons-inference/master-b66003e/language/gpt-oss-120b/eval_accuracy.py, never copied):
the same answers give the same parse, on written cases and on answers assembled at random."""
import ast
import random
import re
from pathlib import Path

import pytest

from mlperf_llm.accuracy.reasoning import (REPEATS, Tally, final_channel, parse_aime, parse_boxed, parse_choice,
                                           parse_choice_anywhere, parse_code, parse_first_python, source_of)

LANGUAGE = Path(__file__).resolve().parents[4] / "shared" / "mlcommons-inference" / "master-b66003e" / "language"
REFERENCE = LANGUAGE / "gpt-oss-120b"
DEEPSEEK = LANGUAGE / "deepseek-r1"
FUNCTIONS = ("validate_text_input", "extract_final_section", "strip_markdown_bold", "parse_multiple_choice",
             "parse_aime_answer", "parse_code")


class _Pandas:                       # what validate_text_input asks of pandas
    @staticmethod
    def isna(x):
        return x is None or (isinstance(x, float) and x != x)


def _functions(folder: Path, names) -> dict:
    """The named top-level functions of folder/eval_accuracy.py, compiled on their own."""
    import typing
    tree = ast.parse((folder / "eval_accuracy.py").read_text())
    wanted = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    assert {n.name for n in wanted} == set(names)
    namespace = {"re": re, "pd": _Pandas, "Optional": typing.Optional, "Any": typing.Any}
    exec(compile(ast.Module(body=wanted, type_ignores=[]), "eval_accuracy.py", "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def ref():
    return _functions(REFERENCE, FUNCTIONS)


@pytest.fixture(scope="module")
def deepseek():
    return _functions(DEEPSEEK, ("validate_text_input", "parse_multiple_choice", "parse_boxed_math",
                                 "parse_aime_answer", "parse_code"))


H = "<|start|>assistant<|channel|>analysis<|message|>{a}<|end|><|start|>assistant<|channel|>final<|message|>{f}<|return|>"
CASES = [
    "", "   ", "B", "**C**", "['D']", '["A"]', "The answer is (B).", "Answer: C", "answer: d", "FINAL ANSWER: (A)",
    H.format(a="Maybe A? Answer: A", f="B"), H.format(a="ANSWER: C", f="I think it is unclear."),
    H.format(a="x", f="**Answer: D**"), H.format(a="x", f="a) is wrong; Answer: C"),
    "<|channel|>final537<|message|>C", "<|channel|>final<|message|>Answer:\\nB", "reasoning... Final Answer: B\nmore",
    "\\boxed{42}", "\\boxed{ 7 } then \\boxed{13}", "\\boxed{1000}", "Answer: 12", "Answer: 12.", "answer:  999",
    H.format(a="\\boxed{5}", f="The result is \\boxed{6}"), H.format(a="Answer: 3", f="no number"),
    "```python\nprint(1)\n```", "```py\nprint(2)\n```", "```\nprint(3)\n```", "```cpp\nint main(){}\n```",
    H.format(a="```python\nprint('draft')\n```", f="```python\nprint('final')\n```"),
    H.format(a="```python\nprint('draft')\n```", f="no code here"),
    H.format(a="x", f="```\npython\nprint(4)\n```"), "text ```python\na=1``` and ```python\nb=2```",
]


def _random_answers(n=400, seed=20261128):
    rng = random.Random(seed)
    pieces = ["A", "B", "c", "D", "E", "**B**", "Answer: ", "ANSWER:", "Final Answer: (", ")", "\\boxed{", "}", "17",
              "999", "1234", " ", "\n", "\\n", "['", "']", "```python\n", "```", "print(1)\n", "py\n", "the ",
              "<|channel|>final<|message|>", "<|channel|>analysis<|message|>", "<|return|>", "<|end|>", "."]
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 14))) for _ in range(n)]


@pytest.mark.parametrize("text", CASES + _random_answers())
def test_each_parse_equals_the_reference_s(ref, text):
    assert final_channel(text) == ref["extract_final_section"](text)
    assert parse_choice(text) == ref["parse_multiple_choice"](text, "D")
    assert parse_choice(text, "J") == ref["parse_multiple_choice"](text, "J")
    assert parse_aime(text) == ref["parse_aime_answer"](text)
    assert parse_code(text) == ref["parse_code"](text)


@pytest.mark.parametrize("text", CASES + _random_answers(seed=39) + ["\\boxed{\\frac{1}{2}}", "\\boxed{x^{2}+1} and \\boxed{3",
                                                                   "\\boxed{{a}{b}}", "no box", "Answer: J", "the answer is e"])
def test_deepseek_r1_s_parses_equal_its_reference_s(deepseek, text):
    assert parse_choice_anywhere(text) == deepseek["parse_multiple_choice"](text, "D")
    assert parse_choice_anywhere(text, "J") == deepseek["parse_multiple_choice"](text, "J")
    assert parse_first_python(text) == deepseek["parse_code"](text)
    assert parse_boxed(text) == deepseek["parse_boxed_math"](text)
    assert parse_aime(text) == deepseek["parse_aime_answer"](text)


def test_the_cases_cover_each_rule():
    """The written cases reach every branch a rule has (so the comparison above says something)."""
    assert {parse_choice(c) for c in CASES} >= {None, "A", "B", "C", "D"}
    assert {parse_aime(c) for c in CASES} >= {None, 42, 13, 12, 999, 6}
    assert parse_code(CASES[CASES.index(H.format(a="```python\nprint('draft')\n```", f="no code here"))]) == "print('draft')"
    assert parse_boxed("\\boxed{x^{2}+1}") == "x^{2}+1" and parse_boxed("\\boxed{3") is None
    assert parse_first_python("```python\na=1``` ```python\nb=2```") == "a=1" and parse_code("```python\na=1``` ```python\nb=2```") == "b=2"


def test_the_figure_weights_each_source_by_its_repeats():
    """sum(correct/repeats) / sum(total/repeats) x 100, as eval_mlperf_accuracy.py computes it; the
    repeats are the reference's table."""
    text = (REFERENCE / "eval_mlperf_accuracy.py").read_text()
    table = ast.literal_eval(re.search(r"DATASET_REPEATS\s*=\s*(\{[^}]*\})", text).group(1))
    assert table == REPEATS
    t = Tally()
    for i in range(8):
        t.add("aime25", i < 4)              # 4 of 8: 0.5 of one problem
    for i in range(10):
        t.add("gpqa_diamond", i < 10)       # 10 of 10: 2 problems
    for i in range(3):
        t.add("livecodebench_v6", False)    # 0 of 3: 1 problem
    assert t.exact_match() == pytest.approx(100 * (0.5 + 2 + 0) / (1 + 2 + 1))
    assert t.checker_line() == "'exact_match': 62.500"
    assert re.match(r".*'exact_match':\s([\d.]+).*", t.checker_line())       # the checker's ACC_PATTERN


def test_a_row_s_source_is_found_by_name_and_another_is_refused():
    assert [source_of(n) for n in ("AIME25", "gpqa_diamond", "livecodebench_v6")] == ["aime", "gpqa", "livecodebench"]
    with pytest.raises(ValueError, match="'mmlu'"):
        source_of("mmlu")
