"""The highest Server (or Interactive) target that meets the benchmark's latency bounds, found with
short LoadGen runs (probes) that bracket it, within a time budget (`_find-performance`).

The bracket starts empty. The first probe runs at the fraction of the Offline rate the run would
derive anyway (userconf.SERVER_FRACTION, INTERACTIVE_FRACTION); a probe that passes raises the low
end (the next one 1.5x higher, never above the Offline rate: no server keeps up with more than it
finishes with its whole batch in flight), one that fails lowers the high end (the next one half of
it), and once both ends are known the next probe is their middle. The search stops when the
bracket's width is within `tolerance` of its top, when the Offline rate itself passed, when the
next probe would not fit in what is left of the budget, or when a probe would be slower than the
slowest target a test run may have. The target found is the bracket's low end: the highest target
that passed.

A probe passes when its p99 TTFT and p99 TPOT are within the bounds: LoadGen's early-stopping
estimates where the run was long enough for them (they are what a valid run is judged by), else
the run's own p99s, said so with the queries LoadGen asked for more.

The targets found are written to the results folder (`searched_targets.json`); the next run into
that folder takes them for the scenarios it was given no target for, and says so (targets.py).
"""
from __future__ import annotations

import json
import math
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from ..files import write_atomic
from .userconf import round_down

SEARCH_FILE = "searched_targets.json"
TOLERANCE = 0.1          # the bracket's width, as a fraction of its top, at which the search stops
STEP_UP = 1.5            # after a pass with no failure yet: the next probe this much higher
PROBE_SECONDS = 20.0     # a probe issues queries for about this long at its target ...
MIN_PROBE_QUERIES = 16   # ... and at least this many (fewer say little about a p99)
MAX_PROBE_QUERIES = 512
TAIL_FACTOR = 1.5        # a probe's expected length: its issue time x this, plus its last answers


class SearchError(ValueError):
    pass


@dataclass(frozen=True)
class Probe:
    """One short performance test at one target, and what it says about the bounds."""
    target_qps: float
    queries: int
    seconds: float
    ttft_p99_ms: float | None
    tpot_p99_ms: float | None
    estimate: str             # whose p99: LoadGen's early-stopping estimate, or the run's own
    passed: bool
    why: str                  # the bound it missed, or that both were met
    logs: str = ""

    def line(self, index: int, bounds: tuple[float, float]) -> str:
        def ms(v):
            return "-" if v is None else f"{v:.0f} ms"
        return (f"probe {index}: {self.target_qps:g} QPS ({self.queries} queries, {self.seconds:.0f} s): "
                f"p99 TTFT {ms(self.ttft_p99_ms)} of {bounds[0]:g}, p99 TPOT {ms(self.tpot_p99_ms)} of "
                f"{bounds[1]:g} ({self.estimate}): {'PASS' if self.passed else 'FAIL'}, {self.why}")


@dataclass(frozen=True)
class Search:
    """A finished search: the target found (None: no probe passed), the bracket, every probe."""
    scenario: str
    found_qps: float | None
    low: float | None
    high: float | None
    ceiling_qps: float        # the Offline rate the search stayed under
    bounds_ms: tuple[float, float]
    probes: tuple[Probe, ...]
    stopped: str              # why it ended
    budget_s: float
    tolerance: float
    seconds: float

    def describe(self) -> str:
        found = f"{self.found_qps:g} QPS" if self.found_qps else "no target (every probe missed the bounds)"
        return (f"{self.scenario} target: {found} after {len(self.probes)} probe(s) in {self.seconds:.0f} s "
                f"of the {self.budget_s:.0f} s left of the budget; {self.stopped}")


def probe_queries(target_qps: float) -> int:
    return max(MIN_PROBE_QUERIES, min(MAX_PROBE_QUERIES, math.ceil(target_qps * PROBE_SECONDS)))


def expected_seconds(target_qps: float, answer_s: float) -> float:
    """How long a probe at target_qps should take: its queries' issue time, stretched by TAIL_FACTOR,
    plus one answer's time (answer_s: the Offline run's, a whole answer on a loaded server)."""
    return probe_queries(target_qps) / target_qps * TAIL_FACTOR + answer_s


def next_target(low: float | None, high: float | None, start: float, ceiling: float,
                tolerance: float = TOLERANCE) -> tuple[float | None, str]:
    """The next probe's target, or None and why the search is over."""
    if low is None and high is None:
        return round_down(min(start, ceiling)), ""
    if high is None:
        if low >= round_down(ceiling):
            return None, f"the Offline rate itself ({round_down(ceiling):g} QPS) met the bounds"
        return round_down(min(ceiling, low * STEP_UP)), ""
    if low is None:
        return round_down(high / 2), ""
    if high - low <= tolerance * high:
        return None, f"the bracket [{low:g}, {high:g}] is within {tolerance:.0%} of its top"
    middle = round_down((low + high) / 2)
    if middle <= low or middle >= high:
        return None, f"the bracket [{low:g}, {high:g}] cannot be split at 3 significant digits"
    return middle, ""


def search(scenario: str, probe: Callable[[float], Probe], *, start: float, ceiling: float,
           bounds_ms: tuple[float, float], budget_s: float, answer_s: float, slowest_qps: float,
           tolerance: float = TOLERANCE, say: Callable[[str], None] = print,
           clock: Callable[[], float] = time.monotonic) -> Search:
    """Probe targets until the bracket is narrow enough or the budget is spent (see the module)."""
    if not ceiling > 0:
        raise SearchError(f"the {scenario} target search needs the Offline rate, and it measured {ceiling}")
    t0 = clock()
    low = high = None
    probes: list[Probe] = []
    stopped = ""
    say(f"searching the {scenario} target: p99 TTFT <= {bounds_ms[0]:g} ms and p99 TPOT <= {bounds_ms[1]:g} ms, "
        f"under the Offline rate {ceiling:.3g} QPS, in the {budget_s:.0f} s left of the budget, to {tolerance:.0%}")
    while True:
        target, stopped = next_target(low, high, start, ceiling, tolerance)
        if target is None:
            break
        if target < slowest_qps:
            stopped = (f"the next probe ({target:g} QPS) would be slower than a test run may be "
                       f"({slowest_qps:.3g} QPS at least)")
            break
        left = budget_s - (clock() - t0)
        need = expected_seconds(target, answer_s)
        if need > left:
            stopped = (f"the budget is spent: the next probe ({target:g} QPS) needs about {need:.0f} s and "
                       f"{max(left, 0):.0f} s are left (--search_budget=MINUTES for more)")
            break
        p = probe(target)
        probes.append(p)
        say(p.line(len(probes), bounds_ms))
        if p.passed:
            low = target if low is None else max(low, target)
        else:
            high = target if high is None else min(high, target)
    result = Search(scenario, low, low, high, ceiling, bounds_ms, tuple(probes), stopped, budget_s, tolerance,
                    clock() - t0)
    say(result.describe())
    return result


_ESTIMATE = re.compile(r"Early stopping (?:\d+(?:\.\d+)?th|\d+\.\d+) percentile estimate\s*:\s*(\d+)")
_MORE = re.compile(r"Would need to run at least (\d+) more queries")


def judge(summary: dict, early: dict[str, str], bounds_ms: tuple[float, float], queries: int) -> tuple:
    """(p99 TTFT ms, p99 TPOT ms, whose p99s, passed, why) from a probe's summary (results.Summary's
    dict) and its early-stopping texts (summary_values: early_stopping_ttft_result / _tpot_result)."""
    values, whose, more = [], [], []
    for what, key in (("ttft", "ttft_p99_ns"), ("tpot", "tpot_p99_ns")):
        text = early.get(f"early_stopping_{what}_result", "")
        m = _ESTIMATE.search(text)
        if m:
            values.append(int(m.group(1)) / 1e6)
            whose.append("estimate")
        else:
            values.append(summary[key] / 1e6 if summary.get(key) else None)
            n = _MORE.search(text)
            if n:
                more.append(int(n.group(1)))
    estimate = ("LoadGen's early-stopping estimates" if whose == ["estimate", "estimate"] else
                f"the run's own p99s: {queries} queries are too few for LoadGen's early-stopping estimate"
                + (f" (it asks for {max(more)} more)" if more else ""))
    missed = [f"p99 {name} {v:.0f} ms over {bound:g}" for name, v, bound in zip(("TTFT", "TPOT"), values, bounds_ms)
              if v is not None and v > bound]
    if None in values:
        return values[0], values[1], estimate, False, "LoadGen logged no p99 TTFT/TPOT (a failed test?)"
    return values[0], values[1], estimate, not missed, "; ".join(missed) or "both bounds met"


@dataclass
class Searched:
    """What searched_targets.json holds: the targets, and how they were found."""
    model: str
    round: str
    endpoints: int
    searched_at: str
    searches: dict = field(default_factory=dict)     # scenario -> asdict(Search)

    def targets(self) -> dict[str, float]:
        return {s: d["found_qps"] for s, d in self.searches.items() if d.get("found_qps")}

    def how(self, scenario: str) -> str:
        d = self.searches[scenario]
        return (f"searched by _find-performance on {self.searched_at} ({len(d['probes'])} probes, bracket "
                f"[{d['low']}, {d['high']}], {d['stopped']})")

    def save(self, results_dir: str) -> str:
        path = str(Path(results_dir) / SEARCH_FILE)
        write_atomic(path, json.dumps(asdict(self), indent=1))
        return path

    @classmethod
    def load(cls, results_dir: str) -> "Searched | None":
        path = Path(results_dir) / SEARCH_FILE
        if not path.is_file():
            return None
        try:
            return cls(**json.loads(path.read_text()))
        except (ValueError, TypeError) as e:
            raise SearchError(f"{path} is unreadable ({e}); remove it, or run _find-performance again") from None
