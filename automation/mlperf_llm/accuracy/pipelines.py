"""Which evaluation scores a benchmark's accuracy log, chosen by its accuracy spec
(mlperf_llm.benchmarks): the length metric names the reference evaluation it belongs to.

| length metric     | data set (`--dataset_path`)        | evaluation                                              |
|-------------------|------------------------------------|---------------------------------------------------------|
| TOKENS_PER_SAMPLE | the processed OpenOrca pickle      | evaluate.evaluate (llama2-70b's evaluate-accuracy.py)   |
| GEN_LEN           | a cnn_eval.json-layout JSON file   | summarization.evaluate_summaries (llama3.1-8b's evaluation.py) |

A benchmark judged by `exact_match` (gpt-oss-120b, deepseek-r1) is marked by reasoning_eval.evaluate_log
by its own rules (reasoning_eval.RULES) instead,
whatever its length metric: its answers are parsed and run, not compared with reference texts, so it
has no reference answers of rows either (`reference_rows` None), and it reads the LiveCodeBench tests
file (`takes_tests`).

Each pipeline also says how the embedded data set's reference answers of some rows are scored (the
subset rule of process.py): the rows' ids and reference texts, and the answers' metrics under the
keys of reference.json. Both results are a ScoredResult, which is all process.py and report.py read.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Callable, Dict, List, Protocol, Tuple

from ..benchmarks import BenchmarkError, get_benchmark
from .evaluate import EvaluationError, evaluate, score_texts
from .reasoning_eval import evaluate_log, rules_for
from .splitter import SentenceSplitter
from .summarization import evaluate_summaries, score_summaries


class ScoredResult(Protocol):
    gen_num: int                        # rows scored
    sentence_splitter: str              # which splitter ran
    tokenizer: str                      # which tokenizer decoded the log

    def reference_dict(self) -> dict: ...               # the reference's printed dict (accuracy.txt)
    def checker_values(self) -> Dict[str, float]: ...   # the benchmark's metrics under the checker's names
    def as_dict(self) -> dict: ...


@dataclass(frozen=True)
class Pipeline:
    name: str               # the data set's short name: process-mlperf-accuracy's variation (_open-orca, _cnndm)
    data_set: str           # what the data set must be, for messages
    # (accuracy_log, dataset, tokenizer_path, dtype=, workers=, splitter=, tokenizer=) -> ScoredResult
    score_log: Callable
    # (dataset, row indices) -> (the rows' ids, their reference texts)
    reference_rows: Callable[[str, List[int]], Tuple[List[str], List[str]]] | None
    # (reference texts, reference answers {"text", "n_tokens", ...}, splitter) -> metrics (reference.json's keys)
    answer_metrics: Callable[[List[str], List[dict], SentenceSplitter], Dict[str, float]] | None
    takes_tests: bool = False   # score_log(..., tests=FILE): the LiveCodeBench tests file of the data step


def _openorca_rows(dataset: str, indices: List[int]) -> Tuple[List[str], List[str]]:
    import pandas as pd
    rows = pd.read_pickle(dataset).iloc[indices]
    return [str(i) for i in rows["id"]], [str(x) for x in rows["output"]]


def _openorca_answer_metrics(references, answers, splitter) -> Dict[str, float]:
    metrics = score_texts(references, [a["text"] for a in answers], splitter=splitter)
    metrics["tokens_per_sample"] = round(sum(a["n_tokens"] for a in answers) / len(answers), 1)
    return metrics


def _summary_rows(dataset: str, indices: List[int]) -> Tuple[List[str], List[str]]:
    from ..datasets.cnndm import read_rows
    from ..datasets.cnndm_embedded import story_ids
    from ..datasets.schema import DatasetError
    try:
        rows = read_rows(dataset)
        chosen = [rows[i] for i in indices]
        return story_ids(chosen), [row.output for row in chosen]
    except DatasetError as e:
        raise EvaluationError(f"{dataset} is not the embedded one the reference answers were made for: {e}") from None


def _summary_answer_metrics(references, answers, splitter) -> Dict[str, float]:
    return score_summaries(predictions=[a["text"] for a in answers], references=references,
                           splitter=splitter).as_dict()


PIPELINES: Dict[str, Pipeline] = {
    "TOKENS_PER_SAMPLE": Pipeline("open-orca", "the processed OpenOrca pickle of the run", evaluate,
                                  _openorca_rows, _openorca_answer_metrics),
    "GEN_LEN": Pipeline("cnndm", "the cnn_eval.json-layout file of the run", evaluate_summaries,
                        _summary_rows, _summary_answer_metrics),
}


REASONING = Pipeline("reasoning", "the accuracy set of the run (gpt-oss layout) and its LiveCodeBench tests",
                     evaluate_log, None, None, takes_tests=True)


def pipeline_for(model: str) -> Pipeline:
    """The pipeline of the benchmark `model` (EvaluationError for a name the table does not know)."""
    try:
        bench = get_benchmark(model)
    except BenchmarkError as e:
        raise EvaluationError(str(e)) from None
    if "exact_match" in bench.accuracy.metrics:
        return replace(REASONING, score_log=partial(evaluate_log, rules=rules_for(bench.name)))
    return PIPELINES[bench.accuracy.length_metric]
