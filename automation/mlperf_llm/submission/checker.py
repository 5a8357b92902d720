"""Run the official submission checker of a round on a tree, and sort what it says.

The checker is the round's (mlperf_llm.rounds: `checker`, `src_ref`): up to v5.1 the script
tools/submission/submission_checker.py (stdlib only), run from the inference source as a subprocess;
from v6.0 the package tools/submission/submission_checker (PyYAML), run as
`python3 -m submission_checker.main` from a copy of tools/submission in the work folder (it may
write beside itself; the source stays untouched). Its ERROR lines are sorted into:
- checks that only a full-length run can pass (named in FULL_LENGTH_CHECKS): in a `test`-mode run these
  are expected, and listed by name; among them a length metric that is a sum over the data set
  (llama3.1-8b's GEN_LEN, the benchmark table's length_rule "sum") missed by an accuracy run that scored
  fewer rows, when its value is within the range scaled to the rows scored (outside it: an error);
- a missed accuracy target (the checkers log it as a WARNING): an error in the closed division;
- consequences of other lines ("... has issues", "NoResults ...", the SUMMARY line), explained by them;
- a latency bound the harness found out of this host's reach at any load (harness/hostlimit.py;
  the step hands them in as HostBound): the checker's TTFT/TPOT line and LoadGen's INVALID for that
  scenario are that host limit, named apart from other failures (verdict FAIL-HOST-LIMIT);
- everything else: real errors, which fail the step in any mode.
Beside it, our pre-check (precheck.py) reports what the checker misses; its findings fail the step too.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

from ..benchmarks import BENCHMARKS, BenchmarkError, get_benchmark
from ..outcomes import CheckerVerdict
from .errors import SubmissionError
from .logs import read_detail_log
from .precheck import precheck
from ..rounds import NEWEST, Round, RoundError, get_round
from .spec import MIN_DURATION_MS

_ROWS = ", ".join(f"{b.name} {b.dataset_rows}" for b in BENCHMARKS.values())     # the benchmark table's
# the rows a performance run loads (gpt-oss-120b's performance set is not its accuracy set)
_PERF_ROWS = ", ".join(f"{b.name} {b.performance_sample_count}" for b in BENCHMARKS.values())
_SUMS = ", ".join(sorted({f"{b.accuracy.length_metric} of {b.family}" for b in BENCHMARKS.values()
                          if b.accuracy.length_rule == "sum"}))
FULL_LENGTH_CHECKS = (   # (name, what the checker says, what a full-length run does)
    ("min_duration", "Test duration less than 600s", "runs at least 600 s (min_duration=600000)"),
    ("min_query_count", "Required minimum Query Count not met", "issues the round's minimum query count"),
    ("offline_samples_per_query", "Required minimum samples per query not met",
     f"issues every row of the performance data set in its Offline query ({_PERF_ROWS})"),
    ("performance_sample_count", "performance_sample_count, found",
     f"uses every row of the performance data set ({_PERF_ROWS})"),
    ("accuracy_covers_dataset", "does not cover all dataset", f"scores every row of the data set ({_ROWS})"),
    ("length_sum", "accuracy not met", f"scores every row: its length metric ({_SUMS}) is a sum over the whole "
                                       "data set, which a test run's fewer rows stay below though they are in the "
                                       "range scaled to them"),
    ("early_stopping", "Early stopping condition was not met", "runs enough queries for early stopping"),
    ("equal_issue", "requires equal issue mode", "issues in equal-issue mode (test mode turns it off so that "
                                                 "test_query_count queries are issued, not a multiple of the data set)"),
)
LINE = re.compile(r"^(?:\[[^\]]* (?P<l1>ERROR|WARNING|INFO)\] |(?P<l2>ERROR|WARNING|INFO):\w+:)(?P<msg>.*)$")


@dataclass
class Finding:
    level: str             # ERROR | WARNING
    message: str
    kind: str              # full_length | host_limit | consequence | error | warning
    check: str = ""        # the named check, for full_length ones; the scenario, for host_limit ones


@dataclass(frozen=True)
class HostBound:
    """A scenario's latency bounds that the harness found out of this host's reach, and its sentence."""
    scenario: str
    ttft_ms: float
    tpot_ms: float
    sentence: str


EXTRA_CHECK = re.compile(r"^Failed extra check for TTFT and TPOT\..*Required: TTFT 99-tile: (?P<ttft>[\d.]+), "
                         r"TPOT 99-tile: (?P<tpot>[\d.]+)")


@dataclass
class CheckerReport:
    command: list
    returncode: int
    mode: str
    output: str
    findings: list = field(default_factory=list)
    precheck: list = field(default_factory=list)     # precheck.PreFinding: what the checker misses
    host_bounds: tuple = ()                          # HostBound: what the harness found out of reach

    @property
    def errors(self) -> list:
        return [f for f in self.findings if f.kind == "error"]

    @property
    def host_limits(self) -> list:
        """The sentence of each host limit the checker's findings show, once per scenario."""
        hit = {f.check for f in self.findings if f.kind == "host_limit"}
        return [b.sentence for b in self.host_bounds if b.scenario in hit]

    @property
    def full_length_checks(self) -> list:
        return sorted({f.check for f in self.findings if f.kind == "full_length"})

    @property
    def passed(self) -> bool:
        """The checker is clean, or (test mode) only full-length checks failed; and our pre-check is clean."""
        if self.precheck or self.host_limits:
            return False
        if self.returncode == 0:
            return True
        return self.mode == "test" and not self.errors and bool(self.full_length_checks)

    @property
    def only_host_limited(self) -> bool:
        """Failed on this host's latency limit and nothing else (full-length checks aside in test mode)."""
        return (bool(self.host_limits) and not self.errors and not self.precheck
                and (self.mode == "test" or not self.full_length_checks))

    @property
    def checker_verdict(self) -> str:
        if self.only_host_limited:
            rest = ("PASS except the full-length checks above (test mode)"
                    if self.full_length_checks else "PASS")
            return f"FAIL on this host's speed alone ({'; '.join(self.host_limits)}); every other check: {rest}"
        return ("PASS" if self.returncode == 0 else "PASS except the full-length checks above (test mode)"
                if self.mode == "test" and not self.errors and self.full_length_checks else "FAIL")

    def summary_lines(self) -> list:
        keep = ("Results=", "Closed Results=", "Open Results=", "SUMMARY:")
        return [m.group("msg").strip() for m in map(LINE.match, self.output.splitlines())
                if m and m.group("msg").strip().startswith(keep)]


def find_checker(inference_src: str | None, rnd: Round | None = None) -> str:
    """The round's checker in the inference source: the script (v4.1 .. v5.1) or the package folder
    tools/submission/submission_checker (v6.0 on)."""
    rnd = rnd or NEWEST
    src = inference_src or os.environ.get("CM_MLPERF_INFERENCE_SOURCE")
    if not src:
        raise SubmissionError("inference source", "is not given",
                              f"pass --src_path=DIR (mlcommons/inference at {rnd.src_ref[:12]}, the checker of "
                              f"{rnd.version}) or set CM_MLPERF_INFERENCE_SOURCE, or run get-mlperf-inference-src")
    rel = ("tools/submission/submission_checker/main.py" if rnd.checker == "package"
           else "tools/submission/submission_checker.py")
    path = os.path.join(src, *rel.split("/"))
    if not os.path.isfile(path):
        raise SubmissionError(f"inference source {src}", f"has no {rel} (the checker of {rnd.version})",
                              f"point at a checkout of mlcommons/inference at {rnd.src_ref[:12]}")
    return os.path.dirname(path) if rnd.checker == "package" else path


def detect_mode(tree: str) -> str:
    """`test` when any performance run in the tree asked for less than 600 s, else `valid`."""
    for dirpath, _, files in os.walk(tree):
        if dirpath.endswith(os.path.join("performance", "run_1")) and "mlperf_log_detail.txt" in files:
            log = read_detail_log(os.path.join(dirpath, "mlperf_log_detail.txt"))
            if int(log.get("effective_min_duration_ms", MIN_DURATION_MS)) < MIN_DURATION_MS:
                return "test"
    return "valid"


def _perf_has_issues(tree: str, rel_path: str) -> Finding | None:
    """A "<perf dir> has issues" line: LoadGen INVALID for a reason no other line names?"""
    log_path = os.path.join(tree, rel_path, "mlperf_log_detail.txt")
    if not os.path.isfile(log_path):
        return None
    log = read_detail_log(log_path)
    failed = log.failed_conditions()
    if "performance constraints" in failed:
        return Finding("ERROR", f"{rel_path}: LoadGen result INVALID: performance constraints not met "
                       "(latency targets missed at this QPS)", "error")
    if failed:
        return Finding("ERROR", f"{rel_path}: LoadGen result INVALID ({', '.join(failed)} not met)",
                       "full_length", "result_valid")
    return None


def _scenario_folders(tree: str, model_path: str) -> set:
    full = os.path.join(tree, model_path)
    return set(os.listdir(full)) if os.path.isdir(full) else set()


GROUP_FAILED = re.compile(r"^Some \w+ checks Checks failed for: ")     # master's summary of a file's checks
NOT_MET = re.compile(r"^(?P<path>\S+) accuracy not met: (?:expected|upper limit)=(?P<bound>[\d.]+), "
                     r"found=(?P<found>[\d.]+)")
ACC_NOT_VALID = re.compile(r"^(?P<path>\S+), accuracy not valid$")   # v5.1.1: the verdict on an accuracy folder


def _length_sum_short(path: str, bound: float, found: float, mode: str) -> str | None:
    """When the metric missed is a sum-rule length metric (GEN_LEN) of an accuracy run that scored
    fewer rows than the data set: "" when the value is within [low, high] x reference x rows scored /
    rows (the accuracy step's own scaled target) in test mode, a full-length-only miss; else the note
    that says the scaled range it is outside. None for any other metric or benchmark, or a run of
    every row."""
    acc_dir = path if os.path.isdir(path) else os.path.dirname(path)
    try:
        bench = get_benchmark(os.path.basename(os.path.dirname(os.path.dirname(acc_dir))))
    except BenchmarkError:
        return None
    spec = bench.accuracy
    low, high = (spec.length_reference * f for f in spec.length_range)
    detail = os.path.join(acc_dir, "mlperf_log_detail.txt")
    if spec.length_rule != "sum" or not any(math.isclose(bound, b, rel_tol=1e-9) for b in (low, high)) \
            or not os.path.isfile(detail):
        return None
    rows = int(read_detail_log(detail).get("qsl_reported_total_count", bench.dataset_rows))
    if rows >= bench.dataset_rows:
        return None
    share = rows / bench.dataset_rows
    if low * share <= found <= high * share and mode == "test":
        return ""
    return (f" ({spec.length_metric} is a sum over the data set: {found:g} for {rows} of "
            f"{bench.dataset_rows} rows, against {low * share:g}..{high * share:g} scaled to them)")


def _accuracy_not_met(msg: str, tree: str, mode: str) -> Finding | None:
    """The checkers log a missed accuracy target as a WARNING (v5.1.1 adds an "accuracy not valid"
    ERROR; master only its per-file summary, which a full-length line beside it would explain). Here:
    a sum-rule length metric short of the rows scored is full-length only (_length_sum_short); any
    other miss, a sum-rule one outside its scaled range included (said so), is an error in the closed
    division and stays a warning in the open one (which takes any accuracy: an embedded run is judged
    by its own targets in the accuracy step). None for other lines. The script checkers name the
    accuracy folder relative to the tree, the package the detail log's absolute path."""
    m = NOT_MET.match(msg)
    if not m:
        return None
    path = os.path.join(tree, m.group("path"))
    note = _length_sum_short(path, float(m.group("bound")), float(m.group("found")), mode)
    if note == "":
        return Finding("WARNING", msg, "full_length", "length_sum")
    if os.path.relpath(path, tree).split(os.sep)[0] == "closed":
        return Finding("ERROR", msg + (note or " (closed division: the accuracy target is missed)"), "error")
    return Finding("WARNING", msg + (note or ""), "warning")


def _scenario_of(rel_path: str) -> str:
    """The scenario folder of a results path (.../<model>/<Scenario>/performance/run_1)."""
    parts = rel_path.replace(os.sep, "/").split("/")
    return parts[parts.index("performance") - 1] if "performance" in parts[1:] else ""


def _host_bound_of(msg: str, bounds: tuple) -> HostBound | None:
    """The out-of-reach bounds a "Failed extra check for TTFT and TPOT" line names (by the bounds it
    requires: the line names no folder), or None."""
    m = EXTRA_CHECK.match(msg)
    if not m:
        return None
    ttft, tpot = float(m.group("ttft")), float(m.group("tpot"))
    return next((b for b in bounds if math.isclose(ttft, b.ttft_ms * 1e6, rel_tol=1e-6)
                 and math.isclose(tpot, b.tpot_ms * 1e6, rel_tol=1e-6)), None)


def classify(output: str, tree: str, mode: str, host_bounds: tuple = ()) -> list:
    findings = []
    block = 0             # findings since the last "Some ... checks Checks failed for" line (master)
    for line in output.splitlines():
        m = LINE.match(line)
        if not m or (m.group("l1") or m.group("l2")) == "INFO":
            continue
        level, msg = m.group("l1") or m.group("l2"), m.group("msg").strip()
        missed = _accuracy_not_met(msg, tree, mode)
        if missed:
            findings.append(missed)
            block += missed.kind != "warning"
            continue
        if level == "WARNING":
            findings.append(Finding(level, msg, "warning"))
            continue
        named = next((name for name, text, _ in FULL_LENGTH_CHECKS if text in msg), None)
        if GROUP_FAILED.match(msg):     # the checks of one file failed: explained by the lines before it
            findings.append(Finding(level, msg, "consequence" if block else "error"))
            block = 0
            continue
        block += 1
        bound = _host_bound_of(msg, host_bounds)
        if bound is not None:
            findings.append(Finding(level, msg, "host_limit", bound.scenario))
        elif named:
            findings.append(Finding(level, msg, "full_length" if mode == "test" else "error", named))
        elif msg.startswith("NoResults ") or msg.startswith("SUMMARY:"):
            findings.append(Finding(level, msg, "consequence"))
        elif ACC_NOT_VALID.match(msg):    # explained by an error or length_sum line on the same folder
            path = ACC_NOT_VALID.match(msg).group("path")
            explained = any((f.kind == "error" or f.check == "length_sum") and f.message.startswith(path + " ")
                            for f in findings)     # what makes it invalid: not the data set coverage
            findings.append(Finding(level, msg, "consequence" if explained else "error"))
        elif msg.endswith(" has issues") and "/performance/" in msg:
            findings.append(Finding(level, msg, "consequence"))
            rel = msg[:-len(" has issues")].strip()
            extra = _perf_has_issues(tree, rel)
            if extra:
                if extra.kind == "full_length" and mode != "test":
                    extra.kind = "error"
                if "performance constraints" in extra.message and _scenario_of(rel) in {b.scenario for b in host_bounds}:
                    extra.kind, extra.check = "host_limit", _scenario_of(rel)
                findings.append(extra)
        elif "does not have all required scenarios" in msg:
            present = _scenario_folders(tree, msg.split(" does not have")[0].strip())
            if "missing" in msg:
                absent = [s for s in re.findall(r"'(\w+)'", msg) if s not in present]
            else:                       # "one of [Server, Interactive] is required"
                absent = [] if present & {"Server", "Interactive"} else ["Server or Interactive"]
            findings.append(Finding(level, msg, "error" if absent else "consequence"))
        else:
            findings.append(Finding(level, msg, "error"))
    return findings


def run_checker(tree: str, version: str, submitter: str | None = None, inference_src: str | None = None,
                workdir: str | None = None, mode: str | None = None, extra_args: tuple = (),
                timeout: int = 900, host_bounds: tuple = ()) -> CheckerReport:
    try:
        spec = get_round(version)
    except RoundError as e:
        raise SubmissionError(f"round {version!r}", str(e), "pass --version=6.1 (or another round)") from None
    tree = os.path.abspath(tree)
    if not os.path.isdir(tree):
        raise SubmissionError(f"submission tree {tree}", "does not exist", "build it with generate-mlperf-inference-submission")
    found = find_checker(inference_src, spec)
    workdir = os.path.abspath(workdir or os.path.dirname(tree))
    os.makedirs(workdir, exist_ok=True)
    cwd = workdir
    if spec.checker == "package":       # python -m from a copy of tools/submission
        cwd = os.path.join(workdir, "checker-src")
        shutil.rmtree(cwd, ignore_errors=True)
        shutil.copytree(os.path.dirname(found), cwd, ignore=shutil.ignore_patterns("__pycache__", "tests"))
        cmd = [sys.executable, "-m", "submission_checker.main"]
    else:
        cmd = [sys.executable, found]
    cmd += ["--input", tree, "--version", spec.version, "--csv", os.path.join(workdir, "summary.csv")]
    if submitter:
        cmd += ["--submitter", submitter]
    cmd += list(extra_args)
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SubmissionError(f"submission checker on {tree}", f"did not finish in {timeout} s",
                              "look for a very large file in the tree, or run the checker by hand") from None
    output = proc.stdout + proc.stderr
    mode = mode or detect_mode(tree)
    return CheckerReport(cmd, proc.returncode, mode, output, classify(output, tree, mode, host_bounds),
                         precheck(tree, spec), host_bounds)


def format_report(report: CheckerReport) -> str:
    lines = ["Official submission checker: " + " ".join(report.command[1:]), ""]
    lines += ["  " + s for s in report.summary_lines()]
    if report.full_length_checks:
        explain = {name: does for name, _, does in FULL_LENGTH_CHECKS}
        explain["result_valid"] = "gets a VALID LoadGen result"
        lines += ["", f"Checks only a full-length run can pass ({report.mode} mode), by name:"]
        lines += [f"  - {name}: passes when the run {explain[name]}" for name in report.full_length_checks]
    if report.host_limits:
        lines += ["", "This host's limit (the harness timed one query alone before the test):"]
        lines += [f"  - {h}" for h in report.host_limits]
        lines += [f"  - {f.message}" for f in report.findings if f.kind == "host_limit"]
    if report.errors:
        lines += ["", "Errors:"] + [f"  - {f.message}" for f in report.errors]
    warnings = [f for f in report.findings if f.kind == "warning"]
    if warnings:
        lines += ["", "Warnings:"] + [f"  - {f.message}" for f in warnings]
    lines += ["", "Our pre-check (what the checker misses: Interactive p99 limits, the round's benchmarks, "
                  "closed scenarios of the benchmark's category):"]
    lines += [f"  - {f.path}: {f.message}" for f in report.precheck] or ["  clean"]
    lines += ["", f"Verdict: {report.checker_verdict}" + ("" if not report.precheck else
                                                          f"; pre-check: {len(report.precheck)} problem(s) (FAIL)")]
    return "\n".join(lines)


def checker_verdict(report: CheckerReport, log: str) -> CheckerVerdict:
    """The typed verdict for `state` (mlperf_llm.outcomes)."""
    version = report.command[report.command.index("--version") + 1] if "--version" in report.command else ""
    errors = [f.message for f in report.errors] + [f"pre-check: {f.path}: {f.message}" for f in report.precheck]
    return CheckerVerdict(
        round=version, mode=report.mode, log=log,
        verdict=("FAIL-HOST-LIMIT" if report.only_host_limited else "FAIL" if not report.passed
                 else "PASS" if report.returncode == 0 else "PASS-TEST-MODE"),
        host_limits=tuple(report.host_limits),
        error_count=len(errors), first_errors=tuple(errors[:CheckerVerdict.FIRST_ERRORS]),
        full_length_checks=tuple(report.full_length_checks),
        warnings=tuple(f.message for f in report.findings if f.kind == "warning"))
