"""A submission to replay: a folder or its tarball, its record, and the results it reports.

The results are read from the submission's own files (mlperf_log_summary.txt/mlperf_log_detail.txt
of each performance run, accuracy.txt of each accuracy run), so a tarball from anywhere can be
compared, whichever layout its round uses:
    <division>/<submitter>/results/<system>/<model>/<Scenario>/performance/run_1/   (every round)
    <division>/<submitter>/results/<system>/<model>/<Scenario>/accuracy/accuracy.txt
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..benchmarks import DIVISIONS, scenario_of_folder
from ..submission.logs import read_accuracy_txt, read_detail_log
from ..untrusted import Limits, UntrustedError, check_folder, unpack
from . import record as recmod
from .record import RECORD_NAME, Record, RecordError

PERCENTILES = ("p50", "p90", "p99")
# detail-log key -> (metric name, scale to the unit shown)
LATENCY_KEYS = {
    "result_first_token_50.00_percentile_latency_ns": ("TTFT p50 (ms)", 1e-6),
    "result_first_token_90.00_percentile_latency_ns": ("TTFT p90 (ms)", 1e-6),
    "result_first_token_99.00_percentile_latency_ns": ("TTFT p99 (ms)", 1e-6),
    "result_time_per_output_token_50.00_percentile_ns": ("TPOT p50 (ms)", 1e-6),
    "result_time_per_output_token_90.00_percentile_ns": ("TPOT p90 (ms)", 1e-6),
    "result_time_per_output_token_99.00_percentile_ns": ("TPOT p99 (ms)", 1e-6),
    "result_50.00_percentile_latency_ns": ("latency p50 (ms)", 1e-6),
    "result_90.00_percentile_latency_ns": ("latency p90 (ms)", 1e-6),
    "result_99.00_percentile_latency_ns": ("latency p99 (ms)", 1e-6),
}
THROUGHPUT_KEYS = ("result_tokens_per_second", "result_completed_tokens_per_second",
                   "result_samples_per_second", "result_completed_samples_per_second")


class SourceError(Exception):
    """The path is not a submission we can read: what, why, and what to do."""


@dataclass
class Measured:
    system: str
    model: str
    scenario: str
    mode: str                          # performance | accuracy
    metrics: dict = field(default_factory=dict)     # name -> float
    valid: bool | None = None          # LoadGen's verdict (performance)

    @property
    def test(self) -> tuple:
        return (self.model, self.scenario, self.mode)


@dataclass
class Submission:
    path: str                  # what the user gave
    root: str                  # the folder holding closed/ or open/
    records: list = field(default_factory=list)    # paths of the records found
    results: list = field(default_factory=list)    # Measured
    systems: dict = field(default_factory=dict)    # system name -> systems/<name>.json


def open_submission(path: str, work_dir: str, limits: Limits = Limits()) -> Submission:
    """A folder, a .tar.gz/.tgz/.tar (unpacked into `work_dir`/submission) or the address of a folder
    of a results repository (fetched sparsely into `work_dir`/fetched, published/fetch.py); each
    bounded by `limits` and refused with a link out of it (mlperf_llm.untrusted)."""
    from ..published.fetch import FetchError, fetch, is_url
    if is_url(path):
        try:
            root = fetch(path, os.path.join(work_dir, "fetched"))
        except FetchError as e:
            raise SourceError(str(e)) from None
        _check(root, path, limits)
    else:
        path = os.path.abspath(os.path.expanduser(path))
        if not os.path.exists(path):
            raise SourceError(f"--from={path}: no such file or folder. Give a submission folder (the one "
                              "holding open/ or closed/), its tarball (mlperf_submission_<submitter>.tar.gz) "
                              "or the address of a results repository's folder")
        if os.path.isfile(path):
            root = os.path.join(work_dir, "submission")
            _unpack(path, root, limits)
        else:
            root = path
            _check(root, path, limits)
    root = _find_root(root, path)
    sub = Submission(path=path, root=root, records=recmod.find(root))
    sub.results = read_results(root)
    sub.systems = read_systems(root)
    return sub


def _unpack(tarball: str, dest: str, limits: Limits) -> None:
    try:
        unpack(tarball, dest, limits)
    except UntrustedError as e:
        raise SourceError(f"--from={tarball}: {e}. Give a submission folder or the .tar.gz the submission "
                          "step wrote") from None


def _check(folder: str, given: str, limits: Limits) -> None:
    try:
        check_folder(folder, limits)
    except UntrustedError as e:
        raise SourceError(f"--from={given}: {e}") from None


def _find_root(folder: str, given: str) -> str:
    """The folder that holds closed/, open/ or network/ (the tree itself or one level below)."""
    for cand in [folder] + sorted(os.path.join(folder, d) for d in os.listdir(folder)
                                  if os.path.isdir(os.path.join(folder, d))):
        if any(os.path.isdir(os.path.join(cand, d)) for d in DIVISIONS):
            return cand
    raise SourceError(f"--from={given}: not an MLPerf submission (no closed/, open/ or network/ folder "
                      "in it). Give the submission folder or its tarball")


def _submitter_dirs(root: str) -> list[str]:
    out = []
    for div in DIVISIONS:
        d = os.path.join(root, div)
        if os.path.isdir(d):
            out += [os.path.join(d, s) for s in sorted(os.listdir(d)) if os.path.isdir(os.path.join(d, s))]
    return out


def read_systems(root: str) -> dict:
    import json
    out = {}
    for sub in _submitter_dirs(root):
        sysdir = os.path.join(sub, "systems")
        for name in sorted(os.listdir(sysdir)) if os.path.isdir(sysdir) else []:
            if name.endswith(".json"):
                try:
                    with open(os.path.join(sysdir, name), encoding="utf-8") as f:
                        out[name[:-5]] = json.load(f)
                except (OSError, ValueError):
                    out[name[:-5]] = {}
    return out


def performance_metrics(detail_path: str) -> tuple[dict, bool | None]:
    log = read_detail_log(detail_path)
    metrics = {}
    for key in THROUGHPUT_KEYS:
        v = log.get(key)
        if isinstance(v, (int, float)) and v:
            metrics[key[len("result_"):]] = float(v)
    for key, (name, scale) in LATENCY_KEYS.items():
        v = log.get(key)
        if isinstance(v, (int, float)):
            metrics[name] = float(v) * scale
    return metrics, log.valid


def read_results(root: str) -> list[Measured]:
    """Every test the submission reports, from its logs (an unreadable accuracy.txt: no values)."""
    out = []
    for sub in _submitter_dirs(root):
        res = os.path.join(sub, "results")
        if not os.path.isdir(res):
            continue
        for system in sorted(os.listdir(res)):
            if os.path.isdir(os.path.join(res, system)):
                out += measured_tests(os.path.join(res, system), system, tolerant=True)
    return out


def measured_tests(folder: str, system: str = "", tolerant: bool = False) -> list[Measured]:
    """The tests of a folder laid out <model>/<Scenario>/performance/run_1 and .../accuracy (a
    submission's results/<system>/ or a harness results folder), from their logs; with `tolerant`,
    an accuracy.txt that cannot be read gives a test with no values instead of an error."""
    out = []
    if not os.path.isdir(folder):
        return out
    for model in sorted(os.listdir(folder)):
        mdir = os.path.join(folder, model)
        if not os.path.isdir(mdir):
            continue
        for folder_name in sorted(os.listdir(mdir)):
            scdir = os.path.join(mdir, folder_name)
            scenario = scenario_of_folder(folder_name)      # one name, so that tests pair up
            detail = os.path.join(scdir, "performance", "run_1", "mlperf_log_detail.txt")
            if os.path.isfile(detail):
                metrics, valid = performance_metrics(detail)
                out.append(Measured(system, model, scenario, "performance", metrics, valid))
            acc = os.path.join(scdir, "accuracy", "accuracy.txt")
            if os.path.isfile(acc):
                try:
                    values = read_accuracy_txt(acc).values
                except Exception:
                    if not tolerant:
                        raise
                    values = {}
                out.append(Measured(system, model, scenario, "accuracy", dict(values)))
    return out


def the_record(sub: Submission) -> tuple[Record, list[str]]:
    """The submission's record and notes (copies that differ from the first), or a RecordError that
    says what is missing."""
    if not sub.records:
        tests = ", ".join(sorted({f"{r.model}/{r.scenario}" for r in sub.results})) or "no tests"
        raise RecordError(
            sub.path, f"holds no reproduction record ({RECORD_NAME} in measurements/<system>/<model>/"
            f"<Scenario>/, or results/... from v6.0; it reports {tests}). It was made by an older "
            "cm4mlperf-llm or another tool, so the exact inputs (project revision, model and data set "
            "hashes, server flags, targets) are not known",
            "Add --dry-run to see its tests, how they were made and what this machine lacks, read from "
            "its files; replay by hand with the command in its measurement README.md, or ask its "
            "submitter for a submission made with a current cm4mlperf-llm")
    first = recmod.read(sub.records[0])
    notes = []
    for other in sub.records[1:]:
        if recmod.read(other) != first:
            notes.append(f"{os.path.relpath(other, sub.root)} differs from "
                         f"{os.path.relpath(sub.records[0], sub.root)} (the first is used): the "
                         "copies of one run's record should be equal, so one was edited")
    return first, notes
