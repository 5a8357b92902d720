"""The numbers of one model/scenario, read from its logs, and how they compare with what is required."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from ..accuracy.targets import TargetError, mlperf_targets
from .inputs import Metadata, ScenarioRun
from .logs import AccuracyResult, DetailLog
from .spec import RESULT_KEYS, Target, accuracy_targets


@dataclass
class AccuracyCheck:
    metric: str
    value: float
    target: Target

    @property
    def passed(self) -> bool:
        return self.target.passes(self.value)


@dataclass
class ScenarioResult:
    model: str
    scenario: str
    system: str
    performance_log: DetailLog
    accuracy: AccuracyResult | None
    checks: list = field(default_factory=list)          # AccuracyCheck
    test06: dict | None = None                          # verify_accuracy.txt checks
    test06_samples: int | None = None                   # entries in the TEST06 accuracy log
    notes: list = field(default_factory=list)

    @property
    def unit(self) -> str:
        return RESULT_KEYS[self.scenario].unit

    @property
    def value(self) -> float:
        metric = RESULT_KEYS[self.scenario]
        return metric.value(self.performance_log.get(metric.key, 0.0))

    @property
    def valid(self) -> bool:
        return self.performance_log.valid

    def percentile_ms(self, key: str) -> float | None:
        v = self.performance_log.get(key)
        return None if v is None else float(v) / 1e6

    @property
    def ttft_p99_ms(self) -> float | None:
        return self.percentile_ms("result_first_token_99.00_percentile_latency_ns")

    @property
    def tpot_p99_ms(self) -> float | None:
        return self.percentile_ms("result_time_per_output_token_99.00_percentile_ns")

    def accuracy_text(self, sep: str = "  ") -> str:
        if not self.accuracy:
            return ""
        return sep.join(f"{c.metric}: {c.value:g}" for c in self.checks)


def targets_for(meta: Metadata, model: str, rows_scored: int | None = None) -> tuple[list[Target], str]:
    """The targets the run is judged by: the metadata's own (embedded data set) or the closed-division
    ones; with `rows_scored` (the rows the accuracy run scored), a length metric that is a sum over the
    data set (GEN_LEN) is scaled to them as the accuracy step does, its Target's note saying so."""
    if meta.accuracy_targets:
        targets = [Target(k, float(v[0]), None if len(v) < 2 or v[1] is None else float(v[1]))
                   for k, v in meta.accuracy_targets.items()]
        return targets, meta.accuracy_targets_label or "the run's own targets"
    try:
        scaled = mlperf_targets(model, rows_scored) if rows_scored else None
    except TargetError:          # more rows than the data set: judged on the whole set's targets
        scaled = None
    if scaled is None or not scaled.note:
        return accuracy_targets(model), "closed division"
    return [Target(m, scaled.minimum[m], scaled.length_max if m == scaled.length_metric else None,
                   scaled.note if m == scaled.length_metric else "") for m in scaled.reference], "closed division"


def targets_from_accuracy_json(path: str) -> tuple[dict, str] | None:
    """The accuracy step's accuracy.json: (targets, label) of its first verdict not on the official
    targets (the embedded data set's own), else None."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError):
        return None
    for v in doc.get("verdicts") or []:
        if v.get("source") not in (None, "mlperf") and v.get("metrics"):
            targets = {m["metric"]: [m["minimum"], m.get("maximum")] for m in v["metrics"]}
            label = str(v.get("label", v["source"]))
            inner = re.search(r"\((.*)\)", label)
            return targets, inner.group(1) if inner else label
    return None


def scenario_result(meta: Metadata, run: ScenarioRun, perf: DetailLog, acc: AccuracyResult | None,
                    rows_scored: int | None = None) -> ScenarioResult:
    res = ScenarioResult(run.model, run.scenario, meta.system_name, perf, acc)
    if acc:
        targets, _ = targets_for(meta, run.model, rows_scored)
        res.checks = [AccuracyCheck(t.metric, acc.values[t.metric], t) for t in targets if t.metric in acc.values]
        res.notes += [t.note for t in targets if t.note]
    return res
