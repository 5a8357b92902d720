"""Marking a reasoning benchmark's answers: each answer against its row of the accuracy set (its
source, its ground truth, for LiveCodeBench its tests), right or wrong with what was read and why,
and the figure (reasoning.Tally).

Each benchmark reads its answers by its reference evaluator's rules (`Rules`, `RULES`):

| | gpt-oss-120b | deepseek-r1 |
|---|---|---|
| decoded | with special tokens (the harmony channels) | without (`skip_special_tokens=True`) |
| AIME | `parse_aime` | `parse_aime` |
| GPQA | `parse_choice`: the final channel first | `parse_choice_anywhere(D)`: the last `ANSWER: X` |
| MMLU-Pro | - | `parse_choice_anywhere(J)`, a lone letter as the fall-back |
| MATH500 | - | `parse_boxed`, graded by `math_equiv` (PRM800K's rules) |
| LiveCodeBench | `parse_code`: the final channel's last python block | `parse_first_python` |
| figure | weighted by each source's repeats | the plain mean |

Programs run in the sandbox, several at once (`workers`, default the CPUs this process may use);
MATH500's answers are graded together in one limited child (math_equiv.grade_many); the others are
parsed here. A row whose source is not one of the benchmark's is an error naming the row, not a
silent wrong.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..benchmarks import get_benchmark
from ..datasets.gptoss import GPT_OSS_SOURCES
from . import livecodebench, math_equiv, reasoning
from .log import AccuracyLogError, first_per_sample


@dataclass(frozen=True)
class Rules:
    """How one benchmark's answers are read and its figure made (its reference evaluator's rules)."""
    benchmark: str
    sources: tuple[str, ...]                        # the sources its set may hold (reasoning.source_of's)
    repeats: dict = field(default_factory=dict)     # dataset name -> repeats (the figure's weights)

    @property
    def keep_special_tokens(self) -> bool:
        """Whether answers are decoded with their special tokens (the benchmark table says)."""
        return get_benchmark(self.benchmark).keep_special_tokens


GPT_OSS = Rules("gpt-oss-120b", GPT_OSS_SOURCES, dict(reasoning.REPEATS))
DEEPSEEK_R1 = Rules("deepseek-r1", reasoning.SOURCES)
RULES = {r.benchmark: r for r in (GPT_OSS, DEEPSEEK_R1)}


def rules_for(model: str) -> Rules:
    """The rules of the benchmark `model` (ValueError for one that is not a reasoning benchmark)."""
    if model not in RULES:
        raise ValueError(f"{model} is not a reasoning benchmark ({', '.join(RULES)})")
    return RULES[model]


@dataclass(frozen=True)
class Row:
    dataset: str                                    # the source as the set names it (aime25, gpqa_diamond, math500, ...)
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


def _choice(index: int, text: str, row: Row, letter: str | None, letters: str) -> Marked:
    want = str(row.ground_truth).strip().upper()
    right = letter is not None and letter in letters and letter == want
    return Marked(index, row.dataset, right, letter or "",
                  "" if right else ("no choice found" if letter is None else f"{letter} is not {want}"))


def _mark_one(index: int, text: str, row: Row, rules: Rules = GPT_OSS) -> Marked:
    """One answer marked, MATH500's excepted (grade_math marks those, all at once)."""
    source = reasoning.source_of(row.dataset)
    if source not in rules.sources:
        raise ValueError(f"row {index}: dataset {row.dataset!r} is not a source of {rules.benchmark}'s set "
                         f"({', '.join(rules.sources)})")
    deepseek = rules is DEEPSEEK_R1
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
        parse = reasoning.parse_choice_anywhere if deepseek else reasoning.parse_choice
        return _choice(index, text, row, parse(text, "D"), "ABCD")
    if source == "mmlu_pro":
        return _choice(index, text, row, reasoning.parse_choice_anywhere(text, "J"), "ABCDEFGHIJ")
    if source == "math500":
        raise ValueError(f"row {index}: MATH500 answers are graded together (grade_math), not one by one")
    if not row.tests:
        raise ValueError(f"row {index}: LiveCodeBench problem {row.ground_truth!r} has no tests in the data set")
    program = reasoning.parse_first_python(text) if deepseek else reasoning.parse_code(text)
    verdict = livecodebench.run_tests(program, list(row.tests), row.fn_name)
    return Marked(index, row.dataset, verdict.passed, "program" if program else "", verdict.why)


def grade_math(answers: list[tuple[int, str]], rows: list[Row]) -> list[Marked]:
    """MATH500's answers: the last `\\boxed{}` of each, graded against its row's truth by PRM800K's
    rules (math_equiv), every pair in one limited child process."""
    boxed = [reasoning.parse_boxed(text) for _, text in answers]
    verdicts = math_equiv.grade_many([(b, rows[i].ground_truth) for (i, _), b in zip(answers, boxed)])
    return [Marked(i, rows[i].dataset, v.equal, b or "",
                   "" if v.equal else ("no \\boxed{} answer (none closed, or the answer was cut at the output cap)"
                                       if b is None else v.why))
            for (i, _), b, v in zip(answers, boxed, verdicts)]


def mark_all(answers: list[tuple[int, str]], rows: list[Row], workers: int | None = None,
             rules: Rules = GPT_OSS) -> tuple[list[Marked], reasoning.Tally]:
    """Each (row index, answer text) marked against rows[index] by `rules`, in the answers' order;
    the tally."""
    for index, _ in answers:
        if not 0 <= index < len(rows):
            raise ValueError(f"answer for row {index}: the accuracy set has {len(rows)} rows")
    if not workers:
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    is_math = [reasoning.source_of(rows[i].dataset) == "math500" and "math500" in rules.sources
               for i, _ in answers]
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:        # programs: one process each
        others = list(pool.map(lambda pair: _mark_one(pair[0], pair[1], rows[pair[0]], rules),
                               [a for a, m in zip(answers, is_math) if not m]))
    maths = iter(grade_math([a for a, m in zip(answers, is_math) if m], rows))
    rest = iter(others)
    marked = [next(maths) if m else next(rest) for m in is_math]
    tally = reasoning.Tally(repeats=dict(rules.repeats))
    for m in marked:
        tally.add(m.dataset, m.right)
    return marked, tally


def score_log(accuracy_log: str, rows: list[Row], decode: Callable[[Sequence[int]], str], dtype: str = "int32",
              workers: int | None = None, rules: Rules = GPT_OSS) -> tuple[list[Marked], reasoning.Tally]:
    """The accuracy log's answers (the first entry of each sample, decoded by `decode` as `rules` say:
    gpt-oss-120b's harmony channels are read from the special tokens) marked against `rows`."""
    return _mark_entries(_entries(accuracy_log, dtype), rows, decode, workers, rules)


def _entries(accuracy_log: str, dtype: str):
    entries = first_per_sample(accuracy_log, dtype)
    if not entries:
        raise AccuracyLogError(f"accuracy log {accuracy_log} has no entries: nothing to score")
    return entries


def _mark_entries(entries, rows: list[Row], decode: Callable[[Sequence[int]], str], workers: int | None,
                  rules: Rules = GPT_OSS):
    answers = [(e.qsl_idx, decode([int(t) for t in e.token_ids])) for e in entries]
    return mark_all(answers, rows, workers, rules)


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
                 workers: int | None = None, splitter=None, tokenizer=None, tests: str = "",
                 rules: Rules = GPT_OSS) -> ReasoningResult:
    """The accuracy step's entry (pipelines.py): the log decoded as `rules` say, marked against the
    accuracy set `dataset_file` (gptoss.py's layout) and the LiveCodeBench tests file."""
    from ..datasets import gptoss
    from ..datasets.schema import DatasetError
    from .evaluate import EvaluationError, load_tokenizer
    try:
        prompts = gptoss.read_set(dataset_file, "accuracy", sources=rules.sources)
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
    keep = rules.keep_special_tokens
    marked, tally = _mark_entries(entries, rows, lambda ids: tokenizer.decode(ids, skip_special_tokens=not keep),
                                  workers, rules)
    n_tokens = sum(len(e.token_ids) for e in entries)
    by_source: dict = {}
    for m in marked:
        right, total = by_source.get(m.dataset, (0, 0))
        by_source[m.dataset] = (right + m.right, total + 1)
    return ReasoningResult(exact_match=round(tally.exact_match(), 3), gen_num=len(marked),
                           tokens_per_sample=round(n_tokens / max(1, len(entries)), 1),
                           by_source={k: list(v) for k, v in sorted(by_source.items())}, marked=marked,
                           tokenizer=f"{type(tokenizer).__name__} from {tokenizer_path} "
                                     f"(special tokens {'kept' if keep else 'skipped'})",
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
    p.add_argument("--benchmark", default=GPT_OSS.benchmark, choices=sorted(RULES),
                   help="whose rules read the answers (default gpt-oss-120b)")
    args = p.parse_args(argv)
    from .evaluate import EvaluationError
    try:
        result = evaluate_log(args.log, args.dataset, args.tokenizer, args.dtype, tests=args.tests,
                              rules=RULES[args.benchmark])
    except (EvaluationError, AccuracyLogError, ValueError) as e:
        print(f"ERROR: {e}")
        return 1
    for source, (right, total) in result.by_source.items():
        print(f"{source}: {right} of {total} right")
    print("\n" + result.checker_line())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
