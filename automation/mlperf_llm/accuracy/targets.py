"""Accuracy targets of each benchmark (facts from mlperf_llm.benchmarks) and of the embedded data
set, and the verdict.

The official targets are the checker's (tools/submission, v4.1 .. v6.x): each quality metric
(ROUGE1, ROUGE2, ROUGEL, and ROUGELSUM for llama3.1-8b) at least reference x scale (0.99 or
0.999); the length metric within [0.9, 1.1] x its reference, bounds included. llama2-70b's length
metric, TOKENS_PER_SAMPLE, is a mean: the same for any number of rows scored. llama3.1-8b's,
GEN_LEN, is a sum (characters of all predictions) whose reference covers the whole data set (13,368
rows; edge 5,000): an accuracy test that scored n rows is judged against reference x n/rows, and the
verdict's GEN_LEN line says so. The checker itself never scales: a submission scores every row.
For the embedded default the reference numbers are the embedded data set's own (greedy answers of
the embedded model, recorded by the datasets step in `reference.json`), scaled the same way.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional

from ..benchmarks import BENCHMARKS, AccuracySpec, BenchmarkError, get_benchmark

# the checker's metric names -> the keys of the reference's printed result (and of reference.json)
RESULT_KEYS = {"ROUGE1": "rouge1", "ROUGE2": "rouge2", "ROUGEL": "rougeL", "ROUGELSUM": "rougeLsum",
               "TOKENS_PER_SAMPLE": "tokens_per_sample", "GEN_LEN": "gen_len", "exact_match": "exact_match"}

# The models the OpenOrca pipeline (evaluate.py, process.py, cli.py) scores (those whose length
# metric is tokens per sample: llama2-70b's), also under v5.0's names for their Interactive runs
# (a benchmark of their own then), with their scale.
# deepseek-r1's length metric is tokens per sample too, but exact_match marks its answers (reasoning_eval).
SCALE = {name: b.accuracy.scale
         for b in BENCHMARKS.values()
         if b.accuracy.length_metric == "TOKENS_PER_SAMPLE" and "exact_match" not in b.accuracy.metrics
         for name in (b.name, b.interactive_benchmark)}


class TargetError(ValueError):
    pass


@dataclass(frozen=True)
class Targets:
    model: str
    source: str                       # where the reference numbers come from
    scale: float                      # of the quality metrics
    reference: Dict[str, float]       # every metric (quality ones first); a sum already scaled to the rows scored
    minimum: Dict[str, float]         # every metric's lower bound
    length_metric: str                # TOKENS_PER_SAMPLE | GEN_LEN: bounded above too ("": none)
    length_max: float
    note: str = ""                    # how the length reference was scaled to the rows scored ("": not scaled)

    @property
    def quality(self) -> List[str]:
        return [m for m in self.reference if m != self.length_metric]

    @property
    def label(self) -> str:
        return ("Required accuracy for closed division" if self.source == "mlperf"
                else f"Required accuracy ({self.source} x{self.scale})")


def _spec(model: str) -> AccuracySpec:
    try:
        return get_benchmark(model).accuracy
    except BenchmarkError as e:
        raise TargetError(f"no accuracy targets for an unknown model: {e}") from None


def _scaled(model: str, reference: Dict[str, float], source: str, rows: int,
            rows_scored: Optional[int]) -> Targets:
    """`reference` covers `rows` rows; the test scored `rows_scored` of them (None: all)."""
    spec = _spec(model)
    length = spec.length_metric
    reference = dict(reference)
    note = ""
    if rows_scored is not None and not 0 < rows_scored <= rows:
        raise TargetError(f"{model}: the accuracy test scored {rows_scored} rows, its reference covers "
                          f"{rows}: score a subset of the reference's data set (1..{rows} rows)")
    if spec.length_rule == "sum" and rows_scored not in (None, rows):
        whole = reference[length]
        reference[length] = whole * rows_scored / rows
        note = (f"{length} reference {_num(whole)} is for all {rows} rows; this test scored {rows_scored}: "
                f"x {rows_scored}/{rows} = {_num(reference[length])}")
    minimum = {m: reference[m] * spec.scale for m in reference if m != length}
    if not length:          # gpt-oss-120b: its length is TEST09's, not the accuracy test's
        return Targets(model, source, spec.scale, reference, minimum, "", 0.0, note)
    low, high = spec.length_range
    minimum[length] = reference[length] * low
    return Targets(model, source, spec.scale, reference, minimum, length, reference[length] * high, note)


def mlperf_targets(model: str, rows_scored: Optional[int] = None) -> Targets:
    """The checker's targets; `rows_scored`: the rows an accuracy test scored (None: the data set)."""
    spec = _spec(model)
    return _scaled(model, spec.reference(), "mlperf", get_benchmark(model).dataset_rows, rows_scored)


def _read_metrics(model: str, metrics: dict, where: str) -> Dict[str, float]:
    try:
        return {m: float(metrics[RESULT_KEYS[m]]) for m in _spec(model).metrics}
    except (KeyError, TypeError, ValueError) as e:
        wanted = ", ".join(RESULT_KEYS[m] for m in _spec(model).metrics)
        raise TargetError(f"{where} has no usable reference metric {e}; expected 'metrics': "
                          f"{{{wanted}}}") from e


def embedded_targets(model: str, reference_file: str, rows_scored: Optional[int] = None) -> Targets:
    """Targets from the embedded data set's reference.json (`metrics` with the benchmark's metrics
    under the reference's keys, `samples`: the rows they cover, as the datasets step writes it)."""
    if not os.path.isfile(reference_file):
        raise TargetError(f"embedded reference numbers {reference_file} not found: build the "
                          f"embedded data set first ({get_benchmark(model).dataset_tags},_embedded)")
    with open(reference_file, encoding="utf-8") as f:
        data = json.load(f)
    reference = _read_metrics(model, data.get("metrics", data), reference_file)
    rows = int(data.get("samples") or 0)
    if rows_scored is not None and not rows and _spec(model).length_rule == "sum":
        raise TargetError(f"{reference_file} does not say how many rows its metrics cover ('samples'), "
                          f"needed to scale {_spec(model).length_metric} to the {rows_scored} rows scored; "
                          "fix: rebuild the embedded data set")
    # without 'samples' only a mean can be judged, and on any number of rows
    return _scaled(model, reference, "embedded data set reference", rows or rows_scored or 1, rows_scored)


def embedded_subset_targets(model: str, metrics: Dict[str, float], count: int) -> Targets:
    """Targets for an accuracy test that scored `count` samples of the embedded data set (a test-mode
    run): the reference answers of those same samples, scored the same way (`metrics` under the
    reference's keys), scaled as the whole-set numbers are (a sum needs no row scaling here)."""
    reference = _read_metrics(model, metrics, f"the reference answers of {count} samples")
    return _scaled(model, reference, f"embedded reference answers of the same {count} samples", count, None)


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
    note: str = ""                    # Targets.note: how the length reference was scaled

    @property
    def passed(self) -> bool:
        return all(m.passed for m in self.metrics)

    def lines(self, markdown: bool = False) -> List[str]:
        """One line per metric, as seed 003's README shows them; the bounded length metric's line
        carries the note on its scaling, if any."""
        q = "`" if markdown else ""
        out = []
        for m in self.metrics:
            line = f"{q}{m.metric}{q}: {q}{_num(m.value)}{q}, {self.label} {q}>= {_num(m.minimum)}{q}"
            if m.maximum is not None:
                line += f" and {q}<= {_num(m.maximum)}{q}"
                if self.note:
                    line += f" ({self.note})"
            out.append(line)
        return out

    def as_dict(self) -> dict:
        return {"model": self.model, "source": self.source, "label": self.label, "note": self.note,
                "passed": self.passed, "metrics": [asdict(m) for m in self.metrics]}


def _num(x: float) -> str:
    return str(x) if isinstance(x, int) else repr(round(float(x), 5))


def judge(values: Dict[str, float], targets: Targets) -> Verdict:
    """values: every metric of the targets under the checker's names (ROUGE x100, as accuracy.txt
    reports; TOKENS_PER_SAMPLE or GEN_LEN)."""
    missing = [m for m in targets.reference if m not in values]
    if missing:
        raise TargetError(f"no value for {', '.join(missing)} to judge against the {targets.model} "
                          f"targets (given: {', '.join(values)}): score with that benchmark's pipeline")
    out = [MetricVerdict(m, values[m], targets.minimum[m], None, values[m] >= targets.minimum[m])
           for m in targets.quality]
    if not targets.length_metric:
        return Verdict(targets.model, targets.source, targets.label, out, targets.note)
    length, value = targets.length_metric, values[targets.length_metric]
    out.append(MetricVerdict(length, value, targets.minimum[length], targets.length_max,
                             targets.minimum[length] <= value <= targets.length_max))
    return Verdict(targets.model, targets.source, targets.label, out, targets.note)
