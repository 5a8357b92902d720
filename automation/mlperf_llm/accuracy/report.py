"""accuracy.txt in the form the submission checker parses, and the machine-readable result.

The checker (tools/submission/submission_checker.py; the submission_checker package from v6.0)
matches each line of accuracy.txt against its ACC_PATTERN: `.*'rouge1':\\s+'?([\\d.]+)'?.*` (and
rouge2, rougeL, rougeLsum), `.*'tokens_per_sample':\\s([\\d.]+).*`, `.*'gen_len':\\s([\\d.]+).*`,
and `^hash=([\\w\\d]+)$`; truncate_accuracy_log.py leaves a log alone when accuracy.txt already has
its hash and the log is small. So accuracy.txt is the reference's printed dict (plain numbers, never
numpy reprs such as `np.float64(44.4)` or `np.int64(8167644)` that the patterns miss) followed by
the sha256 of the full log. Any result with `reference_dict()` and `as_dict()` is written:
evaluate.AccuracyResult (llama2-70b), summarization.SummaryScores (llama3.1-8b).
"""
from __future__ import annotations

import json
from typing import Iterable, Optional, Protocol

from .targets import Verdict


from ..files import sha256_file, write_atomic  # noqa: E402,F401  (used here and by callers)


class ReportedResult(Protocol):
    def reference_dict(self) -> dict: ...   # the reference's printed dict, plain numbers
    def as_dict(self) -> dict: ...


def accuracy_text(result: ReportedResult, log_hash: str) -> str:
    return f"\nResults\n\n{result.reference_dict()!r}\n\nhash={log_hash}\n"


def write_accuracy_txt(path: str, result: ReportedResult, accuracy_log: str) -> str:
    """Writes accuracy.txt; returns the hash of the log written into it."""
    log_hash = sha256_file(accuracy_log)
    write_atomic(path, accuracy_text(result, log_hash))
    return log_hash


def write_result_json(path: str, result: ReportedResult, verdicts: Iterable[Verdict],
                      log_hash: str, extra: Optional[dict] = None) -> dict:
    """accuracy.json: the numbers, each target's verdict with seed 003's lines, for the README."""
    verdicts = list(verdicts)
    doc = {
        "result": result.as_dict(),
        "accuracy_log_sha256": log_hash,
        "verdicts": [dict(v.as_dict(), lines=v.lines(markdown=True)) for v in verdicts],
        **(extra or {}),
    }
    write_atomic(path, json.dumps(doc, indent=1) + "\n")
    return doc
