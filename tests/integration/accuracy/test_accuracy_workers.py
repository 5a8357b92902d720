"""Scoring over a pool of worker processes gives the very numbers one process gives (the golden log)."""
import json

from mlperf_llm.accuracy.evaluate import evaluate


def test_two_worker_processes_give_the_recorded_numbers(golden):
    one = evaluate(golden["log"], golden["dataset"], golden["tokenizer"], workers=1)
    two = evaluate(golden["log"], golden["dataset"], golden["tokenizer"], workers=2)
    expected = {k: v for k, v in golden["expected"].items() if k != "sentence_splitter"}
    assert two.reference_dict() == one.reference_dict() == expected, json.dumps(two.reference_dict())
