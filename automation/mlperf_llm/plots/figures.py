"""The figures of a results page: per performance test, its TTFT and TPOT distributions (p99 and
the benchmark's bound marked) and its output tokens/s over the run; the load sweep's p99s against
the load, with its table. Each an SVG (draw.py) the page inlines as a data: image, so the page
stays one file that opens from disk."""
from __future__ import annotations

import base64
from dataclasses import dataclass

from ..benchmarks import get_benchmark
from ..harness import sweep as sweeps
from . import draw, timings


@dataclass(frozen=True)
class Figure:
    title: str
    svg: str

    @property
    def data_uri(self) -> str:
        return "data:image/svg+xml;base64," + base64.b64encode(self.svg.encode()).decode()


@dataclass(frozen=True)
class SweepTable:
    scenario: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def test_figures(model: str, scenario: str, test_dir: str, ttft_p99_ms: float | None,
                 tpot_p99_ms: float | None) -> list[Figure]:
    """A performance test's figures ([] when it kept no query timings)."""
    t = timings.load(test_dir)
    if t is None or not t.queries:
        return []
    bounds = get_benchmark(model).latency_limits_ms.get(scenario, (None, None))
    name = f"{model} {scenario}"
    out = []
    if t.ttft_ms:
        out.append(Figure(f"{name}: time to first token ({len(t.ttft_ms)} queries)",
                          draw.distribution(t.ttft_ms, f"{name}: TTFT", "ms", ttft_p99_ms, bounds[0])))
    if t.tpot_ms:
        out.append(Figure(f"{name}: time per output token ({len(t.tpot_ms)} queries)",
                          draw.distribution(t.tpot_ms, f"{name}: TPOT", "ms", tpot_p99_ms, bounds[1])))
    out.append(Figure(f"{name}: output tokens/s over the run ({t.queries} queries)",
                      draw.over_run(t.rate_t_s, t.rate_tokens_per_s, f"{name}: output tokens/s")))
    return out


def sweep(results_dir: str) -> tuple[list[Figure], SweepTable | None]:
    """The load sweep of the results folder (sweep.json), when it has one: its figure and table."""
    found = sweeps.load(results_dir)
    if found is None:
        return [], None
    scenario, bounds, rows = found
    fig = Figure(f"{scenario} load sweep: p99 latencies against the load achieved",
                 draw.against_load([r.achieved_qps for r in rows], [r.ttft_ms[2] for r in rows],
                                   [r.tpot_ms[2] for r in rows], bounds, f"{scenario} sweep"))
    return [fig], SweepTable(scenario, sweeps.header(bounds), tuple(sweeps.cells(r) for r in rows))


# a replay's performance figures, drawn in two groups of one unit each
_REPLAY_GROUPS = (("throughput", "tokens/s", ("tokens_per_second", "completed_tokens_per_second")),
                  ("latency", "ms", ("TTFT p50 (ms)", "TTFT p90 (ms)", "TTFT p99 (ms)", "TPOT p50 (ms)",
                                     "TPOT p90 (ms)", "TPOT p99 (ms)", "latency p50 (ms)", "latency p90 (ms)",
                                     "latency p99 (ms)")))


def reproduction(rows: list[dict], comparable: bool) -> dict[tuple, list[Figure]]:
    """A replay's figures, per performance test (system, model, scenario): its throughput and its
    latencies as recorded against as reproduced (rows: reproduction.json's `tests`)."""
    by_test: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["mode"] == "performance" and r["recorded"] is not None and r["reproduced"] is not None:
            by_test.setdefault((r["system"], r["model"], r["scenario"]), []).append(r)
    out = {}
    for key, test_rows in by_test.items():
        figs = []
        for group, unit, metrics in _REPLAY_GROUPS:
            chosen = [r for m in metrics for r in test_rows if r["metric"] == m]
            if not chosen:
                continue
            title = f"{key[1]} {key[2]}: {group}, recorded and reproduced" + ("" if comparable else " (a stand-in: not comparable)")
            figs.append(Figure(title, draw.recorded_against_reproduced(
                [r["metric"].replace("_per_second", "/s").replace(" (ms)", "") for r in chosen],
                [r["recorded"] for r in chosen], [r["reproduced"] for r in chosen], f"{key[1]} {key[2]}: {group}", unit)))
        if figs:
            out[key] = figs
    return out
