"""What the submission rules say for llama2-70b in every round (mlcommons/inference tools/submission).

Numbers are the checker's own (MODEL_CONFIG of v4.1 .. v6.1); what differs between rounds (layout,
required scenarios, seeds, models) is in mlperf_llm.rounds.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import SubmissionError

REFERENCE_ACCURACY = {"ROUGE1": 44.4312, "ROUGE2": 22.0352, "ROUGEL": 28.6162, "TOKENS_PER_SAMPLE": 294.45}
DATASET_SIZE = 24576
MIN_DURATION_MS = 600000
FILE_SIZE_LIMIT = 50 * 1024 * 1024
MAX_ACCURACY_LOG_SIZE = 10 * 1024
VIEWABLE_SIZE = 4096                      # head and tail kept by truncation
SCENARIO_ORDER = ("Offline", "Server", "Interactive")
RESULT_KEYS = {                           # detail-log key of the reported metric, and its unit
    "Offline": ("result_tokens_per_second", "Tokens/s"),
    "Server": ("result_completed_tokens_per_second", "Tokens/s"),
    "Interactive": ("result_completed_tokens_per_second", "Tokens/s"),
}
MODELS = ("llama2-70b-99", "llama2-70b-99.9", "llama2-70b-interactive-99", "llama2-70b-interactive-99.9")
# what this project adds to each measurement folder: the reproduction record (docs/reproduce.md,
# written by mlperf_llm.reproduce); no system name starts it, so the checkers' `<system>*.json` never
# picks it
RECORD_NAME = "cm4mlperf-record.json"


@dataclass(frozen=True)
class Target:
    metric: str
    minimum: float
    maximum: float | None = None

    def passes(self, value: float) -> bool:
        return value >= self.minimum and (self.maximum is None or value <= self.maximum)

    def describe(self) -> str:
        text = f">= {self.minimum:.5f}".rstrip("0").rstrip(".")
        if self.maximum is not None:
            text += f" and <= {self.maximum:.5f}".rstrip("0").rstrip(".")
        return text


def base_model(model: str) -> str:
    """llama2-70b-interactive-99.9 -> llama2-70b-99.9 (same accuracy rules)."""
    return model.replace("-interactive", "")


def accuracy_targets(model: str) -> list[Target]:
    """The closed-division targets of `model`, in the checker's order."""
    m = base_model(model)
    if m not in ("llama2-70b-99", "llama2-70b-99.9"):
        raise SubmissionError(f"model {model!r}", "has no llama2-70b accuracy targets",
                              f"use one of {', '.join(MODELS)}")
    factor = 0.99 if m.endswith("-99") else 0.999
    tps = REFERENCE_ACCURACY["TOKENS_PER_SAMPLE"]
    return [Target(k, REFERENCE_ACCURACY[k] * factor) for k in ("ROUGE1", "ROUGE2", "ROUGEL")] + [
        Target("TOKENS_PER_SAMPLE", tps * 0.9, tps * 1.1)]
