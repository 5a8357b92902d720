"""A load sweep (`--sweep=QPS,QPS,...` or `--sweep=auto`): one short Server performance test per load,
and one table of what each achieved: completed samples/s and output tokens/s, p50/p90/p99 TTFT and
TPOT, and whether the benchmark's bounds were met. `auto` takes 0.25x .. 1.25x the Offline rate.

The tests are sized as the target search's probes (search.probe_queries) and kept under
`<results>/sweep/Server/qps-Q/`; the table is printed and written to `<results>/sweep.json` and
`<results>/sweep.md`.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from ..files import write_atomic
from .userconf import round_down

AUTO_FRACTIONS = (0.25, 0.5, 0.75, 1.0, 1.25)
SWEEP_JSON, SWEEP_MD = "sweep.json", "sweep.md"
PERCENTILES = ("50.00", "90.00", "99.00")


class SweepError(ValueError):
    pass


def parse_loads(text: str) -> tuple[float, ...] | str:
    """--sweep: 'auto', or loads in queries/s ('0.5,1,2')."""
    text = (text or "").strip()
    if text.lower() == "auto":
        return "auto"
    try:
        loads = tuple(float(x) for x in text.replace(";", ",").split(",") if x.strip())
    except ValueError:
        loads = ()
    if not loads or any(not q > 0 for q in loads):
        raise SweepError(f"sweep={text!r}: give auto, or loads in queries/s, e.g. --sweep=0.5,1,2")
    return tuple(sorted(set(loads)))


def auto_loads(offline_qps: float) -> tuple[float, ...]:
    return tuple(round_down(f * offline_qps) for f in AUTO_FRACTIONS)


@dataclass(frozen=True)
class Row:
    target_qps: float
    queries: int
    achieved_qps: float | None
    tokens_per_s: float | None
    ttft_ms: tuple[float | None, ...]      # p50, p90, p99
    tpot_ms: tuple[float | None, ...]
    bounds_met: bool | None
    logs: str


def _value(text: str, pattern: str) -> float | None:
    m = re.search(pattern, text, re.M)
    return float(m.group(1)) if m else None


def row_from_summary(target_qps: float, queries: int, text: str, logs: str) -> Row:
    """A row from a Server test's mlperf_log_summary.txt."""
    ttft = tuple(_ms(_value(text, rf"^{p} percentile first token latency \(ns\)\s*:\s*(\d+)")) for p in PERCENTILES)
    tpot = tuple(_ms(_value(text, rf"^{p} percentile time to output token \(ns\)\s*:\s*(\d+)")) for p in PERCENTILES)
    met = re.search(r"Performance constraints satisfied\s*:\s*(\w+)", text)
    return Row(target_qps, queries, _value(text, r"^Completed samples per second\s*:\s*([\d.]+)"),
               _value(text, r"^Completed tokens per second\s*:\s*([\d.]+)"), ttft, tpot,
               None if not met else met.group(1).lower() == "yes", logs)


def _ms(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e6


def header(bounds_ms: tuple[float, float]) -> tuple[str, ...]:
    return ("target QPS", "queries", "achieved QPS", "output tok/s", f"TTFT p50 / p90 / p99 ms (bound {bounds_ms[0]:g})",
            f"TPOT p50 / p90 / p99 ms (bound {bounds_ms[1]:g})", "bounds met")


def cells(r: Row) -> tuple[str, ...]:
    """A row's cells, as the table and the results page show them."""
    def f(v, fmt="{:.0f}"):
        return "-" if v is None else fmt.format(v)
    return (f"{r.target_qps:g}", str(r.queries), f(r.achieved_qps, "{:.2f}"), f(r.tokens_per_s, "{:.1f}"),
            " / ".join(f(v) for v in r.ttft_ms), " / ".join(f(v) for v in r.tpot_ms),
            "-" if r.bounds_met is None else "yes" if r.bounds_met else "NO")


def table(rows: list[Row], bounds_ms: tuple[float, float]) -> list[str]:
    head = header(bounds_ms)
    return (["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            + ["| " + " | ".join(cells(r)) + " |" for r in rows])


def load(results_dir: str) -> tuple[str, tuple[float, float], list[Row]] | None:
    """The sweep written to results_dir (scenario, bounds, rows); None without one."""
    path = Path(results_dir) / SWEEP_JSON
    if not path.is_file():
        return None
    s = json.loads(path.read_text())
    rows = [Row(**{**r, "ttft_ms": tuple(r["ttft_ms"]), "tpot_ms": tuple(r["tpot_ms"])}) for r in s["rows"]]
    return s["scenario"], tuple(s["bounds_ms"]), rows


def save(results_dir: str, scenario: str, rows: list[Row], bounds_ms: tuple[float, float], offline_qps: float) -> str:
    lines = table(rows, bounds_ms)
    write_atomic(str(Path(results_dir) / SWEEP_JSON),
                 json.dumps({"scenario": scenario, "offline_qps": offline_qps, "bounds_ms": list(bounds_ms),
                             "rows": [asdict(r) for r in rows]}, indent=1))
    path = str(Path(results_dir) / SWEEP_MD)
    write_atomic(path, f"# {scenario} load sweep (Offline rate {offline_qps:.3g} QPS)\n\n" + "\n".join(lines) + "\n")
    return path
