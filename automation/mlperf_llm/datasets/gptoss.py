"""gpt-oss-120b's data sets in the layout its reference reads (language/gpt-oss-120b of
mlcommons/inference): parquet tables, one row a prompt (a pandas pickle is read too, as the reference does).

    input_tokens  the prompt's token ids, rendered in OpenAI's harmony format, the reasoning effort in
                  its system message (`tok_input`: the name before the reference's v4.0 layout)
    dataset       the row's source: aime25 | gpqa_diamond | livecodebench_v6 (the accuracy sets)
    ground_truth  the integer, the option letter, or LiveCodeBench's question id (the accuracy sets)

The MLCommons data set has three files (SETS): the accuracy set, the performance set and TEST07's
GPQA compliance set; a row is addressed by its position (LoadGen's sample index). LiveCodeBench's
tests are in none of them: the reference fetches them from the Hugging Face hub while it scores. Here
the data step writes them once into a tests file of ours (TESTS_FILE: one problem a line, its question
id, fn_name and tests), from LiveCodeBench's release files or the embedded problems, and the scorer
reads that file; nothing is fetched while scoring.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from cmcontract.publish import staged_file

from ..accuracy.livecodebench import Test, decode_tests
from ..accuracy.reasoning import source_of
from .schema import DatasetError, read_table

TOKENS = "input_tokens"
OLD_TOKENS = "tok_input"
TESTS_FILE = "livecodebench_tests.jsonl"


@dataclass(frozen=True)
class SetSpec:
    kind: str           # accuracy | performance | compliance
    file: str           # its name in the MLCommons data set (perf/ and acc/ folders of the checksum list)
    rows: int
    scored: bool        # its rows carry dataset and ground_truth (answers are marked against them)
    use: str            # what reads it, for messages


SETS = {
    "accuracy": SetSpec("accuracy", "acc_eval_inputs.parquet", 4395, True,
                        "accuracy runs (AIME'25 x8, GPQA-diamond x5, LiveCodeBench v6 x3)"),
    "performance": SetSpec("performance", "perf_eval_ref.parquet", 6396, False, "performance runs and TEST09"),
    "compliance": SetSpec("compliance", "acc_eval_compliance_gpqa.parquet", 990, True,
                          "TEST07 (GPQA-diamond x5, accuracy in performance mode)"),
}


@dataclass(frozen=True)
class Prompt:
    input_tokens: tuple[int, ...]
    dataset: str = ""
    ground_truth: str = ""


@dataclass(frozen=True)
class Problem:
    """A LiveCodeBench problem's tests, as the scorer runs them."""
    question_id: str
    tests: tuple[Test, ...]
    fn_name: str = ""

    def to_json(self) -> dict:
        return {"question_id": self.question_id, "fn_name": self.fn_name,
                "tests": [{"input": t.given, "output": t.expected, "testtype": t.kind} for t in self.tests]}


def _ids(value, where: str) -> tuple[int, ...]:
    try:
        ids = tuple(int(t) for t in value)
    except (TypeError, ValueError):
        raise DatasetError(f"{where}: {TOKENS} is not a list of token ids ({type(value).__name__}); the file is "
                           "not a gpt-oss data set (prompts pre-rendered as token ids).") from None
    if not ids or min(ids) < 0:
        raise DatasetError(f"{where}: {TOKENS} is empty or has a negative id; download the file again.")
    return ids


# the sources of gpt-oss-120b's sets; a token set of deepseek-r1 (datasets/deepseek.py) has all five
GPT_OSS_SOURCES = ("aime", "gpqa", "livecodebench")


def read_set(path, kind: str, expect_rows: int | None = None,
             sources: tuple[str, ...] = GPT_OSS_SOURCES) -> list[Prompt]:
    """Every row of a token set file (gpt-oss-120b's layout, which deepseek-r1's rendered set shares),
    checked for the columns its kind needs, its rows' sources (scored sets) and, with `expect_rows`,
    its row count; DatasetError names the file, the column or row, and the fix."""
    spec, path = SETS[kind], Path(path)
    df = read_table(path, "gpt-oss data set", "pass the file you have, let the data step download the "
                    "MLCommons set, or run with _embedded.")
    columns = list(getattr(df, "columns", ()))
    tokens = TOKENS if TOKENS in columns else OLD_TOKENS if OLD_TOKENS in columns else None
    need = ["dataset", "ground_truth"] if spec.scored else []
    missing = ([] if tokens else [TOKENS]) + [c for c in need if c not in columns]
    if missing:
        raise DatasetError(f"{path} lacks column(s) {missing} (it has {columns[:12]}); the {kind} set of gpt-oss-120b "
                           f"({spec.file} of the MLCommons data set) has {TOKENS}"
                           f"{', dataset, ground_truth' if spec.scored else ''}: pass that file.")
    if len(df) == 0:
        raise DatasetError(f"{path} has no rows; download it again.")
    if expect_rows is not None and len(df) != expect_rows:
        raise DatasetError(f"{path} has {len(df)} rows, but the {kind} set has {expect_rows}; the file is incomplete "
                           f"or another set (the three: {', '.join(f'{s.kind} {s.rows}' for s in SETS.values())}): "
                           "download it again or pass the right file.")
    rows = []
    for i, rec in enumerate(df.to_dict("records")):
        where = f"{path}: row {i}"
        source, truth = str(rec.get("dataset") or ""), str(rec.get("ground_truth") or "").strip()
        if spec.scored:
            try:
                if source_of(source) not in sources:
                    raise ValueError(f"dataset {source!r} is not a source of this set ({', '.join(sources)})")
            except ValueError as e:
                raise DatasetError(f"{where}: {e}") from None
            if not truth:
                raise DatasetError(f"{where}: ground_truth is empty; the file is damaged: download it again.")
        rows.append(Prompt(_ids(rec[tokens], where), source, truth))
    return rows


def write_set(rows: list[Prompt], path) -> Path:
    """Write rows as a gpt-oss data set parquet table, atomically."""
    import pandas as pd
    if not rows:
        raise DatasetError(f"no rows to write to {path}")
    df = pd.DataFrame({TOKENS: [list(r.input_tokens) for r in rows], "dataset": [r.dataset for r in rows],
                       "ground_truth": [r.ground_truth for r in rows]})
    path = Path(path)
    with staged_file(path) as tmp:
        df.to_parquet(tmp, index=False)
    return path


def write_tests(problems: list[Problem], path) -> Path:
    path = Path(path)
    with staged_file(path) as tmp:
        Path(tmp).write_text("".join(json.dumps(p.to_json()) + "\n" for p in problems), encoding="utf-8")
    return path


def read_tests(path) -> dict[str, Problem]:
    """The tests file the data step wrote: question id -> Problem."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"LiveCodeBench tests file {path} does not exist; the gpt-oss data step writes it "
                           f"({TESTS_FILE} beside the data set): run it again.")
    out = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            problem = Problem(str(raw["question_id"]), tuple(Test.from_json(t) for t in raw["tests"]),
                              str(raw.get("fn_name") or ""))
        except (ValueError, KeyError, TypeError) as e:
            raise DatasetError(f"{path} line {n}: not a problem's tests ({type(e).__name__}: {e}); the data step "
                               "writes this file: run it again.") from None
        if not problem.tests:
            raise DatasetError(f"{path} line {n}: problem {problem.question_id} has no tests.")
        out[problem.question_id] = problem
    return out


def problems_from_release(lines, where: str) -> list[Problem]:
    """LiveCodeBench release file lines (code_generation_lite's test*.jsonl: question_id,
    public_test_cases, private_test_cases, metadata) as Problems; the private tests decoded without
    unpickling anything but plain data (livecodebench.decode_tests)."""
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            tests = decode_tests(raw["public_test_cases"]) + decode_tests(raw.get("private_test_cases") or "[]")
            meta = json.loads(raw.get("metadata") or "{}")
            out.append(Problem(str(raw["question_id"]), tuple(tests), str(meta.get("func_name") or "")))
        except Exception as e:  # JSON, base64, zlib, a refused pickle: the line is not a problem we can run
            raise DatasetError(f"{where} line {n}: not a LiveCodeBench problem ({type(e).__name__}: "
                               f"{str(e)[:160]}); use code_generation_lite's release files.") from None
    return out


def check_tests_cover(rows: list[Prompt], problems: dict[str, Problem], where: str) -> None:
    """Every LiveCodeBench row of an accuracy set has its problem's tests, or DatasetError naming one."""
    lacking = sorted({r.ground_truth for r in rows if source_of(r.dataset) == "livecodebench"} - set(problems))
    if lacking:
        raise DatasetError(f"{where}: {len(lacking)} LiveCodeBench problem(s) of the accuracy set have no tests "
                           f"(first: {lacking[0]}); the tests file holds another release: fetch release_v6's.")
