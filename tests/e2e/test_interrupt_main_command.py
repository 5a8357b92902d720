"""SIGTERM to the README's main command during the benchmark (what `timeout`, CI runners, Slurm and
Kubernetes send), through the real `cm` command with the real vLLM server: within twice the server's
stop grace (2 x 5 s: SIGTERM, then SIGKILL) no server is left
and `cm` has said so (exit 143); the same command then runs to the end.

The run is interrupted as soon as its first LoadGen test has started (its harness log exists), so the
size of its workload costs nothing. The next run is the session's smallest run of the same command
(`small_run`, tests/e2e/conftest.py), asked for after the SIGTERM; where another test made it first
(another order, `-k`), this test runs its own. Both run in the session's cache, CM home and server
records folder."""
import os
import signal
import time
from pathlib import Path

import pytest

import chain
from costs import LEDGER, STOP_WAIT_S, work_in
from mlperf_llm.vllm import server

pytestmark = pytest.mark.e2e


def alive(pid):
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        return False


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


NAME = "test_sigterm_during_the_benchmark"


def benchmark_started(results: Path) -> bool:
    """A LoadGen test is under way: the harness has written its log in the results folder."""
    return any(p.stat().st_size > 0 for p in results.rglob("harness.log")) if results.is_dir() else False


def test_sigterm_during_the_benchmark_leaves_no_server_and_the_next_run_works(tmp_path, cm_env, pace, readme_run,
                                                                             server_records, request):
    # after the session's full run (readme_run): every step before the benchmark is cached, so the
    # wait for the benchmark to start is a server start's
    records, env = server_records, cm_env
    assert list(records.glob("*.json")) == [], "a server of an earlier run is still recorded"
    made_before = "small_run" in chain.MADE
    results = tmp_path / "interrupted-results"
    log = tmp_path / "interrupted.log"
    t_start = time.monotonic()
    proc = chain.start_cm(chain.main_command(results, tmp_path / "interrupted-submission", with_source=False), env, log)
    deadline = t_start + pace.limit_s(queries=0, server_starts=1)
    try:
        while not benchmark_started(results):
            assert proc.poll() is None, f"the run ended before its benchmark started:\n{log.read_text()[-4000:]}"
            assert time.monotonic() < deadline, f"no LoadGen test started within {deadline - t_start:.0f} s, " \
                f"what a server start allows on this host:\n{log.read_text()[-4000:]}"
            time.sleep(0.5)
    except BaseException:               # the run under test is not left behind when the wait fails
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=STOP_WAIT_S)
        raise
    time.sleep(1)                                   # the benchmark is under way
    assert proc.poll() is None, log.read_text()[-4000:]
    assert "vLLM server ready at" in log.read_text(errors="replace")
    (record,) = [server.ServerRecord.load(p) for p in records.glob("*.json")]
    assert alive(record.pid)
    port = int(record.url.rsplit(":", 1)[1])

    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGTERM)
    code = proc.wait(timeout=STOP_WAIT_S)
    cm_s = time.monotonic() - t0
    while group_alive(record.pgid) and time.monotonic() - t0 < STOP_WAIT_S:
        time.sleep(0.1)
    server_s = time.monotonic() - t0
    out = log.read_text(errors="replace")
    print(f"SIGTERM: cm exited {code} after {cm_s:.1f} s; server group gone after {server_s:.1f} s")
    # the product's promise, not the host's pace: SIGTERM, then SIGKILL after its grace (server.STOP_GRACE_S)
    assert not group_alive(record.pgid) and server_s < 2 * server.STOP_GRACE_S, out[-4000:]
    assert code == 143, out[-4000:]
    assert "! SIGTERM received: stopping what this run started" in out
    assert f"server pid {record.pid} stopped" in out or f"server pid {record.pid} killed" in out
    assert "interrupted by SIGTERM, exit code 143" in out and "nothing incomplete was published" in out
    assert server.port_taken_reason("127.0.0.1", port) is None
    assert list(records.glob("*.json")) == []
    LEDGER.charge(NAME, work_in(results, out, cm_runs=1, seconds=time.monotonic() - t_start))

    if made_before:
        again_results = tmp_path / "again-results"
        again = chain.run_cm(chain.main_command(again_results, tmp_path / "again-submission", *chain.small_run_args(pace),
                                                with_source=False),
                             env, tmp_path / "again.log", NAME, pace, chain.SMALL_RUN_QUERIES,
                             results_dir=again_results)
        assert again.returncode == 0, again.tail()
    else:
        again = request.getfixturevalue("small_run").run      # the session's smallest run, made now
    print(f"next run: {again.seconds:.0f} s, exit 0")
    assert "vLLM server ready at" in again.output and "found a vLLM server" not in again.output
    assert list(records.glob("*.json")) == []
