"""The results layout the submission step reads, and what a finished test's logs say.

<results>/<model>/<Scenario>/performance/run_1/   LoadGen logs of the performance test
<results>/<model>/<Scenario>/accuracy/            LoadGen logs of the accuracy test
<results>/<model>/<Scenario>/TEST06/              the compliance test's raw logs
A test runs in `<final>.partial-<pid>`; it is renamed to `<final>` only when it succeeded,
otherwise to `<final>.failed-<time>` (logs kept, never mistaken for a result).
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..files import write_json_atomic

STATUS_FILE = "harness_status.json"


def layout_dir(results_dir: str | Path, model_dir: str, scenario_dir: str, mode: str) -> Path:
    base = Path(results_dir) / model_dir / scenario_dir
    if mode == "performance":
        return base / "performance" / "run_1"
    if mode == "accuracy":
        return base / "accuracy"
    if mode == "TEST06":
        return base / "TEST06"
    raise ValueError(f"mode {mode!r}: choose performance, accuracy or TEST06")


def staging_dir(final: Path) -> Path:
    return final.with_name(f"{final.name}.partial-{os.getpid()}")


def finalize(staging: Path, final: Path, ok: bool) -> Path:
    """Move a finished test's directory into place; a previous result is kept beside it."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    if not ok:
        dest = final.with_name(f"{final.name}.failed-{stamp}")
        os.replace(staging, dest)
        return dest
    if final.exists():
        os.replace(final, final.with_name(f"{final.name}.prev-{stamp}"))
    os.replace(staging, final)
    return final


@dataclass
class Summary:
    scenario: str = ""
    mode: str = ""
    result: str = ""                    # VALID | INVALID | "" (no summary)
    samples_per_second: float | None = None
    tokens_per_second: float | None = None
    ttft_p99_ns: float | None = None
    tpot_p99_ns: float | None = None
    qsl_rng_seed: int | None = None
    latency_met: bool | None = None     # "Performance constraints satisfied" (Server/Interactive)
    errors: list[str] = field(default_factory=list)

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


def read_summary(directory: Path) -> Summary:
    s = Summary()
    summ, detail = directory / "mlperf_log_summary.txt", directory / "mlperf_log_detail.txt"
    if summ.exists():
        s = parse_summary(summ.read_text(errors="replace"))
    if detail.exists():
        s.errors = detail_errors(detail.read_text(errors="replace"))
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
        reasons.insert(0, f"LoadGen result is {summary.result}")
    return ("INVALID" if reasons else "VALID"), reasons
