"""Plan and run the benchmark's LoadGen tests, one subprocess each, into the results layout.

`find_performance` first runs a short Offline test and derives the targets from it. Without it,
a Server or Interactive test whose target was not given takes it from the Offline performance test
that ran before it in the same request (LoadGen's own default, 1 query/s, is right for no system);
`targets.json` records each target used and where it came from (SingleStream's is a latency: given,
or LoadGen's default in a test run; a valid run needs it given). A Server or Interactive target
the run chose itself (not given) that misses the latency bounds is lowered and the performance test
run again (at most LATENCY_RETRIES times); the missed runs' logs are kept under
`<results>/latency_search/`. Before the first such test, one query alone on the server is timed
(hostlimit.py): where that alone is about the bound, no load can meet it, and the run says so, runs
the test once at the lowest load, and records the host limit in `targets.json`.
Each test's stdout/stderr is kept as `harness.log` beside LoadGen's logs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from cmcontract.publish import replace_dir

from .results import HarnessStatus, finalize, read_summary, staging_dir, layout_dir, summary_values, verdict
from . import hostlimit, sizing, testsizes
from .search import SEARCH_FILE, MIN_PROBE_QUERIES, Probe, Searched, judge, probe_queries, search
from .sweep import Row as SweepRow, SweepError, auto_loads, parse_loads, row_from_summary, table
from .sweep import save as save_sweep
from .rounds import loadgen_model_and_dirs
from .testconfig import BACKENDS, CONFIG_FILE, MODES, TestConfig, TestSettings
from ..benchmarks import Benchmark, get_benchmark
from ..rounds import Round, round_for
from ..files import write_atomic
from ..sysinfo.pyenv import with_path
from .userconf import (INTERACTIVE_FRACTION, SERVER_FRACTION, TARGET_INPUTS, UserConfSpec, round_down,
                       pick_targets, test_queries)

FRACTIONS = {"Server": SERVER_FRACTION, "Interactive": INTERACTIVE_FRACTION}
LATENCY_RETRIES = 3          # lowered targets tried after a chosen target missed the latency bounds
MAX_LOWERING = 4             # ... each at most this many times lower than the one that missed
# a test-mode retry's target is never so low that issuing its queries would take longer than this
# (the minimum duration of a valid run): on a busy host one missed run could otherwise lower the
# target 20x and make a test run of 32 queries take hours
TEST_MODE_MAX_ISSUE_S = 600

AUTOMATION_DIR = str(Path(__file__).resolve().parents[2])


class HarnessInputError(ValueError):
    pass


@dataclass(frozen=True, kw_only=True)
class HarnessRequest(TestSettings):
    """The tests to run: the settings each test shares (TestSettings), and the request's own."""
    results_dir: str
    scenarios: tuple[str, ...] = ("Offline",)
    modes: tuple[str, ...] = ("performance", "accuracy")
    offline_target_qps: float | None = None
    server_target_qps: float | None = None
    interactive_target_qps: float | None = None
    singlestream_target_latency: float | None = None   # ms: one query's expected latency (user.conf target_latency)
    test_query_count: int | None = None
    max_test_duration_s: float | None = None
    accuracy_sample_count: int | None = None   # 0 = the whole data set; None = test_query_count in test mode
    find_performance: bool = False
    find_target: tuple[str, ...] = ()     # scenarios whose target find_performance searches (search.py);
                                          # () = the request's Server / Interactive
    search_budget_s: float = 600.0        # the whole find-performance run's time, the searches' probes in it
    sweep: str = ""                       # "auto" or "QPS,QPS,...": a load sweep of Server tests (sweep.py)
    size_to_host: bool = False            # test mode: each test's query count from the host's rate (sizing.py)
    test_sizes: dict = field(default_factory=dict)   # test mode: "Scenario/kind" -> its size, as given (testsizes.py)
    python: str = sys.executable
    loadgen_path: str = ""          # the round's LoadGen (get-mlperf-inference-loadgen site/), first on PYTHONPATH
    loadgen_version: str = ""       # its version, where known (user.conf works around the 4.1 wheels' padding)

    def validate(self) -> None:
        for s in self.scenarios:
            loadgen_model_and_dirs(self.model, s, self.rnd)
        bad = [m for m in self.modes if m not in MODES]
        if bad or not self.modes:
            raise HarnessInputError(f"mode {bad or '(none)'}: choose from {', '.join(MODES)}")
        if "TEST06" in self.modes and not os.path.isfile(self.audit_conf):
            raise HarnessInputError(f"TEST06 needs its audit.config: audit_conf={self.audit_conf!r} is not a file; "
                                    "fix: pass the path of compliance/TEST06/audit.config from the inference source")
        unknown = [s for s in self.find_target if s not in FRACTIONS]
        if unknown:
            raise HarnessInputError(f"find_target={','.join(unknown)}: the target search is for "
                                    f"{' and '.join(s.lower() for s in FRACTIONS)} (their latency bounds)")
        if self.sweep:
            try:
                parse_loads(self.sweep)
            except SweepError as e:
                raise HarnessInputError(str(e)) from None
        if not self.search_budget_s > 0:
            raise HarnessInputError(f"search_budget={self.search_budget_s / 60:g} minutes: give a positive number")
        if self.backend not in BACKENDS:
            raise HarnessInputError(f"backend {self.backend!r}: choose {' or '.join(BACKENDS)}")
        if self.backend == "vllm" and not self.api_servers:
            raise HarnessInputError("api_server is empty; fix: pass --api_server=http://HOST:PORT[,URL2...]")
        if self.backend == "transformers" and not self.model_path:
            raise HarnessInputError("the transformers backend needs --model_path=<HF model folder>")
        if self.num_workers < 1:
            raise HarnessInputError(f"num_workers={self.num_workers}: must be at least 1")
        if self.accuracy_sample_count and self.execution_mode == "valid":
            raise HarnessInputError(f"accuracy_sample_count={self.accuracy_sample_count} with execution_mode=valid: "
                                    "a valid run's accuracy test covers the whole data set (the checker "
                                    "requires it); fix: drop --accuracy_sample_count, or use --execution_mode=test")
        if ("SingleStream" in self.scenarios and self.execution_mode == "valid" and "performance" in self.modes
                and self.singlestream_target_latency is None):
            raise HarnessInputError(
                "SingleStream in valid mode needs its target latency: LoadGen plans at least 2 x min_duration / "
                "target_latency queries, a multiple of the performance sample count under equal issue, and "
                "mlperf.conf's 10 ms plans 125,000 on a 5000-sample set (days at a second a query); fix: pass "
                "--singlestream_target_latency=MS (CM_MLPERF_LOADGEN_SINGLESTREAM_TARGET_LATENCY), one query's "
                "expected latency, e.g. the '90.00 percentile latency (ns)' of a test run's summary / 1e6")
        if self.test_sizes and self.execution_mode == "valid":
            raise HarnessInputError(f"{testsizes.INPUT}={testsizes.format_sizes(self.test_sizes)} with "
                                    "execution_mode=valid: a valid run's sizes are the round's; fix: drop "
                                    f"{testsizes.INPUT}, or use --execution_mode=test")
        if self.accuracy_sample_count is not None and self.accuracy_sample_count < 0:
            raise HarnessInputError(f"accuracy_sample_count={self.accuracy_sample_count}: must be a count of "
                                    "samples, or 0 (or 'all') for the whole data set")

    @property
    def rnd(self) -> Round:
        return round_for(self.round, self.model)

    @property
    def sized_run(self) -> bool:
        """A test run whose query counts come from the host's measured rate (sizing.py)."""
        return self.size_to_host and self.execution_mode == "test" and not self.test_sizes

    @property
    def bench(self) -> Benchmark:
        return get_benchmark(self.model)

    def accuracy_rows(self, rows: int) -> int:
        """Samples an accuracy test covers: the whole data set in valid mode; in test mode the
        first test_query_count (as CM's test runs do) unless accuracy_sample_count says otherwise."""
        n = self.accuracy_sample_count
        if n is None:
            n = self.test_query_count if self.execution_mode == "test" else 0
        return min(rows, n) if n else rows

    def target_for(self, scenario: str) -> float | None:
        """The scenario's target: queries/s, SingleStream's a latency in ms (TARGET_INPUTS)."""
        return {"Offline": self.offline_target_qps, "Server": self.server_target_qps,
                "Interactive": self.interactive_target_qps or self.server_target_qps,
                "SingleStream": self.singlestream_target_latency}[scenario]


@dataclass
class RunOutcome:
    scenario: str
    mode: str
    verdict: str                       # VALID | INVALID | FAILED
    reasons: list[str]
    directory: str
    returncode: int
    summary: dict = field(default_factory=dict)
    harness_samples_per_second: float | None = None   # completed / duration, as the harness saw it

    def offline_rate(self) -> tuple[float, str]:
        """(samples/s, what measured it) of an Offline test: LoadGen's figure for performance,
        the harness's for accuracy (LoadGen reports none there)."""
        if self.mode == "performance":
            return float(self.summary.get("samples_per_second") or 0.0), "Offline performance test"
        return float(self.harness_samples_per_second or 0.0), f"Offline {self.mode} test"

    def line(self) -> str:
        s = self.summary
        perf = ""
        if self.mode == "performance" and s.get("metric") is not None:
            rate = f" {s['samples_per_second']} samples/s," if s.get("samples_per_second") is not None else ""
            perf = f"{rate} {s['metric']:g} {s.get('metric_unit')}"
        why = f" ({'; '.join(self.reasons[:4])})" if self.reasons else ""
        return f"{self.scenario:<11} {self.mode:<11} {self.verdict:<7}{perf}{why}\n    {self.directory}"


def _dataset_rows(req: HarnessRequest) -> int:
    from .qsl import load_dataset
    return load_dataset(req.dataset_path, req.total_sample_count).count


def _command(req: HarnessRequest, scenario: str, mode: str, out: Path, user_conf: Path) -> list[str]:
    """The test's command line; its settings go in `out`/harness_config.json (kept with its logs)."""
    cfg = TestConfig.of(req, scenario=scenario, mode=mode, output_dir=str(out), user_conf=str(user_conf),
                        round=req.rnd.name, audit_conf=req.audit_conf if mode == "TEST06" else "")
    path = out / CONFIG_FILE
    write_atomic(str(path), cfg.to_json())
    return [req.python, "-m", "mlperf_llm.harness.run", f"--config={path}"]


def _run_logged(cmd: list[str], log_path: Path, loadgen_path: str = "") -> int:
    env = with_path(os.pathsep.join(p for p in (AUTOMATION_DIR, loadgen_path) if p))
    env["PYTHONUNBUFFERED"] = "1"
    if sys.stderr.isatty():
        env["CM_MLPERF_PROGRESS_TTY"] = "yes"
    with open(log_path, "w", encoding="utf-8") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, bufsize=0)
        assert proc.stdout is not None
        try:
            while True:      # by chunks: a live progress line ends in "\r", not "\n"
                chunk = os.read(proc.stdout.fileno(), 4096)
                if not chunk:
                    break
                text = chunk.decode(errors="replace")
                log.write(text)
                log.flush()
                sys.stderr.write(text)
                sys.stderr.flush()
            return proc.wait()
        except BaseException:
            # interrupted (a signal to this process alone, not its group, or an error here): the test's
            # process goes too, SIGTERM then SIGKILL, instead of running on without its parent
            from cmcontract.proctree import STOP_GRACE_S, stop_tree
            stop_tree(proc, STOP_GRACE_S)
            raise


def run_one(req: HarnessRequest, scenario: str, mode: str, rows: int, base_dir: Path | None = None,
            sized: sizing.Sized | None = None) -> RunOutcome:
    """One LoadGen test; with `sized`, its size and expected duration printed before it starts and
    its actual duration after."""
    if sized is not None:
        print(sized.line(scenario, mode), flush=True)
    t0 = time.monotonic()
    o = _run_one(req, scenario, mode, rows, base_dir)
    if sized is not None:
        print(sized.done_line(scenario, mode, time.monotonic() - t0), flush=True)
    return o


def _run_one(req: HarnessRequest, scenario: str, mode: str, rows: int, base_dir: Path | None) -> RunOutcome:
    rnd = req.rnd
    lg_model, lg_scenario, model_dir, scenario_dir = loadgen_model_and_dirs(req.model, scenario, rnd)
    final = layout_dir(base_dir or req.results_dir, model_dir, scenario_dir, mode)
    stage = staging_dir(final)
    stage.mkdir(parents=True, exist_ok=False)
    target, latency = req.target_for(scenario), lg_scenario == "SingleStream"
    spec = UserConfSpec(lg_model, lg_scenario, req.execution_mode, None if latency else target,
                        req.test_query_count, req.max_test_duration_s, rows, req.loadgen_version,
                        target_latency_ms=target if latency else None,
                        full_sample_count=req.bench.performance_sample_count)
    user_conf = stage / "user.conf"
    write_atomic(str(user_conf), spec.text())
    rc = _run_logged(_command(req, scenario, mode, stage, user_conf), stage / "harness.log", req.loadgen_path)
    status = HarnessStatus.read(stage)
    summary = read_summary(stage)
    v, reasons = verdict(status, summary, rnd.qsl_rng_seed if req.execution_mode == "valid" else None,
                         "performance" if mode == "performance" else "accuracy")
    if rc != 0 and v != "FAILED":
        v, reasons = "FAILED", [f"harness exited with {rc}"] + reasons
    placed = finalize(stage, final, ok=v != "FAILED")
    rate = status.completed / status.duration_s if status and status.duration_s > 0 else None
    return RunOutcome(scenario, mode, v, reasons, str(placed), rc, summary.to_dict(), rate)


def _short_offline(req: HarnessRequest, rows: int, base: Path, what: str) -> tuple[float, RunOutcome, int]:
    """A short Offline performance test (test mode, the test's count or 64 queries) under base:
    its samples/s, its outcome and its query count."""
    queries = req.test_query_count or min(rows, 64)
    o = run_one(replace(req, execution_mode="test", offline_target_qps=None, test_query_count=queries),
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
        offline_qps = _short_offline(req, rows, Path(req.results_dir) / "sweep", "sweep")[0]
    loads = parse_loads(req.sweep)
    loads = auto_loads(offline_qps) if loads == "auto" else loads
    print(f"{scenario} load sweep at {', '.join(f'{q:g}' for q in loads)} QPS (the Offline rate: "
          f"{offline_qps:.3g} QPS)", flush=True)
    out = []
    for qps in loads:
        o, n, text, _ = _short_load_test(req, scenario, rows, qps,
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
    rate, o, queries = _short_offline(req, rows, Path(req.results_dir) / "find_performance", "find-performance run")
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
    o, n, text, seconds = _short_load_test(req, scenario, rows, qps, Path(req.results_dir) / "find_performance" /
                                           scenario / f"probe-{index}-qps-{qps:g}", f"{scenario} target search")
    ttft, tpot, whose, passed, why = judge(o.summary, summary_values(text) if text else {}, bounds_ms, n)
    return Probe(qps, n, seconds, ttft, tpot, whose, passed, why, o.directory)


def _short_load_test(req: HarnessRequest, scenario: str, rows: int, qps: float, base: Path,
                     what: str) -> tuple[RunOutcome, int, str, float]:
    """One performance test at qps in test mode, sized to last about search.PROBE_SECONDS (a probe of
    the target search, a load of the sweep): its outcome, query count, summary text and seconds."""
    n = probe_queries(qps)
    t0 = time.monotonic()
    o = run_one(replace(req, execution_mode="test", test_query_count=n, **{TARGET_INPUTS[scenario]: qps}),
                scenario, "performance", rows, base_dir=base)
    seconds = time.monotonic() - t0
    if o.verdict == "FAILED":
        raise HarnessInputError(f"{what}: the {scenario} test at {qps:g} QPS failed: {'; '.join(o.reasons[:2])} "
                                f"(logs: {o.directory})")
    summary = Path(o.directory) / "mlperf_log_summary.txt"
    return o, n, summary.read_text(errors="replace") if summary.is_file() else "", seconds


def _searched(req: HarnessRequest, sources: dict[str, str]) -> HarnessRequest:
    """The targets an earlier _find-performance run searched into this results folder, for the
    scenarios given no target; said, and ignored (said) when searched for another model, round or
    number of endpoints."""
    found = Searched.load(req.results_dir)
    if found is None:
        return req
    here = (req.model, req.rnd.name, len(req.api_servers))
    if (found.model, found.round, found.endpoints) != here:
        print(f"{SEARCH_FILE} in {req.results_dir} was searched for {found.model} v{found.round} on "
              f"{found.endpoints} endpoint(s), not {here[0]} v{here[1]} on {here[2]}: not used "
              "(run _find-performance again)", flush=True)
        return req
    updates = {}
    for scenario, qps in found.targets().items():
        name = TARGET_INPUTS[scenario]
        if scenario in req.scenarios and getattr(req, name) is None:
            updates[name] = qps
            sources[scenario] = found.how(scenario)
            print(f"{scenario} target_qps {qps:g}: {sources[scenario]} ({SEARCH_FILE}); pass "
                  f"--{scenario.lower()}_target_qps to choose another", flush=True)
    return replace(req, **updates)


def _with_targets(req: HarnessRequest, targets: dict[str, float], source: str,
                  sources: dict[str, str]) -> HarnessRequest:
    """Fill the targets the user did not give; note where each came from."""
    updates = {}
    for scenario, value in targets.items():
        name = TARGET_INPUTS[scenario]
        if getattr(req, name) is None:
            updates[name] = value
            sources[scenario] = source
    return replace(req, **updates)


def _derive_from_offline(req: HarnessRequest, offline: list[RunOutcome], scenario: str,
                         sources: dict[str, str]) -> HarnessRequest:
    """Before a Server/Interactive test without a target: the target the fastest Offline test of
    this request implies (its whole batch is in flight, so it measures the server's throughput)."""
    rates = [o.offline_rate() for o in offline if o.verdict != "FAILED"]
    rates = [r for r in rates if r[0] > 0]
    if scenario not in FRACTIONS or req.target_for(scenario) is not None or not rates:
        return req
    rate, what = max(rates)
    t = pick_targets(rate)
    new = _with_targets(req, {scenario: t[scenario]},
                        f"derived from the {what} of this run ({rate:.3g} samples/s)", sources)
    print(f"{scenario} target_qps {t[scenario]:g}: {sources[scenario]}, x{FRACTIONS[scenario]}; "
          f"pass --{scenario.lower()}_target_qps to choose it", flush=True)
    return new


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


def _meet_latency_bounds(req: HarnessRequest, scenario: str, rows: int, outcome: RunOutcome,
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
        outcome = run_one(req, scenario, "performance", rows)
        tries += 1
    return req, outcome


class _Reach:
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
        if not self.probed:
            self.probed = True
            self.alone = _probe_alone(req)
        if self.alone is None:
            return
        limit = hostlimit.judge(req.model, scenario, self.alone, bounds)
        if limit is None:
            return
        self.limits[scenario] = limit
        old = req.target_for(scenario)
        if given:
            print(f"{scenario}: {limit.sentence()}; the given target {old:g} is kept and the test runs once "
                  "(its verdict will name this host limit)", flush=True)
            return
        low = max(hostlimit.lowest_load(_answer_s(outcomes)), lowest_test_target(req, rows))
        if old is None or not 0 < low < old:
            print(f"{scenario}: {limit.sentence()}; the performance test runs once, at {old:g} QPS, and is not "
                  "retried at lower loads (its verdict will name this host limit)", flush=True)
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
        target, low = req.target_for(scenario), hostlimit.lowest_load(_answer_s(outcomes))
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
        """What targets.json adds for the scenario: its host limit and the load its performance test ran at."""
        if scenario not in self.limits:
            return {}
        limit = self.limits[scenario].to_json()
        if scenario in self.lowest:
            limit["performance_target_qps"] = self.lowest[scenario]
        return {"host_limit": limit}


def _answer_s(outcomes: list[RunOutcome]) -> float:
    """An answer's mean time in the run's Offline performance test (0 without one)."""
    return max((float(o.summary.get("latency_mean_ns") or 0) / 1e9 for o in outcomes
                if o.scenario == "Offline" and o.mode == "performance"), default=0.0)


def _probe_alone(req: HarnessRequest) -> hostlimit.Alone | None:
    """One query alone on the request's first server (None, said, when the probe failed: the test
    that follows meets the same fault and names it)."""
    from .qsl import load_dataset
    try:
        prompt = hostlimit.longest_prompt(load_dataset(req.dataset_path, req.total_sample_count).tok_input)
        alone = hostlimit.probe(req.api_servers[0], req.api_model_name, prompt, req.token_ids_via)
    except hostlimit.ProbeError as e:
        print(f"latency reach not probed ({e}): a missed latency bound is retried at lower loads", flush=True)
        return None
    print(alone.line(), flush=True)
    return alone


def _start_sizing(req: HarnessRequest) -> sizing.Measured | None:
    """A sized run's start: an earlier run's measurement in the results folder is removed (this run
    measures the host again) unless this is the TEST06 run of the same command, which sizes from it;
    a run with no Offline performance test to measure with says that it is not sized."""
    if not req.sized_run:
        return None
    if "TEST06" in req.modes:
        try:
            return sizing.Measured.load(req.results_dir)
        except sizing.SizingError as e:
            raise HarnessInputError(str(e)) from None
    sizing.Measured.discard(req.results_dir)
    if "Offline" not in req.scenarios or "performance" not in req.modes:
        print("test run not sized to this host: it has no Offline performance test to measure the host "
              f"with; each test issues {req.test_query_count or 'the default number of'} queries", flush=True)
    return None


def _size_test(req: HarnessRequest, scenario: str, mode: str, rows: int,
               measured: sizing.Measured | None) -> tuple[HarnessRequest, sizing.Sized | None]:
    """A sized run's test: its request with the query count for this host, and that size; other runs'
    tests as asked (None). The first Offline performance test measures the host; TEST06's count is its
    audit.config's (the TEST06 step sizes it with sizing.size). A test whose size was given
    (--test_sizes: a replay) runs at that size, and nothing is sized."""
    given = req.test_sizes.get(testsizes.key(scenario, mode)) if req.execution_mode == "test" else None
    if given:
        return (replace(req, test_query_count=given),
                sizing.Sized(given, None, f"given by {testsizes.INPUT}: the size the recorded run ran it at"))
    if not req.sized_run:
        return req, None
    cap = test_queries(req.test_query_count, rows)
    if mode == "TEST06":
        from ..accuracy.test06_config import query_count_of
        n = query_count_of(req.audit_conf, scenario)
        if measured is None or n is None:
            return req, None
        return (replace(req, test_query_count=n),
                sizing.Sized(n, sizing.expected_seconds(scenario, n, req.target_for(scenario), measured),
                             "its audit.config's count"))
    if mode == "accuracy" and req.accuracy_sample_count is not None:
        return req, None
    if measured is None:
        if (scenario, mode) != ("Offline", "performance"):
            return req, None
        n = sizing.first_test(cap)
        return replace(req, test_query_count=n), sizing.Sized(n, None, "measures this host: the tests after "
                                                               "it are sized from its rate")
    sized = sizing.size(scenario, mode, req.target_for(scenario), cap, measured)
    return replace(req, test_query_count=sized.queries), sized


def _size_of(req: HarnessRequest, scenario: str, mode: str, rows: int) -> int:
    """The size a test ran at: an accuracy test's samples, TEST06's queries (its audit.config's),
    a performance test's queries."""
    if mode == "accuracy":
        return req.accuracy_rows(rows)
    if mode == "TEST06":
        from ..accuracy.test06_config import query_count_of
        return query_count_of(req.audit_conf, scenario) or test_queries(req.test_query_count, rows)
    return test_queries(req.test_query_count, rows)


def _measure(req: HarnessRequest, first: RunOutcome, queries: int, seconds: float) -> sizing.Measured:
    m = sizing.measured_from(first.summary, queries, seconds, first.directory)
    path = m.save(req.results_dir)
    print(f"test run sized to this host: {m.samples_per_second:.3g} samples/s, an answer takes "
          f"{m.tail_s:.1f} s on average; each later test ~{sizing.PER_TEST_S:.0f} s ({path}; --test_query_count=N "
          "for fixed sizes)", flush=True)
    return m


def run_all(req: HarnessRequest) -> list[RunOutcome]:
    """Run every (scenario, mode) test of the request; performance before accuracy."""
    req.validate()
    rows = _dataset_rows(req)
    sources = {s: "given" for s in TARGET_INPUTS if req.target_for(s) is not None}
    offline_qps = None
    if req.find_performance:
        targets, how = find_performance(req, rows)
        offline_qps = targets["Offline"]
        for scenario, value in targets.items():
            req = _with_targets(req, {scenario: value}, how[scenario], sources)
    else:
        req = _searched(req, sources)
    if req.sweep:
        run_sweep(req, rows, offline_qps)
    outcomes: list[RunOutcome] = []
    measured = _start_sizing(req)
    reach = _Reach()
    ran: dict[str, int] = {}         # each test's size (testsizes.py)
    for scenario in req.scenarios:
        req = _derive_from_offline(req, [o for o in outcomes if o.scenario == "Offline"], scenario, sources)
        reach.judge(req, scenario, outcomes, rows, given=sources.get(scenario) == "given")
        for mode in req.modes:
            treq, sized = _size_test(reach.for_test(req, scenario, mode), scenario, mode, rows, measured)
            if mode == "accuracy" and treq.accuracy_rows(rows) < rows:
                n = treq.accuracy_rows(rows)
                print(f"{scenario} accuracy: the first {n} of {rows} samples (test mode; "
                      "--accuracy_sample_count=all for every sample)", flush=True)
                outcomes.append(run_one(replace(treq, total_sample_count=n), scenario, mode, n, sized=sized))
            elif mode == "performance":
                t0 = time.monotonic()
                first = run_one(treq, scenario, mode, rows, sized=sized)
                if req.sized_run and sized is not None and measured is None and first.verdict != "FAILED":
                    measured = _measure(req, first, treq.test_query_count or 0, time.monotonic() - t0)
                treq, outcome = ((treq, first) if scenario in reach.limits
                                 else _meet_latency_bounds(treq, scenario, rows, first, sources,
                                                           hostlimit.lowest_load(_answer_s(outcomes))))
                reach.after_retries(treq, scenario, outcome, outcomes, given=sources.get(scenario) == "given")
                if scenario not in reach.lowest and treq.target_for(scenario) != req.target_for(scenario):
                    # lowered to meet the bounds
                    req = replace(req, **{TARGET_INPUTS[scenario]: treq.target_for(scenario)})
                outcomes.append(outcome)
            else:
                outcomes.append(run_one(treq, scenario, mode, rows, sized=sized))
            ran[testsizes.key(scenario, mode)] = _size_of(treq, scenario, mode, rows)
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
