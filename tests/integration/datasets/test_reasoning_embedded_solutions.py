"""The embedded programming problems' tests are right: our solution to each passes them in the
sandbox, and an answer that prints nothing fails each (so the tests check something); marked as the
scorer marks answers (accuracy/reasoning_eval.py)."""
from mlperf_llm.accuracy.reasoning_eval import mark_all
from mlperf_llm.datasets.reasoning_embedded import load_accuracy, rows


def test_each_solution_passes_its_tests_and_an_empty_program_fails_them():
    problems = load_accuracy()
    code = [i for i, p in enumerate(problems) if p.source == "livecodebench"]
    right = [(i, f"```python\n{problems[i].solution}```") for i in code]
    marked, _ = mark_all(right, rows(problems), workers=2)
    assert [(m.index, m.why) for m in marked if not m.right] == []
    wrong = [(i, "```python\npass\n```") for i in code]
    marked, tally = mark_all(wrong, rows(problems), workers=2)
    assert not any(m.right for m in marked) and tally.exact_match() == 0.0
