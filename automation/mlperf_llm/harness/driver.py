"""Plan and run the benchmark's LoadGen tests, one subprocess each (testrun.py), into the results layout.

`run_all` takes a request (request.py) and, in order: the targets of an earlier search or of this
run's `_find-performance` (findperf.py, targets.py), the load sweep, then each scenario's tests,
performance before accuracy. A Server or Interactive test without a target takes it from the
Offline performance test that ran before it in the same request (LoadGen's own default, 1 query/s,
is right for no system); one the run chose that misses the latency bounds is lowered and run again,
and a host that cannot meet the bounds at any load is said (latency.py). A test run may be sized to
the host (testsizing.py). `targets.json` records each target used and where it came from;
`harness_outcomes.json` every test's verdict.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, replace
from pathlib import Path

from . import hostlimit, testrun, testsizes
from .findperf import find_performance, run_sweep
from .latency import Reach, answer_s, meet_latency_bounds
from .request import HarnessInputError, HarnessRequest
from .targets import derive_from_offline, searched, with_targets
from .testconfig import PERFORMANCE_MODES
from .testrun import RunOutcome
from .testsizing import measure, size_of, size_test, start_sizing
from .userconf import TARGET_INPUTS
from ..files import write_atomic

__all__ = ["HarnessInputError", "HarnessRequest", "RunOutcome", "run_all"]


def run_all(req: HarnessRequest) -> list[RunOutcome]:
    """Run every (scenario, mode) test of the request; performance before accuracy."""
    req.validate()
    for line in generation_notes(req):
        print(line, flush=True)
    rows = testrun.dataset_rows(req)         # the performance tests' set
    # the other tests' sets, where they are not the performance tests' (gpt-oss-120b's accuracy and TEST07 sets)
    set_rows = {m: testrun.dataset_rows(req, m) if req.dataset_for(m) != req.dataset_for("performance") else rows
                for m in req.modes}
    sources = {s: "given" for s in TARGET_INPUTS if req.target_for(s) is not None}
    offline_qps = None
    if req.find_performance:
        targets, how = find_performance(req, rows)
        offline_qps = targets["Offline"]
        for scenario, value in targets.items():
            req = with_targets(req, {scenario: value}, how[scenario], sources)
    else:
        req = searched(req, sources)
    if req.sweep:
        run_sweep(req, rows, offline_qps)
    outcomes: list[RunOutcome] = []
    measured = start_sizing(req)
    reach = Reach()
    ran: dict[str, int] = {}         # each test's size (testsizes.py)
    for scenario in req.scenarios:
        req = derive_from_offline(req, [o for o in outcomes if o.scenario == "Offline"], scenario, sources)
        reach.judge(req, scenario, outcomes, rows, given=sources.get(scenario) == "given")
        for mode in req.modes:
            mode_rows = issued_rows(req, scenario, mode, set_rows[mode])
            treq, sized = size_test(reach.for_test(req, scenario, mode), scenario, mode, mode_rows, measured)
            if mode == "accuracy" and treq.accuracy_rows(mode_rows) < mode_rows:
                n = treq.accuracy_rows(mode_rows)
                print(f"{scenario} accuracy: the first {n} of {mode_rows} samples (test mode; "
                      "--accuracy_sample_count=all for every sample)", flush=True)
                outcomes.append(testrun.run_one(replace(treq, total_sample_count=n), scenario, mode, n, sized=sized))
            elif mode == "performance":
                t0 = time.monotonic()
                first = testrun.run_one(treq, scenario, mode, rows, sized=sized)
                if req.sized_run and sized is not None and measured is None and first.verdict != "FAILED":
                    measured = measure(req, first, treq.test_query_count or 0, time.monotonic() - t0)
                treq, outcome = ((treq, first) if scenario in reach.limits
                                 else meet_latency_bounds(treq, scenario, rows, first, sources,
                                                           hostlimit.lowest_load(answer_s(outcomes))))
                reach.after_retries(treq, scenario, outcome, outcomes, given=sources.get(scenario) == "given")
                if scenario not in reach.lowest and treq.target_for(scenario) != req.target_for(scenario):
                    # lowered to meet the bounds
                    req = replace(req, **{TARGET_INPUTS[scenario]: treq.target_for(scenario)})
                outcomes.append(outcome)
            else:
                outcomes.append(testrun.run_one(treq, scenario, mode, mode_rows, sized=sized))
            ran[testsizes.key(scenario, mode)] = size_of(treq, scenario, mode, mode_rows)
            if outcomes[-1].verdict == "FAILED":     # the next tests would meet the same fault
                break
        if outcomes and outcomes[-1].verdict == "FAILED":
            break
    write_atomic(str(Path(req.results_dir) / "harness_outcomes.json"),
                 json.dumps([asdict(o) for o in outcomes], indent=1))
    if ran and (req.execution_mode == "test" or os.path.isfile(os.path.join(req.results_dir, testsizes.SIZES_FILE))):
        test_run = req.execution_mode == "test"
        testsizes.write(req.results_dir, ran if test_run else {}, () if test_run else tuple(ran))
    if "performance" in req.modes:      # a TEST06-only request keeps the record of the benchmark's run
        used = {s: {"target_latency_ms" if s == "SingleStream" else "target_qps": req.target_for(s),
                    "source": sources.get(s, "LoadGen default (mlperf.conf)"),
                    **reach.record(s)}
                for s in req.scenarios}
        write_atomic(str(Path(req.results_dir) / "targets.json"), json.dumps(used, indent=1))
    return outcomes


def generation_notes(req: HarnessRequest) -> list[str]:
    """What the run's answers are made with where that is not the benchmark's: a lower cap on new
    tokens, greedy answers for a benchmark that samples."""
    bench, out = req.bench, []
    for mode in dict.fromkeys("performance" if m in PERFORMANCE_MODES else "accuracy" for m in req.modes):
        own = replace(req, max_tokens=None).max_new_tokens_for(mode)     # the benchmark's own cap
        if req.max_tokens and req.max_tokens < own:
            out.append(f"note: {mode} answers are capped at {req.max_tokens} new tokens (CM_MLPERF_MAX_TOKENS, which "
                       f"_embedded sets); {bench.name}'s {mode} runs allow {own}: a test run, not a result")
    if bench.sampling and req.greedy:
        given = ", ".join(f"{k} {v:g}" for k, v in bench.sampling)
        out.append(f"note: greedy answers (--greedy, which _embedded sets); {bench.name} samples ({given}): a test "
                   "run, not a result")
    elif bench.sampling:
        out.append(f"sampling: {', '.join(f'{k} {v:g}' for k, v in bench.sampling)}, seed {req.sampling_seed} + the "
                   "sample's index (recorded in each test's harness_config.json)")
    return out


def issued_rows(req: HarnessRequest, scenario: str, mode: str, rows: int) -> int:
    """The rows a test loads: its set's, but for TEST07 and TEST09 no more than their audit.config's
    query count (it issues each loaded sample once, performance_issue_unique: a test run's shortened
    count must load no more than it issues)."""
    if mode not in ("TEST07", "TEST09"):
        return rows
    from ..accuracy.test06_config import query_count_of
    return min(rows, query_count_of(req.audit_config(mode), scenario) or rows)
