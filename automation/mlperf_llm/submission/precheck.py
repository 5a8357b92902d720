"""Our own checks of a submission tree for what the round's official checker misses.

The master checker (v6.0, v6.1) has known holes (REFERENCE.md section 7); every fact used here is
the benchmark table's (mlperf_llm.benchmarks) or the round table's:
- an Interactive run is checked against the Server latency limits (its LoadGen log says Server), so a
  run over Interactive's p99 TTFT/TPOT limits (llama2-70b 450/40 ms, llama3.1-8b 500/30 ms) would pass;
- a folder of a benchmark the round does not have (`llama2-70b-99` in v6.1) makes it crash instead
  of refusing the benchmark;
- (closed) each benchmark needs its round's scenarios (datacenter: Offline plus Server or
  Interactive; edge: Offline and SingleStream): checked here by name, for every round, so the verdict
  says which scenario is missing.
The findings are reported beside the checker's verdict (checker.format_report) and fail the step like
the checker's own errors do.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..benchmarks import DIVISIONS, BenchmarkError, get_benchmark
from ..rounds import Round
from .logs import read_detail_log

P99_KEYS = ("result_first_token_99.00_percentile_latency_ns", "result_time_per_output_token_99.00_percentile_ns")


@dataclass(frozen=True)
class PreFinding:
    path: str          # relative to the tree
    message: str


def benchmarks_in(tree: str) -> list[str]:
    """The benchmark folders' names of a tree (sorted, each once; [] for no tree or an unreadable one)."""
    try:
        return sorted({bench for _, _, _, bench, _ in _benchmarks(tree)})
    except OSError:
        return []


def _benchmarks(tree: str):
    """(division, submitter, system, benchmark, folder) of every results/<system>/<benchmark>/."""
    for division in sorted(os.listdir(tree)):
        ddir = os.path.join(tree, division)
        if division not in DIVISIONS or not os.path.isdir(ddir):
            continue
        for submitter in sorted(os.listdir(ddir)):
            rdir = os.path.join(ddir, submitter, "results")
            if not os.path.isdir(rdir):
                continue
            for system in sorted(os.listdir(rdir)):
                sdir = os.path.join(rdir, system)
                if not os.path.isdir(sdir):
                    continue
                for bench in sorted(os.listdir(sdir)):
                    if os.path.isdir(os.path.join(sdir, bench)):
                        yield division, submitter, system, bench, os.path.join(sdir, bench)


def precheck(tree: str, rnd: Round) -> list[PreFinding]:
    out: list[PreFinding] = []
    for division, _, _, bench, folder in _benchmarks(tree):
        rel = os.path.relpath(folder, tree)
        try:
            spec = get_benchmark(bench)
        except BenchmarkError:
            continue                    # not an LLM benchmark of this tool: the checker's alone
        if not rnd.has_model(bench):
            out.append(PreFinding(rel, f"{rnd.version} has no benchmark {bench} (it has "
                                       f"{', '.join(rnd.benchmarks)}): remove the folder or build the tree for a "
                                       "round that has it"))
            continue
        scenarios = {s for s in os.listdir(folder) if os.path.isdir(os.path.join(folder, s))}
        if division == "closed" and "-interactive" not in bench:    # v5.0's interactive benchmark: Server only
            for need in rnd.missing_scenarios(spec, scenarios):
                out.append(PreFinding(rel, f"closed division of {rnd.version} needs {need} "
                                           f"({rnd.describe_scenarios(spec)}); it is not in the tree"))
        limits = spec.latency_limits_ms.get("Interactive")
        log_path = os.path.join(folder, "Interactive", "performance", "run_1", "mlperf_log_detail.txt")
        if "Interactive" in scenarios and limits and os.path.isfile(log_path):
            log = read_detail_log(log_path)
            for (key, label), bound in zip(zip(P99_KEYS, ("TTFT", "TPOT")), limits):
                value = log.get(key)
                if value is not None and float(value) > bound * 1e6:
                    out.append(PreFinding(os.path.relpath(log_path, tree),
                                          f"Interactive p99 {label} {float(value) / 1e6:.1f} ms is over the "
                                          f"limit of {bound} ms (the checker measures Interactive against "
                                          "Server's limits): lower --interactive_target_qps"))
    return out
