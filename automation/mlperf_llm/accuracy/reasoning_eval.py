"""Marking a reasoning benchmark's answers: each answer against its row of the accuracy set (its
source, its ground truth, for LiveCodeBench its tests), right or wrong with what was read and why,
and the repeat-weighted figure (reasoning.Tally).

Programs run in the sandbox, several at once (`workers`, default the CPUs this process may use);
the other sources are parsed here. A row whose source is not one of the benchmark's is an error
naming the row, not a silent wrong.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Sequence

from . import livecodebench, reasoning
from .log import AccuracyLogError, first_per_sample


@dataclass(frozen=True)
class Row:
    dataset: str                                    # aime25 | gpqa_diamond | livecodebench_v6 (as the set names it)
    ground_truth: str                               # the integer, the letter, or the problem's id
    tests: tuple[livecodebench.Test, ...] = ()      # LiveCodeBench: the problem's tests
    fn_name: str = ""                               # LiveCodeBench: the method functional tests call


@dataclass(frozen=True)
class Marked:
    index: int                                      # the row's index in the set (LoadGen's qsl_idx)
    dataset: str
    right: bool
    read: str                                       # what was read from the answer ('' for nothing)
    why: str                                        # why it is wrong ('' when right)


def _mark_one(index: int, text: str, row: Row) -> Marked:
    source = reasoning.source_of(row.dataset)
    if source == "aime":
        value = reasoning.parse_aime(text)
        try:
            want = int(str(row.ground_truth).strip())
        except ValueError:
            raise ValueError(f"row {index}: AIME ground truth {row.ground_truth!r} is not an integer") from None
        right = value is not None and value == want
        return Marked(index, row.dataset, right, "" if value is None else str(value),
                      "" if right else ("no integer answer found" if value is None else f"{value} is not {want}"))
    if source == "gpqa":
        letter = reasoning.parse_choice(text, "D")
        want = str(row.ground_truth).strip().upper()
        right = letter is not None and letter in "ABCD" and letter == want
        return Marked(index, row.dataset, right, letter or "",
                      "" if right else ("no choice found" if letter is None else f"{letter} is not {want}"))
    if not row.tests:
        raise ValueError(f"row {index}: LiveCodeBench problem {row.ground_truth!r} has no tests in the data set")
    program = reasoning.parse_code(text)
    verdict = livecodebench.run_tests(program, list(row.tests), row.fn_name)
    return Marked(index, row.dataset, verdict.passed, "program" if program else "", verdict.why)


def mark_all(answers: list[tuple[int, str]], rows: list[Row], workers: int | None = None
             ) -> tuple[list[Marked], reasoning.Tally]:
    """Each (row index, answer text) marked against rows[index], in the answers' order; the tally."""
    for index, _ in answers:
        if not 0 <= index < len(rows):
            raise ValueError(f"answer for row {index}: the accuracy set has {len(rows)} rows")
    if not workers:
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:        # programs: one process each
        marked = list(pool.map(lambda pair: _mark_one(pair[0], pair[1], rows[pair[0]]), answers))
    tally = reasoning.Tally()
    for m in marked:
        tally.add(m.dataset, m.right)
    return marked, tally


def score_log(accuracy_log: str, rows: list[Row], decode: Callable[[Sequence[int]], str], dtype: str = "int32",
              workers: int | None = None) -> tuple[list[Marked], reasoning.Tally]:
    """The accuracy log's answers (the first entry of each sample, decoded by `decode`, which must keep
    the special tokens: the harmony channels are read from them) marked against `rows`."""
    return _mark_entries(_entries(accuracy_log, dtype), rows, decode, workers)


def _entries(accuracy_log: str, dtype: str):
    entries = first_per_sample(accuracy_log, dtype)
    if not entries:
        raise AccuracyLogError(f"accuracy log {accuracy_log} has no entries: nothing to score")
    return entries


def _mark_entries(entries, rows: list[Row], decode: Callable[[Sequence[int]], str], workers: int | None):
    answers = [(e.qsl_idx, decode([int(t) for t in e.token_ids])) for e in entries]
    return mark_all(answers, rows, workers)


@dataclass
class ReasoningResult:
    """A reasoning benchmark's accuracy log, marked: what accuracy.txt prints (the reference's
    `'exact_match': X` line, the one the checker reads) and each answer's mark (accuracy.json)."""
    exact_match: float
    gen_num: int                                    # answers marked
    tokens_per_sample: float                        # mean tokens of the answers (the log's token counts)
    by_source: dict                                 # dataset -> [right, total]
    marked: list
    tokenizer: str
    tally: reasoning.Tally
    sentence_splitter: str = "none (answers are parsed, not split)"

    def checker_line(self) -> str:
        return self.tally.checker_line()

    def reference_dict(self) -> dict:
        return {"exact_match": self.exact_match, "tokens_per_sample": self.tokens_per_sample,
                "gen_num": self.gen_num}

    def checker_values(self) -> dict:
        return {"exact_match": self.exact_match, "TOKENS_PER_SAMPLE": self.tokens_per_sample}

    def as_dict(self) -> dict:
        return {"exact_match": self.exact_match, "gen_num": self.gen_num, "tokens_per_sample": self.tokens_per_sample,
                "by_source": self.by_source, "tokenizer": self.tokenizer,
                "answers": [{"qsl_idx": m.index, "dataset": m.dataset, "right": m.right, "read": m.read, "why": m.why}
                            for m in self.marked]}


def evaluate_log(accuracy_log: str, dataset_file: str, tokenizer_path: str, dtype: str = "int32",
                 workers: int | None = None, splitter=None, tokenizer=None, tests: str = "") -> ReasoningResult:
    """The accuracy step's entry (pipelines.py): the log decoded with its special tokens, marked
    against the accuracy set `dataset_file` (gptoss.py's layout) and the LiveCodeBench tests file."""
    from ..datasets import gptoss
    from ..datasets.schema import DatasetError
    from .evaluate import EvaluationError, load_tokenizer
    try:
        prompts = gptoss.read_set(dataset_file, "accuracy")
        problems = gptoss.read_tests(tests) if any(
            reasoning.source_of(p.dataset) == "livecodebench" for p in prompts) else {}
    except DatasetError as e:
        raise EvaluationError(str(e)) from None
    rows = []
    for p in prompts:
        problem = problems.get(p.ground_truth) if reasoning.source_of(p.dataset) == "livecodebench" else None
        rows.append(Row(p.dataset, p.ground_truth, problem.tests if problem else (), problem.fn_name if problem else ""))
    tokenizer = tokenizer or load_tokenizer(tokenizer_path)
    entries = _entries(accuracy_log, dtype)      # read once: marked, and counted for tokens_per_sample
    marked, tally = _mark_entries(entries, rows, lambda ids: tokenizer.decode(ids, skip_special_tokens=False),
                                  workers)
    n_tokens = sum(len(e.token_ids) for e in entries)
    by_source: dict = {}
    for m in marked:
        right, total = by_source.get(m.dataset, (0, 0))
        by_source[m.dataset] = (right + m.right, total + 1)
    return ReasoningResult(exact_match=round(tally.exact_match(), 3), gen_num=len(marked),
                           tokens_per_sample=round(n_tokens / max(1, len(entries)), 1),
                           by_source={k: list(v) for k, v in sorted(by_source.items())}, marked=marked,
                           tokenizer=f"{type(tokenizer).__name__} from {tokenizer_path} (special tokens kept)",
                           tally=tally)


def main(argv: list[str] | None = None) -> int:
    """`python -m mlperf_llm.accuracy.reasoning_eval --log LOG --dataset SET --tokenizer DIR [--tests FILE]`:
    the log marked, the reference's lines printed (TEST07's verification reads `'exact_match': X`)."""
    import argparse
    p = argparse.ArgumentParser(prog="python -m mlperf_llm.accuracy.reasoning_eval", description=main.__doc__)
    p.add_argument("--log", required=True, help="mlperf_log_accuracy.json")
    p.add_argument("--dataset", required=True, help="the set the run read (gpt-oss layout: accuracy or TEST07's)")
    p.add_argument("--tokenizer", required=True, help="the model folder (its tokenizer decodes the answers)")
    p.add_argument("--tests", default="", help="the LiveCodeBench tests file (the data step's)")
    p.add_argument("--dtype", default="int32")
    args = p.parse_args(argv)
    from .evaluate import EvaluationError
    try:
        result = evaluate_log(args.log, args.dataset, args.tokenizer, args.dtype, tests=args.tests)
    except (EvaluationError, AccuracyLogError, ValueError) as e:
        print(f"ERROR: {e}")
        return 1
    for source, (right, total) in result.by_source.items():
        print(f"{source}: {right} of {total} right")
    print("\n" + result.checker_line())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
