"""What the submission rules say in every round (mlcommons/inference tools/submission).

Numbers are the checker's own (MODEL_CONFIG of v4.1 .. v6.1); what differs between benchmarks
(accuracy targets, data set size, scenarios) is in mlperf_llm.benchmarks, what differs between
rounds (layout, seeds, which benchmarks) in mlperf_llm.rounds.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..benchmarks import BENCHMARKS, SCENARIOS, BenchmarkError, get_benchmark
from ..rounds import ROUNDS
from .errors import SubmissionError

MIN_DURATION_MS = 600000
FILE_SIZE_LIMIT = 50 * 1024 * 1024
MAX_ACCURACY_LOG_SIZE = 10 * 1024
VIEWABLE_SIZE = 4096                      # head and tail kept by truncation
SCENARIO_ORDER = SCENARIOS


@dataclass(frozen=True)
class ResultMetric:
    """The metric the checker reports for a scenario (RESULT_FIELD_BENCHMARK_OVERWRITE of v5.1.1 and
    master): the detail log's key, the checker's unit, the scale from the logged value to that unit
    (SingleStream logs ns, the checker divides by MS_TO_NS), the unit as our screens write it, and
    what the measurement README calls it."""
    key: str
    unit: str
    shown: str
    scale: float = 1.0
    title: str = "Tokens per second"

    def value(self, logged) -> float:
        return float(logged) * self.scale


RESULT_KEYS = {      # every scenario of the LLM benchmarks: the metric the checker reports for it
    "Offline": ResultMetric("result_tokens_per_second", "Tokens/s", "tokens/s"),
    "Server": ResultMetric("result_completed_tokens_per_second", "Tokens/s", "tokens/s"),
    "Interactive": ResultMetric("result_completed_tokens_per_second", "Tokens/s", "tokens/s"),
    # llama3.1-8b-edge: the checker's SPECIAL_UNIT_DICT names Offline only, so SingleStream keeps
    # UNIT_DICT's "Latency (ms)"
    "SingleStream": ResultMetric("result_90.00_percentile_latency_ns", "Latency (ms)", "ms (p90 latency)", 1e-6,
                                 "90th percentile latency (ms)"),
}
# the results folders of a benchmark: its name, and for a benchmark of a round where Interactive was a
# benchmark of its own (v5.0), that name (`<family>-interactive-<level>`)
MODELS = tuple(BENCHMARKS) + tuple(BENCHMARKS[name].interactive_benchmark for r in ROUNDS.values()
                                   if r.interactive == "model" for name in r.benchmarks)
# what this project adds to each measurement folder: the reproduction record (docs/reproduce.md,
# written by mlperf_llm.reproduce); no system name starts it, so the checkers' `<system>*.json` never
# picks it
RECORD_NAME = "cm4mlperf-record.json"
IMAGE_FACTS_NAME = "cm4mlperf-image.json"     # with --docker: the image the server ran in (containers/image.py)


@dataclass(frozen=True)
class Target:
    metric: str
    minimum: float
    maximum: float | None = None
    note: str = ""          # how the bounds were scaled to the rows an accuracy run scored ("": not scaled)

    def passes(self, value: float) -> bool:
        return value >= self.minimum and (self.maximum is None or value <= self.maximum)

    def describe(self) -> str:
        text = f">= {self.minimum:.5f}".rstrip("0").rstrip(".")
        if self.maximum is not None:
            text += f" and <= {self.maximum:.5f}".rstrip("0").rstrip(".")
        return text


def accuracy_targets(model: str) -> list[Target]:
    """The closed-division targets of `model` on its whole data set, in the checker's order."""
    try:
        acc = get_benchmark(model).accuracy
    except BenchmarkError as e:
        raise SubmissionError(f"model {model!r}", "has no accuracy targets", str(e)) from None
    low, high = acc.length_range
    return [Target(m, ref * acc.scale) for m, ref in acc.quality] + [
        Target(acc.length_metric, acc.length_reference * low, acc.length_reference * high)]
