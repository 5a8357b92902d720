"""Short performance tests that choose loads before the run's own: `_find-performance` (a short
Offline test, then the Server/Interactive target search of search.py within the budget) and the
load sweep (`--sweep`, sweep.py)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, replace
from pathlib import Path

from . import testrun
from .latency import TEST_MODE_MAX_ISSUE_S
from .request import FRACTIONS, HarnessInputError, HarnessRequest
from .results import summary_values
from .search import MIN_PROBE_QUERIES, Probe, Searched, judge, probe_queries, search
from .sweep import Row as SweepRow, auto_loads, parse_loads, row_from_summary, table
from .sweep import save as save_sweep
from .testrun import RunOutcome
from .userconf import TARGET_INPUTS, pick_targets
from ..files import write_atomic


def short_offline(req: HarnessRequest, rows: int, base: Path, what: str) -> tuple[float, RunOutcome, int]:
    """A short Offline performance test (test mode, the test's count or 64 queries) under base:
    its samples/s, its outcome and its query count."""
    queries = req.test_query_count or min(rows, 64)
    o = testrun.run_one(replace(req, execution_mode="test", offline_target_qps=None, test_query_count=queries),
                "Offline", "performance", rows, base_dir=base)
    if o.verdict == "FAILED":
        raise HarnessInputError(f"{what}: the Offline test failed: {'; '.join(o.reasons[:2])} (logs: {o.directory})")
    return float(o.summary.get("samples_per_second") or 0.0), o, queries

def run_sweep(req: HarnessRequest, rows: int, offline_qps: float | None) -> list[SweepRow]:
    """One Server (Interactive, where the run has only that) test per load of --sweep; the table
    printed and written to the results folder. offline_qps: the Offline rate, measured by a short
    Offline test here when not known."""
    scenario = "Interactive" if "Interactive" in req.scenarios and "Server" not in req.scenarios else "Server"
    bounds = req.bench.latency_limits_ms.get(scenario)
    if bounds is None:
        raise HarnessInputError(f"sweep: {req.model} has no {scenario} latency bounds")
    if not offline_qps:
        offline_qps = short_offline(req, rows, Path(req.results_dir) / "sweep", "sweep")[0]
    loads = parse_loads(req.sweep)
    loads = auto_loads(offline_qps) if loads == "auto" else loads
    print(f"{scenario} load sweep at {', '.join(f'{q:g}' for q in loads)} QPS (the Offline rate: "
          f"{offline_qps:.3g} QPS)", flush=True)
    out = []
    for qps in loads:
        o, n, text, _ = short_load_test(req, scenario, rows, qps,
                                         Path(req.results_dir) / "sweep" / scenario / f"qps-{qps:g}", "sweep")
        out.append(row_from_summary(qps, n, text, o.directory))
    lines = table(out, bounds)
    print("\n".join(lines), flush=True)
    print(f"sweep table: {save_sweep(req.results_dir, scenario, out, bounds, offline_qps)}", flush=True)
    return out

def find_performance(req: HarnessRequest, rows: int) -> tuple[dict[str, float], dict[str, str]]:
    """A short Offline run, then, for Server and Interactive, a search of the highest target that
    meets the latency bounds (search.py) within the budget; returns the targets per scenario and where
    each came from, and writes find_performance.json and searched_targets.json."""
    t0 = time.monotonic()
    rate, o, queries = short_offline(req, rows, Path(req.results_dir) / "find_performance", "find-performance run")
    targets = pick_targets(rate)
    how = {s: "find-performance run" for s in targets}
    write_atomic(str(Path(req.results_dir) / "find_performance.json"),
                 json.dumps({"measured_offline_samples_per_second": o.summary.get("samples_per_second"),
                             "targets": targets, "logs": o.directory}, indent=1))
    scenarios = req.find_target or tuple(s for s in req.scenarios if s in FRACTIONS)
    limits = req.bench.latency_limits_ms
    record = Searched(req.model, req.rnd.name, len(req.api_servers), time.strftime("%Y-%m-%d %H:%M:%S"))
    for scenario in scenarios:
        if scenario not in limits:
            raise HarnessInputError(f"find_target={scenario}: {req.model} has no latency bounds for it "
                                    f"(it has {', '.join(limits) or 'none'})")
        count = [0]

        def one_probe(qps: float, scenario=scenario, count=count) -> Probe:
            count[0] += 1
            return _probe(req, scenario, rows, qps, count[0], limits[scenario])
        found = search(scenario, one_probe, start=targets[scenario], ceiling=rate, bounds_ms=limits[scenario],
                       budget_s=req.search_budget_s - (time.monotonic() - t0),
                       answer_s=queries / rate if rate > 0 else 0.0,
                       slowest_qps=MIN_PROBE_QUERIES / TEST_MODE_MAX_ISSUE_S)
        record.searches[scenario] = asdict(found)
        if found.found_qps:
            targets[scenario] = found.found_qps
            how[scenario] = record.how(scenario)
    if scenarios:
        path = record.save(req.results_dir)
        print(f"searched targets written to {path}: the next run into {req.results_dir} takes them for the "
              "scenarios it is given no target for", flush=True)
    return targets, how

def _probe(req: HarnessRequest, scenario: str, rows: int, qps: float, index: int,
           bounds_ms: tuple[float, float]) -> Probe:
    """One performance test at qps, in test mode, sized to last about search.PROBE_SECONDS."""
    o, n, text, seconds = short_load_test(req, scenario, rows, qps, Path(req.results_dir) / "find_performance" /
                                           scenario / f"probe-{index}-qps-{qps:g}", f"{scenario} target search")
    ttft, tpot, whose, passed, why = judge(o.summary, summary_values(text) if text else {}, bounds_ms, n)
    return Probe(qps, n, seconds, ttft, tpot, whose, passed, why, o.directory)

def short_load_test(req: HarnessRequest, scenario: str, rows: int, qps: float, base: Path,
                     what: str) -> tuple[RunOutcome, int, str, float]:
    """One performance test at qps in test mode, sized to last about search.PROBE_SECONDS (a probe of
    the target search, a load of the sweep): its outcome, query count, summary text and seconds."""
    n = probe_queries(qps)
    t0 = time.monotonic()
    o = testrun.run_one(replace(req, execution_mode="test", test_query_count=n, **{TARGET_INPUTS[scenario]: qps}),
                scenario, "performance", rows, base_dir=base)
    seconds = time.monotonic() - t0
    if o.verdict == "FAILED":
        raise HarnessInputError(f"{what}: the {scenario} test at {qps:g} QPS failed: {'; '.join(o.reasons[:2])} "
                                f"(logs: {o.directory})")
    summary = Path(o.directory) / "mlperf_log_summary.txt"
    return o, n, summary.read_text(errors="replace") if summary.is_file() else "", seconds
