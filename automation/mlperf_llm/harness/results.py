"""The results layout the submission step reads, and what a finished test's logs say.

<results>/<model>/<Scenario>/performance/run_1/   LoadGen logs of the performance test
<results>/<model>/<Scenario>/accuracy/            LoadGen logs of the accuracy test
<results>/<model>/<Scenario>/TEST06/              a compliance test's raw logs (TEST07/, TEST09/ likewise)
A test runs in `<final>.partial-<pid>`; it is renamed to `<final>` only when it succeeded,
otherwise, interrupted too, to `<final>.failed-<time>` (logs kept, never mistaken for a result).
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..files import write_json_atomic
from ..submission.spec import RESULT_KEYS

STATUS_FILE = "harness_status.json"


def layout_dir(results_dir: str | Path, model_dir: str, scenario_dir: str, mode: str) -> Path:
    base = Path(results_dir) / model_dir / scenario_dir
    if mode == "performance":
        return base / "performance" / "run_1"
    if mode == "accuracy":
        return base / "accuracy"
    if mode in ("TEST06", "TEST07", "TEST09"):
        return base / mode
    raise ValueError(f"mode {mode!r}: choose performance, accuracy, TEST06, TEST07 or TEST09")


SET_ASIDE = (".partial-", ".failed-", ".prev-")     # a test's folder while it runs, failed, or replaced


def set_aside(name: str) -> bool:
    """True for a test folder that is not a result: running, failed, or a previous result kept."""
    return any(mark in name for mark in SET_ASIDE)


def staging_dir(final: Path) -> Path:
    return final.with_name(f"{final.name}{SET_ASIDE[0]}{os.getpid()}")


def begin(final: Path) -> Path:
    """A new staging folder for the test `final`. A `.partial-<pid>` beside it whose process is gone
    (killed outright, a machine lost) is set aside as a failed test first: never left named as running."""
    for old in final.parent.glob(f"{final.name}{SET_ASIDE[0]}*") if final.parent.is_dir() else ():
        pid = old.name.rsplit("-", 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            finalize(old, final, ok=False)
    stage = staging_dir(final)
    stage.mkdir(parents=True, exist_ok=False)
    return stage


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def finalize(staging: Path, final: Path, ok: bool) -> Path:
    """Move a finished test's directory into place; a previous result is kept beside it. A failed or
    interrupted one goes to `<final>.failed-<time>` (a second in the same second gets -2, -3, ...)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    if not ok:
        dest, n = final.with_name(f"{final.name}{SET_ASIDE[1]}{stamp}"), 1
        while dest.exists():
            n += 1
            dest = final.with_name(f"{final.name}{SET_ASIDE[1]}{stamp}-{n}")
        os.replace(staging, dest)
        return dest
    if final.exists():
        os.replace(final, final.with_name(f"{final.name}{SET_ASIDE[2]}{stamp}"))
    os.replace(staging, final)
    return final


TIMINGS_FILE = "query_timings.json"    # per answered query: issued, first token, completed, tokens (run.py)

@dataclass
class Summary:
    scenario: str = ""
    mode: str = ""
    result: str = ""                    # VALID | INVALID | "" (no summary)
    samples_per_second: float | None = None
    tokens_per_second: float | None = None
    ttft_p99_ns: float | None = None
    tpot_p99_ns: float | None = None
    latency_p90_ns: float | None = None  # a sample's whole latency: SingleStream's result
    latency_mean_ns: float | None = None  # an answer's mean latency: an Offline test's sizes a test run (sizing.py)
    ttft_p90_ns: float | None = None    # SingleStream's token latencies at its percentile
    tpot_p90_ns: float | None = None
    qsl_rng_seed: int | None = None
    latency_met: bool | None = None     # "Performance constraints satisfied" (Server/Interactive)
    errors: list[str] = field(default_factory=list)
    # from mlperf_log_detail.txt: why LoadGen said INVALID, and what it judged by
    invalid_reasons: list[str] = field(default_factory=list)
    queries: int | None = None          # result_query_count
    target_qps: float | None = None     # effective_target_qps
    target_latency_ns: float | None = None  # SingleStream's target_latency (LoadGen: target_qps = 1 s / it)
    ttft_limit_ns: float | None = None  # requested_server_ttft_latency (Server, Interactive)
    tpot_limit_ns: float | None = None
    # the metric the checker reports for the scenario (submission.spec.RESULT_KEYS), in its unit
    metric: float | None = None
    metric_unit: str = ""               # as screens write it: tokens/s | ms (p90 latency)

    def to_dict(self) -> dict:
        return asdict(self)


_NUM = r"([0-9.eE+-]+)"
_SUMMARY_RX = {
    "scenario": re.compile(r"^Scenario\s*:\s*(\S+)", re.M),
    "mode": re.compile(r"^Mode\s*:\s*(\S+)", re.M),
    "result": re.compile(r"^Result is\s*:\s*(\S+)", re.M),
    "samples_per_second": re.compile(r"^(?:Completed samples per second|Samples per second)\s*:\s*" + _NUM, re.M),
    "tokens_per_second": re.compile(r"^(?:Completed tokens per second|Tokens per second)\s*:\s*" + _NUM, re.M),
    "ttft_p99_ns": re.compile(r"^99\.00 percentile first token latency \(ns\)\s*:\s*" + _NUM, re.M),
    "tpot_p99_ns": re.compile(r"^99\.00 percentile time to output token \(ns\)\s*:\s*" + _NUM, re.M),
    "latency_p90_ns": re.compile(r"^90\.00 percentile latency \(ns\)\s*:\s*" + _NUM, re.M),
    "latency_mean_ns": re.compile(r"^Mean latency \(ns\)\s*:\s*" + _NUM, re.M),
    "ttft_p90_ns": re.compile(r"^90\.00 percentile first token latency \(ns\)\s*:\s*" + _NUM, re.M),
    "tpot_p90_ns": re.compile(r"^90\.00 percentile time to output token \(ns\)\s*:\s*" + _NUM, re.M),
    "qsl_rng_seed": re.compile(r"^qsl_rng_seed\s*:\s*(\d+)", re.M),
    "latency_met": re.compile(r"^\s*Performance constraints satisfied\s*:\s*(\S+)", re.M),
}


def parse_summary(text: str) -> Summary:
    s = Summary()
    for key, rx in _SUMMARY_RX.items():
        m = rx.search(text)
        if not m:
            continue
        v = m.group(1)
        if key == "latency_met":
            s.latency_met = v.lower() == "yes"
        else:
            setattr(s, key, int(v) if key == "qsl_rng_seed" else float(v) if key not in ("scenario", "mode", "result") else v)
    return s


def detail_errors(text: str) -> list[str]:
    """The `error` entries LoadGen wrote into mlperf_log_detail.txt."""
    out = []
    for line in text.splitlines():
        if '"is_error": true' not in line:
            continue
        try:
            rec = json.loads(line.split(":::MLLOG", 1)[1])
            out.append(f"{rec.get('key')}: {rec.get('value')}")
        except (IndexError, ValueError):
            out.append(line.strip()[:300])
    return out


def detail_values(text: str) -> dict:
    """key -> value of the `:::MLLOG` lines of mlperf_log_detail.txt (the last value of a key wins)."""
    values = {}
    for line in text.splitlines():
        if not line.startswith(":::MLLOG"):
            continue
        try:
            rec = json.loads(line[len(":::MLLOG"):])
        except ValueError:
            continue
        values[rec.get("key")] = rec.get("value")
    return values


# LoadGen's early-stopping messages (results.cc): Server says how many MORE queries it needs,
# SingleStream (and MultiStream) how many in all
_EARLY_STOP = re.compile(r"Processed (\d+) queries\.\s*\*\s*Would need to run at least (\d+) more queries")
_EARLY_STOP_TOTAL = re.compile(r"Only processed (\d+) queries\.\s*\*\s*Need to process at least (\d+) queries")


def _num(values: dict, key: str) -> float | None:
    try:
        return float(values[key])
    except (KeyError, TypeError, ValueError):
        return None


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.0f} ms" if ns >= 1e7 else f"{ns / 1e6:.3g} ms"


def _duration_judged(values: dict) -> tuple[str, float | None]:
    """What LoadGen held against min_duration (results.cc MinDurationMet), in seconds: Offline the
    test's length, Server the last query's scheduled time, SingleStream the last query's issue time
    (queries - 1 over `QPS w/ loadgen overhead`, which LoadGen computes from it)."""
    scenario = values.get("effective_scenario")
    if scenario == "Offline":
        ns = _num(values, "result_max_latency_ns")
        return "the test lasted", None if ns is None else ns / 1e9
    if scenario == "SingleStream":
        q, qps = _num(values, "result_query_count"), _num(values, "result_qps_with_loadgen_overhead")
        return "the last query was issued after", (q - 1) / qps if q and qps else None
    ns = _num(values, "generated_query_duration")
    return "its queries were scheduled over", None if ns is None else ns / 1e9


def invalid_reasons(values: dict) -> list[str]:
    """Why LoadGen said INVALID, one line per unmet condition with the numbers it judged by, from
    the detail log's values (LoadGen's results.cc: result_*_met, early_stopping_*)."""
    out = []
    if values.get("result_perf_constraints_met") is False:
        parts = []
        for what, key, bound in (("TTFT", "result_first_token_99.00_percentile_latency_ns", "requested_server_ttft_latency"),
                                 ("TPOT", "result_time_per_output_token_99.00_percentile_ns", "requested_server_tpot_latency")):
            v, b = _num(values, key), _num(values, bound)
            if v is not None and b is not None:
                parts.append(f"p99 {what} {_ms(v)} {'>' if v > b else '<='} {_ms(b)}")
        out.append("latency bounds not met" + (f": {', '.join(parts)}" if parts else ""))
    if values.get("result_min_duration_met") is False:
        what, lasted = _duration_judged(values)
        need = _num(values, "effective_min_duration_ms")
        out.append("min duration not met" + (f": {what} {lasted:.3g} s" if lasted is not None else "")
                   + (f", LoadGen's min_duration is {need / 1e3:g} s" if need is not None else ""))
    if values.get("result_min_queries_met") is False:
        q, per = _num(values, "result_query_count"), _num(values, "generated_samples_per_query") or 1
        need_q, need_s = _num(values, "effective_min_query_count"), _num(values, "effective_min_sample_count")
        out.append("min queries not met" + (f": {q:.0f} queries ({q * per:.0f} samples) issued" if q is not None else "")
                   + (f", LoadGen requires {need_q:.0f} queries and {need_s:.0f} samples"
                      if need_q is not None and need_s is not None else ""))
    if values.get("early_stopping_met") is False:
        found = []
        for what, key in (("TTFT", "early_stopping_ttft_result"), ("TPOT", "early_stopping_tpot_result"),
                          ("latency", "early_stopping_result")):
            text = str(values.get(key) or "")
            more, total = _EARLY_STOP.search(text), _EARLY_STOP_TOTAL.search(text)
            if more or total:
                done = int((more or total).group(1))
                need = done + int(more.group(2)) if more else int(total.group(2))
                found.append(f"{done} queries processed, at least {need} needed ({what})")
        out.append("early stopping not met" + (f": {'; '.join(found)}" if found else ""))
    return out


_SUMMARY_VALUES = {   # a line of mlperf_log_summary.txt -> the detail log's key for the same value
    "result_perf_constraints_met": r"^\s*Performance constraints satisfied\s*:\s*(\S+)",
    "result_min_duration_met": r"^\s*Min duration satisfied\s*:\s*(\S+)",
    "result_min_queries_met": r"^\s*Min queries satisfied\s*:\s*(\S+)",
    "early_stopping_met": r"^\s*Early stopping satisfied\s*:\s*(\S+)",
    "result_first_token_99.00_percentile_latency_ns": r"^99\.00 percentile first token latency \(ns\)\s*:\s*(\S+)",
    "result_time_per_output_token_99.00_percentile_ns": r"^99\.00 percentile time to output token \(ns\)\s*:\s*(\S+)",
    "requested_server_ttft_latency": r"^ttft_latency \(ns\)\s*:\s*(\S+)",
    "requested_server_tpot_latency": r"^tpot_latency \(ns\)\s*:\s*(\S+)",
    "result_max_latency_ns": r"^Max latency \(ns\)\s*:\s*(\S+)",
    "result_qps_with_loadgen_overhead": r"^QPS w/ loadgen overhead\s*:\s*(\S+)",
    "effective_min_duration_ms": r"^min_duration \(ms\)\s*:\s*(\S+)",
    "effective_min_query_count": r"^min_query_count\s*:\s*(\S+)",
    "effective_target_qps": r"^target_qps\s*:\s*(\S+)",
    "effective_scenario": r"^Scenario\s*:\s*(\S+)",
    # the metric each scenario reports (RESULT_KEYS)
    "result_tokens_per_second": r"^Tokens per second\s*:\s*(\S+)",
    "result_completed_tokens_per_second": r"^Completed tokens per second\s*:\s*(\S+)",
    "result_90.00_percentile_latency_ns": r"^90\.00 percentile latency \(ns\)\s*:\s*(\S+)",
}


def summary_values(text: str) -> dict:
    """The values `invalid_reasons` reads, from mlperf_log_summary.txt (for a test whose detail log
    is missing): the same keys as the detail log's."""
    values = {}
    for key, rx in _SUMMARY_VALUES.items():
        m = re.search(rx, text, re.M)
        if m:
            v = m.group(1)
            values[key] = {"yes": True, "no": False}.get(v.lower(), v)
    if values.get("effective_scenario") == "Offline":     # listed, but only the other scenarios log them
        values.pop("requested_server_ttft_latency", None)
        values.pop("requested_server_tpot_latency", None)
    for what in ("TTFT", "TPOT"):
        m = re.search(rf"^{what} Early Stopping Result:\n(.*?)(?=^\S|\Z)", text, re.M | re.S)
        if m:
            values[f"early_stopping_{what.lower()}_result"] = m.group(1)
    return values


def read_summary(directory: Path) -> Summary:
    s = Summary()
    summ, detail = directory / "mlperf_log_summary.txt", directory / "mlperf_log_detail.txt"
    text = summ.read_text(errors="replace") if summ.exists() else ""
    if text:
        s = parse_summary(text)
    values = {}
    if detail.exists():
        detail_text = detail.read_text(errors="replace")
        s.errors = detail_errors(detail_text)
        values = detail_values(detail_text)
    values = values or summary_values(text)
    if s.result == "INVALID":
        s.invalid_reasons = invalid_reasons(values)
    s.queries = int(values["result_query_count"]) if _num(values, "result_query_count") is not None else None
    s.target_qps = _num(values, "effective_target_qps")
    if s.scenario == "SingleStream" and s.target_qps:
        s.target_latency_ns = 1e9 / s.target_qps
    if s.scenario == "Server":      # LoadGen logs them for SingleStream too, where they bound nothing
        s.ttft_limit_ns = _num(values, "requested_server_ttft_latency")
        s.tpot_limit_ns = _num(values, "requested_server_tpot_latency")
    metric = RESULT_KEYS.get(s.scenario)
    if metric is not None and _num(values, metric.key) is not None:
        s.metric, s.metric_unit = metric.value(values[metric.key]), metric.shown
    return s


@dataclass
class HarnessStatus:
    """What the harness itself knows about a test, written next to LoadGen's logs."""
    ok: bool
    scenario: str
    mode: str
    round: str
    loadgen_version: str | None
    completed: int = 0
    generated_tokens: int = 0
    failed_samples: int = 0
    errors: list[str] = field(default_factory=list)
    endpoints: dict[str, int] = field(default_factory=dict)
    duration_s: float = 0.0

    def write(self, directory: Path) -> None:
        write_json_atomic(str(directory / STATUS_FILE), asdict(self), indent=1)

    @classmethod
    def read(cls, directory: Path) -> "HarnessStatus | None":
        p = directory / STATUS_FILE
        if not p.exists():
            return None
        return cls(**json.loads(p.read_text()))


def verdict(status: HarnessStatus | None, summary: Summary, expected_seed: int | None, mode: str) -> tuple[str, list[str]]:
    """VALID, INVALID or FAILED for a finished test, with the reasons.

    FAILED: the harness or a server failed (the logs are kept but are not a result).
    INVALID: LoadGen says so, or the logs carry another round's seeds.
    """
    reasons = []
    if status is None:
        return "FAILED", ["the harness did not finish (no harness_status.json): see the run log"]
    if not status.ok:
        return "FAILED", status.errors[:5] or ["the harness reported a failure"]
    if mode == "accuracy":
        return ("VALID", []) if status.completed > 0 else ("FAILED", ["no sample completed"])
    if not summary.result:
        return "FAILED", ["LoadGen wrote no mlperf_log_summary.txt"]
    if expected_seed is not None and summary.qsl_rng_seed not in (None, expected_seed):
        reasons.append(f"qsl_rng_seed {summary.qsl_rng_seed} is not this round's {expected_seed}: "
                       "install the round's pinned mlcommons-loadgen")
    if summary.result != "VALID":
        reasons[:0] = [f"LoadGen result is {summary.result}"] + summary.invalid_reasons
    return ("INVALID" if reasons else "VALID"), reasons
