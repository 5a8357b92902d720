"""Accuracy targets for llama2-70b-99 / -99.9 and for the embedded data set, and the verdict.

The official targets are the checker's: reference ROUGE x0.99 (or x0.999), tokens per sample
within [0.9, 1.1] x the reference (tools/submission/submission_checker.py, v4.1..v5.1).
For the embedded default the reference numbers are the embedded data set's own (greedy answers of
the embedded model, recorded by the datasets step in `reference.json`), scaled the same way.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional

from ..benchmarks import BENCHMARKS, BenchmarkError, get_benchmark

METRICS = ("ROUGE1", "ROUGE2", "ROUGEL")
RESULT_KEYS = {"ROUGE1": "rouge1", "ROUGE2": "rouge2", "ROUGEL": "rougeL"}
TOKENS = "TOKENS_PER_SAMPLE"

# the benchmarks scored this way (ROUGE of OpenOrca answers, tokens per sample), and their scale
SCALE = {name: b.accuracy.scale for name, b in BENCHMARKS.items() if b.accuracy.length_metric == TOKENS}


class TargetError(ValueError):
    pass


@dataclass(frozen=True)
class Targets:
    model: str
    source: str                       # where the reference numbers come from
    reference: Dict[str, float]       # ROUGE1, ROUGE2, ROUGEL, TOKENS_PER_SAMPLE
    minimum: Dict[str, float]         # ROUGE1/2/L and TOKENS_PER_SAMPLE lower bounds
    tokens_max: float

    @property
    def label(self) -> str:
        return ("Required accuracy for closed division" if self.source == "mlperf"
                else f"Required accuracy ({self.source} x{SCALE[self.model.replace('-interactive', '')]})")


def _scaled(model: str, reference: Dict[str, float], source: str) -> Targets:
    base = model.replace("-interactive", "")
    if base not in SCALE:
        raise TargetError(f"unknown model {model!r} for accuracy targets; use one of {', '.join(SCALE)}")
    acc = BENCHMARKS[base].accuracy
    low, high = acc.length_range
    minimum = {m: reference[m] * acc.scale for m in METRICS}
    minimum[TOKENS] = reference[TOKENS] * low
    return Targets(model, source, dict(reference), minimum, reference[TOKENS] * high)


def mlperf_targets(model: str) -> Targets:
    try:
        reference = get_benchmark(model).accuracy.reference()
    except BenchmarkError as e:
        raise TargetError(str(e)) from None
    return _scaled(model, reference, "mlperf")


def embedded_targets(model: str, reference_file: str) -> Targets:
    """Targets from the embedded data set's reference.json (`metrics` with rouge1/rouge2/rougeL/
    tokens_per_sample, as the datasets step writes it)."""
    if not os.path.isfile(reference_file):
        raise TargetError(f"embedded reference numbers {reference_file} not found: build the "
                          f"embedded data set first (get,dataset,preprocessed,openorca,_embedded)")
    with open(reference_file, encoding="utf-8") as f:
        data = json.load(f)
    metrics = data.get("metrics", data)
    try:
        reference = {m: float(metrics[RESULT_KEYS[m]]) for m in METRICS}
        reference[TOKENS] = float(metrics["tokens_per_sample"])
    except (KeyError, TypeError, ValueError) as e:
        raise TargetError(f"{reference_file} has no usable reference metric {e}; expected "
                          f"'metrics': {{rouge1, rouge2, rougeL, tokens_per_sample}}") from e
    return _scaled(model, reference, "embedded data set reference")


def embedded_subset_targets(model: str, metrics: Dict[str, float], count: int) -> Targets:
    """Targets for an accuracy test that scored `count` samples of the embedded data set (a test-mode
    run): the reference answers of those same samples, scored the same way (`metrics`: rouge1,
    rouge2, rougeL, tokens_per_sample), scaled as the whole-set numbers are."""
    reference = {m: float(metrics[RESULT_KEYS[m]]) for m in METRICS}
    reference[TOKENS] = float(metrics["tokens_per_sample"])
    return _scaled(model, reference, f"embedded reference answers of the same {count} samples")


@dataclass(frozen=True)
class MetricVerdict:
    metric: str
    value: float
    minimum: float
    maximum: Optional[float]
    passed: bool


@dataclass(frozen=True)
class Verdict:
    model: str
    source: str
    label: str
    metrics: List[MetricVerdict]

    @property
    def passed(self) -> bool:
        return all(m.passed for m in self.metrics)

    def lines(self, markdown: bool = False) -> List[str]:
        """One line per metric, as seed 003's README shows them."""
        q = "`" if markdown else ""
        out = []
        for m in self.metrics:
            line = f"{q}{m.metric}{q}: {q}{_num(m.value)}{q}, {self.label} {q}>= {_num(m.minimum)}{q}"
            if m.maximum is not None:
                line += f" and {q}<= {_num(m.maximum)}{q}"
            out.append(line)
        return out

    def as_dict(self) -> dict:
        return {"model": self.model, "source": self.source, "label": self.label,
                "passed": self.passed, "metrics": [asdict(m) for m in self.metrics]}


def _num(x: float) -> str:
    return repr(round(float(x), 5))


def judge(values: Dict[str, float], targets: Targets) -> Verdict:
    """values: ROUGE1, ROUGE2, ROUGEL, TOKENS_PER_SAMPLE (x100 ROUGE, as accuracy.txt reports)."""
    out = []
    for m in METRICS:
        out.append(MetricVerdict(m, values[m], targets.minimum[m], None, values[m] >= targets.minimum[m]))
    tokens = values[TOKENS]
    out.append(MetricVerdict(TOKENS, tokens, targets.minimum[TOKENS], targets.tokens_max,
                             targets.minimum[TOKENS] <= tokens <= targets.tokens_max))
    return Verdict(targets.model, targets.source, targets.label, out)
