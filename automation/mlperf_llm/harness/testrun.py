"""One LoadGen test in a process of its own: its user.conf and harness_config.json written into a
staging folder, `harness/run.py` run on it (its output kept as `harness.log` beside LoadGen's logs and
shown live), its verdict read, and the folder placed into the results layout."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import sizing
from .request import HarnessRequest
from .results import HarnessStatus, begin, finalize, read_summary, layout_dir, verdict
from .rounds import loadgen_model_and_dirs
from .testconfig import CONFIG_FILE, PERFORMANCE_MODES, TestConfig
from .userconf import UserConfSpec
from ..files import write_atomic
from ..sysinfo.pyenv import AUTOMATION_DIR, with_path
from ..vllm.inputs import API_KEY_ENV



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

def dataset_rows(req: HarnessRequest, mode: str = "performance") -> int:
    """Rows of the data set a test of `mode` reads (gpt-oss-120b's performance and TEST07 sets are their own)."""
    from .qsl import load_dataset
    return load_dataset(req.dataset_for(mode), req.total_sample_count).count

def command(req: HarnessRequest, scenario: str, mode: str, out: Path, user_conf: Path) -> list[str]:
    """The test's command line; its settings go in `out`/harness_config.json (kept with its logs)."""
    cfg = TestConfig.of(req, scenario=scenario, mode=mode, output_dir=str(out), user_conf=str(user_conf),
                        round=req.rnd.name, audit_conf=req.audit_config(mode))
    path = out / CONFIG_FILE
    write_atomic(str(path), cfg.to_json())
    return [req.python, "-m", "mlperf_llm.harness.run", f"--config={path}"]

def run_logged(cmd: list[str], log_path: Path, loadgen_path: str = "", api_key: str = "") -> int:
    env = with_path(os.pathsep.join(p for p in (AUTOMATION_DIR, loadgen_path) if p))
    env["PYTHONUNBUFFERED"] = "1"
    env.pop(API_KEY_ENV, None)
    if api_key:          # a secret: in the test process's environment, not in its config file or command
        env[API_KEY_ENV] = api_key
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
    stage = begin(final)
    try:
        return _run_staged(req, scenario, mode, rows, rnd, lg_model, lg_scenario, final, stage)
    except BaseException:       # interrupted (Ctrl-C, SIGTERM) or an error here: its logs kept as a failed test's
        if stage.exists():
            finalize(stage, final, ok=False)
        raise


def _run_staged(req: HarnessRequest, scenario: str, mode: str, rows: int, rnd, lg_model: str, lg_scenario: str,
                final: Path, stage: Path) -> RunOutcome:
    target, latency = req.target_for(scenario), lg_scenario == "SingleStream"
    spec = UserConfSpec(lg_model, lg_scenario, req.execution_mode, None if latency else target,
                        req.test_query_count, req.max_test_duration_s, rows, req.loadgen_version,
                        target_latency_ms=target if latency else None,
                        full_sample_count=req.bench.performance_sample_count,
                        accuracy_sample_count=rows if mode not in PERFORMANCE_MODES and req.bench.performance_rows
                        and rows < req.bench.dataset_rows else None)
    user_conf = stage / "user.conf"
    write_atomic(str(user_conf), spec.text())
    rc = run_logged(command(req, scenario, mode, stage, user_conf), stage / "harness.log", req.loadgen_path,
                    req.api_key)
    status = HarnessStatus.read(stage)
    summary = read_summary(stage)
    v, reasons = verdict(status, summary, rnd.qsl_rng_seed if req.execution_mode == "valid" else None,
                         "performance" if mode in PERFORMANCE_MODES else "accuracy")
    if rc != 0 and v != "FAILED":
        v, reasons = "FAILED", [f"harness exited with {rc}"] + reasons
    placed = finalize(stage, final, ok=v != "FAILED")
    rate = status.completed / status.duration_s if status and status.duration_s > 0 else None
    return RunOutcome(scenario, mode, v, reasons, str(placed), rc, summary.to_dict(), rate)
