"""The embedded reasoning sets (gpt-oss-120b's stand-in): problems written for this project, in the
three sources of the real accuracy set and named as it names them, and a performance set of its own.

- `embedded_reasoning/accuracy.jsonl`: integer problems (`aime25`: the answer an integer 0-999),
  four-way multiple choice (`gpqa_diamond`: `options`, the answer a letter A-D) and small programming
  problems (`livecodebench_v6`: the problem's `tests`, stdin or functional with its `fn_name`, and a
  `solution` of ours that passes them; the model never sees it). The ground truth of a programming
  problem is its id, as the real set's is LiveCodeBench's question id.
- `embedded_reasoning/performance.jsonl`: other questions, for performance runs only (the real
  benchmark keeps the two sets apart).

`load_accuracy` / `load_performance` read and check them (a row that breaks the schema is a
DatasetError naming the row and the field); `rows()` gives the scorer's rows (accuracy/reasoning_eval.Row);
`instruction()` says what each source asks of an answer.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..accuracy.livecodebench import Test
from ..accuracy.reasoning import source_of
from ..accuracy.reasoning_eval import Row
from .schema import DatasetError

EMBEDDED_DIR = Path(__file__).resolve().parent / "embedded_reasoning"
ACCURACY_FILE = EMBEDDED_DIR / "accuracy.jsonl"
PERFORMANCE_FILE = EMBEDDED_DIR / "performance.jsonl"
LETTERS = "ABCD"
INSTRUCTIONS = {
    "aime": "Solve the problem. Give the final answer, an integer, as \\boxed{N}.",
    "gpqa": "Choose one option. End with 'Answer: X', X the option's letter.",
    "livecodebench": "Write a Python 3 program that solves it, in one ```python block.",
}


@dataclass(frozen=True)
class Problem:
    id: str
    dataset: str
    question: str
    ground_truth: str
    options: tuple[str, ...] = ()
    tests: tuple[Test, ...] = ()
    fn_name: str = ""
    solution: str = ""

    @property
    def source(self) -> str:
        return source_of(self.dataset)

    def prompt(self) -> str:
        """The question as the model gets it: the question, its options lettered, what to answer."""
        options = "".join(f"\n{LETTERS[i]}) {o}" for i, o in enumerate(self.options))
        return f"{self.question}{options}\n\n{INSTRUCTIONS[self.source]}"


def _bad(path: Path, n: int, what: str) -> DatasetError:
    return DatasetError(f"{path.name} line {n}: {what}")


def _problem(path: Path, n: int, raw: dict) -> Problem:
    for key in ("id", "dataset", "question", "ground_truth"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise _bad(path, n, f"'{key}' must be a non-empty string")
    try:
        source = source_of(raw["dataset"])
    except ValueError as e:
        raise _bad(path, n, str(e)) from None
    truth = raw["ground_truth"]
    if source == "aime" and not (truth.isdigit() and 0 <= int(truth) <= 999):
        raise _bad(path, n, f"an integer problem's ground_truth {truth!r} is not an integer 0-999")
    options = tuple(raw.get("options") or ())
    if source == "gpqa" and (len(options) != len(LETTERS) or truth not in LETTERS):
        raise _bad(path, n, f"a multiple-choice problem needs {len(LETTERS)} options and a ground_truth in "
                            f"{LETTERS} (has {len(options)} options, {truth!r})")
    tests = tuple(Test.from_json(t) for t in raw.get("tests") or ())
    if source == "livecodebench":
        if not tests or not raw.get("solution"):
            raise _bad(path, n, "a programming problem needs its tests and our solution")
        kinds = {t.kind for t in tests}
        if kinds - {"stdin", "functional"} or ("functional" in kinds) != bool(raw.get("fn_name")):
            raise _bad(path, n, "tests are stdin, or functional with the problem's fn_name")
    return Problem(raw["id"], raw["dataset"], raw["question"], truth, options, tests, raw.get("fn_name") or "",
                   raw.get("solution") or "")


def _lines(path: Path):
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                yield n, json.loads(line)
            except ValueError as e:
                raise _bad(path, n, f"not JSON ({e})") from None


def load_accuracy(path: Path = ACCURACY_FILE) -> list[Problem]:
    problems = [_problem(path, n, raw) for n, raw in _lines(path)]
    seen: set[str] = set()
    for p in problems:
        if p.id in seen:
            raise DatasetError(f"{path.name}: id {p.id!r} twice")
        seen.add(p.id)
    return problems


def load_performance(path: Path = PERFORMANCE_FILE) -> list[str]:
    """The performance set's questions."""
    out = []
    for n, raw in _lines(path):
        if not isinstance(raw.get("question"), str) or not raw["question"].strip():
            raise _bad(path, n, "'question' must be a non-empty string")
        out.append(raw["question"])
    return out


def rows(problems: list[Problem]) -> list[Row]:
    """The scorer's rows, in the set's order (a row's index is its sample index)."""
    return [Row(p.dataset, p.ground_truth, p.tests, p.fn_name) for p in problems]
