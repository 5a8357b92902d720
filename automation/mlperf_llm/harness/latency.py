"""A Server or Interactive target the run chose that misses the latency bounds: lowered and the test
run again (at most LATENCY_RETRIES times, the missed runs kept under `<results>/latency_search/`);
and whether this host can meet the bounds at any load (`Reach`, hostlimit.py): where one query alone
is about the bound, the test runs once at the lowest load and its verdict names the host limit."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cmcontract.publish import replace_dir

from . import hostlimit, testrun
from .request import HarnessRequest
from .testrun import RunOutcome
from .userconf import TARGET_INPUTS, round_down, test_queries

LATENCY_RETRIES = 3          # lowered targets tried after a chosen target missed the latency bounds
MAX_LOWERING = 4             # ... each at most this many times lower than the one that missed
# a test-mode retry's target is never so low that issuing its queries would take longer than this
# (the minimum duration of a valid run): on a busy host one missed run could otherwise lower the
# target 20x and make a test run of 32 queries take hours
TEST_MODE_MAX_ISSUE_S = 600


def lowered_target(target: float, summary: dict, scenario: str, limits: dict) -> float:
    """The next target after `target` missed the latency bounds: scaled by how far the worse p99
    (TTFT or TPOT) is over its bound, with a margin, at least 30% lower and at most MAX_LOWERING
    times lower (one p99 measured on a busy host is no reason to give up most of the throughput)."""
    ratios = [bound * 1e6 / summary[key] for key, bound in zip(("ttft_p99_ns", "tpot_p99_ns"), limits[scenario])
              if summary.get(key)]
    factor = max(1 / MAX_LOWERING, min([0.7] + [0.8 * r for r in ratios]))
    return round_down(target * factor)

def lowest_test_target(req: HarnessRequest, rows: int) -> float:
    """In test mode, the lowest target at which the test's queries are issued within
    TEST_MODE_MAX_ISSUE_S (0 in valid mode: the round's minimums decide the duration there)."""
    if req.execution_mode != "test":
        return 0.0
    return test_queries(req.test_query_count, rows) / TEST_MODE_MAX_ISSUE_S

def _set_aside(outcome: RunOutcome, results_dir: str, scenario: str, target: float) -> str:
    """Move a performance test that missed the latency bounds out of the results layout (the
    submission must not take it), into <results>/latency_search/<Scenario>/target_qps-<t>/."""
    dest = Path(results_dir) / "latency_search" / scenario / f"target_qps-{target:g}"
    dest.parent.mkdir(parents=True, exist_ok=True)
    replace_dir(outcome.directory, str(dest))
    return str(dest)

def meet_latency_bounds(req: HarnessRequest, scenario: str, rows: int, outcome: RunOutcome,
                         sources: dict[str, str], lowest: float = 0.0) -> tuple[HarnessRequest, RunOutcome]:
    """A Server/Interactive target this run chose (derived, not given) that missed the latency
    bounds is lowered and the performance test run again, at most LATENCY_RETRIES times, and never
    below `lowest` (about one query in flight at a time: lower cannot help; hostlimit.lowest_load),
    where it stops. A given target is the user's choice and is kept: its INVALID result is reported
    as it is."""
    tries, limits = 0, req.bench.latency_limits_ms
    while (scenario in limits and sources.get(scenario, "given") != "given"
           and outcome.verdict == "INVALID" and outcome.summary.get("latency_met") is False
           and tries < LATENCY_RETRIES):
        old = req.target_for(scenario)
        if lowest and old <= lowest * 1.001:
            break
        new = max(lowered_target(old, outcome.summary, scenario, limits), lowest)
        floor = lowest_test_target(req, rows)
        if new < floor:
            if old <= floor * 1.001:
                print(f"{scenario} target_qps {old:g} missed the latency bounds; not lowered further: a "
                      f"test-mode run issues {test_queries(req.test_query_count, rows)} queries, which below "
                      f"{old:g}/s would take over {TEST_MODE_MAX_ISSUE_S} s (the host may be busy; pass "
                      f"--{scenario.lower()}_target_qps to choose the target)", flush=True)
                break
            new = floor
        if not new > 0:
            break
        kept = _set_aside(outcome, req.results_dir, scenario, old)
        ttft, tpot = (outcome.summary.get(k) or 0 for k in ("ttft_p99_ns", "tpot_p99_ns"))
        bound_ttft, bound_tpot = limits[scenario]
        print(f"{scenario} target_qps {old:g} missed the latency bounds (p99 TTFT {ttft / 1e6:.0f} ms of "
              f"{bound_ttft}, p99 TPOT {tpot / 1e6:.0f} ms of {bound_tpot}): running the performance test "
              f"again at {new:g} (the missed run's logs: {kept}); pass --{scenario.lower()}_target_qps to "
              "choose it", flush=True)
        req = replace(req, **{TARGET_INPUTS[scenario]: new})
        sources[scenario] = sources[scenario].split("; lowered")[0] + f"; lowered to {new:g} to meet the latency bounds"
        outcome = testrun.run_one(req, scenario, "performance", rows)
        tries += 1
    return req, outcome

class Reach:
    """Whether this host can meet a scenario's latency bounds at any load (hostlimit.py): one probe
    of a query alone per request, before its first Server or Interactive performance test on a
    server; each scenario judged by its own bounds. A scenario out of reach runs its performance test
    once at the lowest load (`lowest`); its accuracy and TEST06 tests, which judge answers and not
    latency, keep the run's target."""

    def __init__(self) -> None:
        self.alone: hostlimit.Alone | None = None
        self.probed = False
        self.limits: dict[str, hostlimit.HostLimit] = {}
        self.lowest: dict[str, float] = {}      # scenario -> its performance test's target

    def judge(self, req: HarnessRequest, scenario: str, outcomes: list[RunOutcome], rows: int,
              given: bool) -> None:
        bounds = req.bench.latency_limits_ms.get(scenario)
        if bounds is None or "performance" not in req.modes or req.backend != "vllm" or not req.api_servers:
            return
        old, pinned = req.target_for(scenario), req.performance_loads.get(scenario)
        if pinned:
            self.lowest[scenario] = pinned
            print(f"{scenario}: the performance test runs once, at {pinned:g} QPS, the load given for it "
                  f"({hostlimit.LOADS_ENV}: a replay's, where the recorded run's ran); the accuracy tests at "
                  f"{_target_text(old)}", flush=True)
        if not self.probed:
            self.probed = True
            self.alone = probe_alone(req)
        if self.alone is None:
            return
        limit = hostlimit.judge(req.model, scenario, self.alone, bounds)
        if limit is None:
            return
        self.limits[scenario] = limit
        if pinned:
            print(f"{scenario}: {limit.sentence()} (its verdict will name this host limit)", flush=True)
            return
        if given:
            print(f"{scenario}: {limit.sentence()}; the given target {old:g} is kept and the test runs once "
                  "(its verdict will name this host limit)", flush=True)
            return
        low = max(hostlimit.lowest_load(answer_s(outcomes)), lowest_test_target(req, rows))
        if old is None or not 0 < low < old:
            print(f"{scenario}: {limit.sentence()}; the performance test runs once, at {_target_text(old)}, and is "
                  "not retried at lower loads (its verdict will name this host limit)", flush=True)
            return
        self.lowest[scenario] = low
        print(f"{scenario}: {limit.sentence()}; the performance test runs once, at the lowest load, {low:g} QPS "
              f"(about one query in flight at a time), not at {old:g} and lower ones in turn (its verdict will name "
              f"this host limit; the accuracy tests keep {old:g}); pass --{scenario.lower()}_target_qps to choose "
              "the target", flush=True)

    def after_retries(self, req: HarnessRequest, scenario: str, outcome: RunOutcome, outcomes: list[RunOutcome],
                      given: bool) -> None:
        """A chosen target lowered until it reached the lowest load and still missing the bounds: a
        host limit measured (said, and named by the verdict as one foreseen is)."""
        bounds = req.bench.latency_limits_ms.get(scenario)
        target, low = req.target_for(scenario), hostlimit.lowest_load(answer_s(outcomes))
        if (bounds is None or given or scenario in self.limits or outcome.verdict != "INVALID"
                or outcome.summary.get("latency_met") is not False or not target or not low or target > low * 1.001):
            return
        limit = hostlimit.measured(req.model, scenario, outcome.summary, bounds, target)
        if limit is not None:
            self.limits[scenario] = limit
            print(f"{scenario}: {limit.sentence()} (its verdict will name this host limit)", flush=True)

    def for_test(self, req: HarnessRequest, scenario: str, mode: str) -> HarnessRequest:
        """The request of one test: a performance test out of reach at the lowest load."""
        if mode != "performance" or scenario not in self.lowest:
            return req
        return replace(req, **{TARGET_INPUTS[scenario]: self.lowest[scenario]})

    def record(self, scenario: str) -> dict:
        """What targets.json adds for the scenario: the load its performance test ran at where that is
        not the target (the lowest load, or one given), and its host limit (with that load, as records
        before the load was kept on its own hold it)."""
        out = {"performance_target_qps": self.lowest[scenario]} if scenario in self.lowest else {}
        if scenario in self.limits:
            limit = self.limits[scenario].to_json()
            if scenario in self.lowest:
                limit["performance_target_qps"] = self.lowest[scenario]
            out["host_limit"] = limit
        return out

def _target_text(target: float | None) -> str:
    """A test's load as said: the target, or LoadGen's own default where the run has none (a Server or
    Interactive test without a target and without an Offline test to derive one from)."""
    return "LoadGen's default target (mlperf.conf)" if target is None else f"{target:g} QPS"


def answer_s(outcomes: list[RunOutcome]) -> float:
    """An answer's mean time in the run's Offline performance test (0 without one)."""
    return max((float(o.summary.get("latency_mean_ns") or 0) / 1e9 for o in outcomes
                if o.scenario == "Offline" and o.mode == "performance"), default=0.0)

def probe_alone(req: HarnessRequest) -> hostlimit.Alone | None:
    """One query alone on the request's first server (None, said, when the probe failed: the test
    that follows meets the same fault and names it)."""
    from .qsl import load_dataset
    try:
        prompt = hostlimit.longest_prompt(load_dataset(req.dataset_path, req.total_sample_count).tok_input)
        alone = hostlimit.probe(req.api_servers[0], req.api_model_name, prompt, req.token_ids_via,
                                req.api_key or None)
    except hostlimit.ProbeError as e:
        print(f"latency reach not probed ({e}): a missed latency bound is retried at lower loads", flush=True)
        return None
    print(alone.line(), flush=True)
    return alone
