"""The embedded stand-in of deepseek-r1's data set: 28 questions of the five sources, written for
this project, in the reference's schema (deepseek.py), so the schema reader, the rendering and the
scorer all run on the embedded model in minutes.

`embedded_deepseek/questions.jsonl` (its README says more): new MATH500-like rows (a LaTeX answer)
and MMLU-Pro-like rows (ten options, a letter A-J), a very easy AIME-like row, and the rest taken by
id (`{"from": "int-01"}`) from the embedded reasoning problems (reasoning_embedded.py), whose
programming problems bring their tests and our solutions. The rows take turns by source, so a
test-mode run of the first N marks every source.

Each row's text_input is the question as the reference's prompts put it: integer and LaTeX answers
"within \\boxed{}", multiple choice ending "ANSWER: X", a program in one ```python block.
The prompts are rendered with the embedded model's own chat template followed by THINK_PREFIX: the
stand-in for DeepSeek-R1's template, whose generation prompt opens a think section (`<think>\\n`);
SmolLM2's does not, so the prefix is added after it.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from cmcontract.publish import staged_file

from . import deepseek, gptoss, reasoning_embedded
from .reasoning_embedded import Problem
from .schema import DatasetError
from .tokenizer import ModelTokenizer

EMBEDDED_DIR = Path(__file__).resolve().parent / "embedded_deepseek"
QUESTIONS_FILE = EMBEDDED_DIR / "questions.jsonl"
REFERENCE_FILE = "embedded_deepseek_r1.pkl"
CALIBRATION_FILE = "embedded_deepseek_r1_calibration.pkl"
PREPARED_FILE = "embedded_deepseek_r1_input_tokens.parquet"
TESTS_FILE = "embedded_" + gptoss.TESTS_FILE
THINK_PREFIX = "<think>\n"
PROMPT_FORMAT = "the embedded model's chat template, then '<think>\\n' (DeepSeek-R1's generation prompt)"
BOXED = "Please reason step by step, and put your final answer within \\boxed{}."
CHOICE = ("Answer the following multiple choice question. The last line of your response should be of the "
          "following format: 'ANSWER: $LETTER' (without quotes) where LETTER is one of {letters}. Think step "
          "by step before answering.")
CODE = ("You will be given a question (problem specification) and will generate a correct Python program that "
        "matches the specification and passes all tests.\n\nQuestion: {question}\n\n")
STDIN = ("Read the inputs from stdin, solve the problem and write the answer to stdout. Enclose your code "
         "within delimiters as follows.\n```python\n# YOUR CODE HERE\n```")
FUNCTIONAL = "Write the class Solution with its method, and enclose your code in one ```python block."


def _bad(n: int, what: str) -> DatasetError:
    return DatasetError(f"{QUESTIONS_FILE.name} line {n}: {what}; fix the line (the file is ours, "
                        f"{QUESTIONS_FILE.parent.name}/README.md says how it is written).")


def _row(n: int, raw: dict, reused: dict[str, Problem]) -> Problem:
    if "from" in raw:
        if raw["from"] not in reused:
            raise _bad(n, f"'from' {raw['from']!r} is not an id of {reasoning_embedded.ACCURACY_FILE.name}")
        p = reused[raw["from"]]
        return dataclasses.replace(p, dataset=p.source)
    for key in ("id", "dataset", "question", "ground_truth"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise _bad(n, f"'{key}' must be a non-empty string")
    if raw["dataset"] not in ("aime", "math500") + tuple(deepseek.LETTERS):
        raise _bad(n, f"dataset {raw['dataset']!r}: new rows are aime, math500, gpqa or mmlu_pro (programs come "
                      "'from' the reasoning problems, with their tests)")
    options = tuple(raw.get("options") or ())
    letters = deepseek.LETTERS.get(raw["dataset"], "")
    if len(options) != len(letters):
        raise _bad(n, f"a {raw['dataset']} row needs {len(letters)} options (has {len(options)})")
    return Problem(raw["id"], raw["dataset"], raw["question"], raw["ground_truth"], options)


def load(path: Path = QUESTIONS_FILE) -> list[Problem]:
    """The embedded questions, in order, each with `dataset` the source's name (aime, math500, gpqa,
    mmlu_pro, livecodebench)."""
    reused = {p.id: p for p in reasoning_embedded.load_accuracy()}
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                raw = json.loads(line)
            except ValueError as e:
                raise _bad(n, f"not JSON ({e})") from None
            rows.append(_row(n, raw, reused))
    ids = [p.id for p in rows]
    if len(set(ids)) != len(ids):
        raise DatasetError(f"{path.name}: an id is there twice ({sorted({i for i in ids if ids.count(i) > 1})})")
    return rows


def text_input(p: Problem) -> str:
    """The question as the model gets it, as the reference's prompts ask for each source's answer."""
    if p.source in deepseek.LETTERS:
        letters = deepseek.LETTERS[p.source]
        options = "\n".join(f"{letters[i]}) {o}" for i, o in enumerate(p.options))
        return f"{CHOICE.format(letters=letters)}\n\n{p.question}\n\n{options}"
    if p.source == "livecodebench":
        return CODE.format(question=p.question) + (FUNCTIONAL if p.fn_name else STDIN)
    return f"{p.question}\n{BOXED}"


def write_reference(problems: list[Problem], path) -> Path:
    """The questions as the reference's pickle: text_input, ground_truth, dataset, question."""
    import pandas as pd
    df = pd.DataFrame({"text_input": [text_input(p) for p in problems],
                       "ground_truth": [p.ground_truth for p in problems],
                       "dataset": [p.dataset for p in problems], "question": [p.question for p in problems]})
    with staged_file(Path(path)) as tmp:
        df.to_pickle(tmp)
    return Path(path)


def write_calibration(path) -> Path:
    """The calibration stand-in: the embedded performance questions (never scored, kept apart from the
    scored set as the real calibration set is), text_input only."""
    import pandas as pd
    questions = reasoning_embedded.load_performance()
    with staged_file(Path(path)) as tmp:
        pd.DataFrame({"text_input": questions, "question": questions}).to_pickle(tmp)
    return Path(path)


def build_embedded(tokenizer_dir, out_dir, calibration: bool = False) -> dict[str, Path]:
    """Write into out_dir the reference-schema pickle, read it back through deepseek.read_reference,
    render it (the embedded model's template + THINK_PREFIX) into the token-set parquet, and write the
    programs' tests file; {"reference", "prepared", "tests"[, "calibration"]: path}."""
    problems, out_dir = load(), Path(out_dir)
    paths = {"reference": write_reference(problems, out_dir / REFERENCE_FILE)}
    questions = deepseek.read_reference(paths["reference"], "accuracy", len(problems))
    prompts = deepseek.render(questions, ModelTokenizer.from_folder(tokenizer_dir), think_prefix=THINK_PREFIX)
    paths["prepared"] = gptoss.write_set(prompts, out_dir / PREPARED_FILE)
    tests = [gptoss.Problem(p.ground_truth, p.tests, p.fn_name) for p in problems if p.source == "livecodebench"]
    paths["tests"] = gptoss.write_tests(tests, out_dir / TESTS_FILE)
    if calibration:
        paths["calibration"] = write_calibration(out_dir / CALIBRATION_FILE)
    return paths


def expected_rows() -> dict[str, int]:
    """The embedded set's rows, and its calibration set's."""
    return {"accuracy": len(load()), "calibration": len(reasoning_embedded.load_performance())}
