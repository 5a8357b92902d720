"""datasets/reasoning_embedded.py: the embedded reasoning sets read and checked; a row that breaks the
schema is named."""
import json

import pytest

from mlperf_llm.datasets.reasoning_embedded import (INSTRUCTIONS, load_accuracy, load_performance, rows)
from mlperf_llm.datasets.schema import DatasetError


def test_the_sets_hold_every_source_and_are_kept_apart():
    problems = load_accuracy()
    assert {p.source for p in problems} == set(INSTRUCTIONS)
    counts = {s: sum(p.source == s for p in problems) for s in INSTRUCTIONS}
    assert counts == {"aime": 12, "gpqa": 12, "livecodebench": 8}
    perf = load_performance()
    assert len(perf) == 24 and not set(perf) & {p.question for p in problems}
    assert [r.dataset for r in rows(problems)] == [p.dataset for p in problems]


def test_a_prompt_holds_the_question_its_options_and_what_to_answer():
    mc = next(p for p in load_accuracy() if p.source == "gpqa")
    text = mc.prompt()
    assert text.startswith(mc.question) and "\nA) " in text and "\nD) " in text and "Answer: X" in text
    code = next(p for p in load_accuracy() if p.source == "livecodebench")
    assert code.solution not in code.prompt() and "```python" in code.prompt()


@pytest.mark.parametrize("row, words", [
    ({"id": "x", "dataset": "aime25", "question": "q", "ground_truth": "1000"}, "not an integer 0-999"),
    ({"id": "x", "dataset": "gpqa_diamond", "question": "q", "ground_truth": "E", "options": ["a", "b", "c", "d"]},
     "ground_truth in ABCD"),
    ({"id": "x", "dataset": "livecodebench_v6", "question": "q", "ground_truth": "x"}, "needs its tests"),
    ({"id": "x", "dataset": "livecodebench_v6", "question": "q", "ground_truth": "x", "solution": "s",
      "tests": [{"input": "1", "output": "1", "testtype": "functional"}]}, "functional with the problem's fn_name"),
    ({"id": "x", "dataset": "mmlu", "question": "q", "ground_truth": "A"}, "'mmlu'"),
    ({"id": "", "dataset": "aime25", "question": "q", "ground_truth": "1"}, "'id' must be a non-empty string"),
])
def test_a_row_that_breaks_the_schema_is_named(tmp_path, row, words):
    path = tmp_path / "accuracy.jsonl"
    path.write_text(json.dumps({"id": "ok", "dataset": "aime25", "question": "q", "ground_truth": "1"}) + "\n"
                    + json.dumps(row) + "\n")
    with pytest.raises(DatasetError, match="accuracy.jsonl line 2: .*" + words.replace("(", r"\(").replace(")", r"\)")):
        load_accuracy(path)


def test_an_id_twice_is_refused(tmp_path):
    path = tmp_path / "accuracy.jsonl"
    row = json.dumps({"id": "a", "dataset": "aime25", "question": "q", "ground_truth": "1"})
    path.write_text(row + "\n" + row + "\n")
    with pytest.raises(DatasetError, match="id 'a' twice"):
        load_accuracy(path)
