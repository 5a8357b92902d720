"""The real `cm` command as the e2e tests run it: the README's main command, its sizes, and one way
to run it (a log per run, a limit from the work it issues, the work charged to the ledger).

Sizes, set here and nowhere else:
- FULL: the README's command as a user pastes it (a test run sized to the host: at most 32 queries per
  test; an open-division run, so no compliance test: runapp.compliance_tests). It runs exactly once
  per session (the `readme_run` fixture); every test that only reads its outputs shares it, and the
  replay test replays its tarball.
- SMALL: the smallest run that still goes through every step of the chain (both scenarios,
  performance, accuracy, TEST06 (`--compliance=yes`), submission, checker step): 2 queries per
  test, TEST06's included (two, not one: a Server test and the replicas' routing still see more
  than one query in flight; 4 until issue 43's budget, for no assertion's sake). The cached second
  run (given no inference source: the checker step says why it gave no verdict, and given its
  Server target: small_run_args), the interrupted run's successor and seed 003's command use it.

No load here is a number: a test either leaves the target to the run (which derives it from its own
Offline test) or takes it from this host's measured pace (costs.Pace.burst_qps), and a verdict that
depends on latency is asserted only where the run derived its load
(tests/unit/e2e_costs/test_no_literal_loads.py holds every e2e file to that).
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from costs import LEDGER, STOP_WAIT_S, Pace, work_in

CM = os.path.join(os.path.dirname(sys.executable), "cm")
ROOT = Path(__file__).resolve().parents[2]

MODEL = "llama2-70b-99.9"        # the newest round's (v6.1 has only -99.9): the README's command
ROUND = "6.1"                    # what the run takes for it: the newest round that has MODEL
MAIN = ["run", "script", "--tags=run-mlperf,inference,_full,_embedded", f"--model={MODEL}",
        "--division=open", "--device=cpu", "--execution_mode=test", "--quiet"]
FULL_QUERIES = 32                # the embedded variation's default test_query_count
SMALL_QUERIES = 2
# a short TEST06 too: its audit.config asks for 100 queries whatever the test's count (at a Server
# target derived from a small Offline test, ~0.2 QPS, that alone was 8 minutes)
SMALL = [f"--test_query_count={SMALL_QUERIES}", "--compliance=yes", f"--test06_query_count={SMALL_QUERIES}"]
# LoadGen tests of one _full run: Offline and Server x performance and accuracy, up to 3 latency-search
# retries of Server's performance test, and two TEST06 tests where compliance runs (closed division or
# --compliance=yes: 100 queries each unless shortened)
TESTS_PER_FULL_RUN = 2 * 2 + 3
TEST06_QUERIES = 100

# the name the session's vLLM server serves the embedded model under: seed 003's --vllm_model_name, so
# that its command is given this server (tests/e2e/conftest.py: session_server)
SERVED_NAME = "neuralmagic/Llama-2-7b-chat-hf-FP8"

MADE: set[str] = set()          # the session's shared runs made so far (conftest.py: readme_run, small_run)


def queries_of(test_query_count: int, test06_queries: int = TEST06_QUERIES) -> int:
    return TESTS_PER_FULL_RUN * test_query_count + 2 * test06_queries


SMALL_RUN_QUERIES = queries_of(SMALL_QUERIES, SMALL_QUERIES)


def small_run_args(pace: Pace) -> list[str]:
    """The smallest run of the README command, given its Server target: its queries issued within a
    quarter of one answer on this host (Pace.burst_qps; the target a small Offline test implies would pace them over ~20 s,
    several times that on a slow host, in each of its three Server tests), while deriving a target,
    and saying that a bound is out of this host's reach, are what the full run and llama3.1-8b's
    exercise. Its latency verdict is not asserted: whether the bounds hold at this load is the host's."""
    return [*SMALL, f"--server_target_qps={pace.burst_qps(SMALL_QUERIES)}"]


@dataclass
class CmRun:
    returncode: int
    output: str
    seconds: float
    log: Path

    def tail(self, n: int = 6000) -> str:
        return self.output[-n:]


@dataclass
class MainRun:
    """A finished main command: its run, results folder and submission folder."""
    run: CmRun
    results: Path
    submission: Path

    @property
    def output(self) -> str:
        return self.run.output


def cm_env(cache_dir: str, cm_home: str, **extra: str) -> dict:
    env = dict(os.environ, CM4MLPERF_CACHE_DIR=cache_dir, CM_REPOS=cm_home, **extra)
    os.makedirs(cm_home, exist_ok=True)
    return env


def register_checkout(env: dict) -> None:
    """An editable install is not found by cmind's automatic registration (`pip install .`, as CI
    does, is): a fresh CM home then learns the checkout as the README says."""
    import pkgutil
    if not any(m.name == "cm4mlperf_llm" for m in pkgutil.iter_modules()):
        subprocess.run([CM, "add", "repo", f"--path={ROOT}"], env=env, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)


def start_cm(args: list[str], env: dict, log: Path, cwd: Path | None = None) -> subprocess.Popen:
    """`cm ARGS` in its own process group, stdout and stderr into log."""
    with open(log, "w") as out:         # the child keeps its own copy of the descriptor
        return subprocess.Popen([CM, *args], env=env, stdout=out, stderr=subprocess.STDOUT, cwd=cwd,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def wait_cm(proc: subprocess.Popen, log: Path, limit_s: float | None, t0: float) -> CmRun:
    """Waits for `cm` to end; past limit_s (None: no limit) its process group is stopped and the
    test fails with the log's tail."""
    try:
        rc = proc.wait(timeout=None if limit_s is None else max(1.0, limit_s - (time.monotonic() - t0)))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=STOP_WAIT_S)
        raise AssertionError(f"`cm` made no end within {limit_s:.0f} s, the limit its work allows on this host "
                             f"(tests/e2e/costs.py):\n{log.read_text(errors='replace')[-4000:]}") from None
    return CmRun(rc, log.read_text(errors="replace"), time.monotonic() - t0, log)


def run_cm(args: list[str], env: dict, log: Path, who: str, pace: Pace | None, queries: int,
           results_dir: Path | None = None, cwd: Path | None = None, server_starts: int = 1) -> CmRun:
    """Runs `cm ARGS` to its end, within what `queries` and `server_starts` allow on this host; its
    work (from results_dir and its output) is charged to `who`. Without a pace (the session's first
    run, which installs what the others measure with) it waits for the run's end, however long."""
    t0 = time.monotonic()
    limit = pace.limit_s(queries, server_starts) if pace else None
    run = wait_cm(start_cm(args, env, log, cwd), log, limit, t0)
    LEDGER.charge(who, work_in(results_dir, run.output, cm_runs=1, seconds=run.seconds))
    return run


def on_session_server(args: list[str], work: Path, who: str, env: dict, pace: Pace, queries: int,
                      server_url: str, served_name: str, round_name: str) -> tuple[str, Path, Path]:
    """`cm ARGS` on the session's running server (no server of its own), its results and submission
    in `work`, the round's inference source given: its output, results and submission folders. The
    run must succeed and start no server."""
    results, submission = work / "results", work / "submission"
    full = [*args, f"--api_server={server_url}", f"--vllm_model_name={served_name}", f"--results_dir={results}",
            f"--submission_dir={submission}", f"--inference_src={inference_source(round_name)}"]
    r = run_cm(full, env, work / f"{who}.log", who, pace, queries, results_dir=results, cwd=work, server_starts=0)
    assert r.returncode == 0, f"{who} failed:\n{r.tail(8000)}"
    assert "vLLM server ready" not in r.output, "a server started though the run was given one"
    return r.output, results, submission


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def inference_source(round_name: str) -> str:
    """The round's mlcommons/inference source for the official checker and TEST06 (no network here
    to clone one), from ../shared/mlcommons-inference."""
    from inference_sources import inference_source as shared_copy
    return shared_copy(round_name)


def main_command(results: Path, submission: Path, *extra: str, with_source: bool = True) -> list[str]:
    """The README's command into these folders; with_source gives it the round's inference source
    (else it tries to clone one, which fails here, and says so)."""
    source = [f"--inference_src={inference_source(ROUND)}"] if with_source else []
    return [*MAIN, f"--results_dir={results}", f"--submission_dir={submission}", *source, *extra]
