"""Readers for what LoadGen and the accuracy/compliance steps leave behind.

- mlperf_log_detail.txt: lines `:::MLLOG {json}`; the last value of a key wins; errors are kept.
- accuracy.txt: the dict evaluate-accuracy.py prints, read with the checker's patterns, and `hash=`.
- verify_accuracy.txt: the TEST06 pass lines.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from .errors import SubmissionError

ACCURACY_PATTERNS = {          # metric -> pattern (the checker's ACC_PATTERN, v5.1.1 and master)
    "ROUGE1": r".*'rouge1':\s+'?([\d.]+)'?.*",
    "ROUGE2": r".*'rouge2':\s+'?([\d.]+)'?.*",
    "ROUGEL": r".*'rougeL':\s+'?([\d.]+)'?.*",
    "ROUGELSUM": r".*'rougeLsum':\s+'?([\d.]+)'?.*",
    "GEN_LEN": r".*'gen_len':\s([\d.]+).*",
    "TOKENS_PER_SAMPLE": r".*'tokens_per_sample':\s([\d.]+).*",
    "exact_match": r".*'exact_match':\s([\d.]+).*",          # gpt-oss-120b (the checker's pattern, master)
}
HASH_PATTERN = r"^hash=([\w\d]+)$"


@dataclass
class DetailLog:
    path: str
    values: dict = field(default_factory=dict)
    errors: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    def get(self, key, default=None):
        return self.values.get(key, default)

    @property
    def valid(self) -> bool:
        return self.values.get("result_validity") == "VALID"

    def failed_conditions(self) -> list[str]:
        """Which of LoadGen's own validity conditions failed (names as in the summary)."""
        names = {"result_perf_constraints_met": "performance constraints",
                 "result_min_duration_met": "min duration",
                 "result_min_queries_met": "min queries",
                 "early_stopping_met": "early stopping"}
        return [label for key, label in names.items() if self.values.get(key) is False]


def read_detail_log(path: str) -> DetailLog:
    log = DetailLog(path)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError as e:
        raise SubmissionError(path, f"cannot be read ({e.strerror})",
                              "point the results folder at a complete LoadGen run") from None
    for line in lines:
        if not line.startswith(":::MLLOG"):
            continue
        try:
            entry = json.loads(line[len(":::MLLOG"):])
        except json.JSONDecodeError:
            continue
        log.values[entry.get("key")] = entry.get("value")
        meta = entry.get("metadata") or {}
        if meta.get("is_error"):
            log.errors.append(str(entry.get("value")))
        elif meta.get("is_warning"):
            log.warnings.append(str(entry.get("value")))
    if not log.values:
        raise SubmissionError(path, "holds no :::MLLOG lines", "use the detail log LoadGen wrote, unedited")
    return log


@dataclass
class AccuracyResult:
    values: dict              # metric -> float, for the metrics found
    hash: str | None
    text: str


def read_accuracy_txt(path: str) -> AccuracyResult:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    values, hash_val = {}, None
    for line in text.splitlines():
        for metric, pattern in ACCURACY_PATTERNS.items():
            m = re.match(pattern, line)
            if m and metric not in values:
                values[metric] = float(m.group(1))
        m = re.match(HASH_PATTERN, line)
        if m:
            hash_val = m.group(1)
    if not values:
        raise SubmissionError(path, "holds no ROUGE, exact_match, tokens_per_sample or gen_len values",
                              "run process-mlperf-accuracy on this accuracy log")
    return AccuracyResult(values, hash_val, text)


def read_verify_accuracy(path: str) -> dict:
    """TEST06 verify_accuracy.txt -> {'first_token': 'True'|'Skipped'|..., 'eos': ..., 'length': ...}."""
    with open(path, encoding="utf-8") as f:
        lines = [line.strip() for line in f]
    found = {}
    for key, prefix in (("first_token", "First token check pass: "), ("eos", "EOS check pass: "),
                        ("length", "Sample length check pass: ")):
        found[key] = next((line[len(prefix):] for line in lines if line.startswith(prefix)), "missing")
    return found


def verification_passes(checks: dict) -> bool:
    return checks["first_token"] in ("True", "Skipped") and checks["eos"] == "True" and checks["length"] == "True"


def count_accuracy_entries(path: str) -> int:
    """Number of entries in an untruncated mlperf_log_accuracy.json (0 for LoadGen's empty `[\n]`)."""
    with open(path, encoding="utf-8") as f:
        try:
            return len(json.load(f))
        except json.JSONDecodeError as e:
            raise SubmissionError(path, f"is not valid JSON ({e.msg} at line {e.lineno})",
                                  "use the accuracy log LoadGen wrote, not a truncated copy") from None
