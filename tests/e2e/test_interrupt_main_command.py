"""SIGTERM to the README's main command during the benchmark (what `timeout`, CI runners, Slurm and
Kubernetes send), through the real `cm` command with the real vLLM server: within 10 s no server is left
and `cm` has said so (exit 143); the same command then runs to the end."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mlperf_llm.vllm import server

pytestmark = pytest.mark.e2e

CM = os.path.join(os.path.dirname(sys.executable), "cm")
MAIN = ["run", "script", "--tags=run-mlperf,inference,_full,_embedded", "--model=llama2-70b-99",
        "--division=open", "--device=cpu", "--execution_mode=test", "--quiet"]


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


def main_command(tmp_path, name, records):
    base = tmp_path.parent
    env = dict(os.environ, CM_VLLM_SERVER_RECORDS_DIR=str(records))
    env.setdefault("CM4MLPERF_CACHE_DIR", str(base / "cm-cache"))
    env.setdefault("CM_REPOS", str(base / "CM"))
    log = open(tmp_path / f"{name}.log", "w")
    argv = [CM, *MAIN, f"--results_dir={tmp_path / name}-results", f"--submission_dir={tmp_path / name}-submission"]
    return subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True), tmp_path / f"{name}.log"


def test_sigterm_during_the_benchmark_leaves_no_server_and_the_next_run_works(tmp_path):
    records = tmp_path / "records"
    proc, log = main_command(tmp_path, "interrupted", records)
    deadline = time.monotonic() + 3600
    while "vLLM server ready at" not in log.read_text(errors="replace"):
        assert proc.poll() is None, f"the run ended before its server was ready:\n{log.read_text()[-4000:]}"
        assert time.monotonic() < deadline, "no vLLM server after an hour"
        time.sleep(1)
    time.sleep(5)                                   # the benchmark is under way
    assert proc.poll() is None, log.read_text()[-4000:]
    (record,) = [server.ServerRecord.load(p) for p in records.glob("*.json")]
    assert alive(record.pid)
    port = int(record.url.rsplit(":", 1)[1])

    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGTERM)
    code = proc.wait(timeout=60)
    cm_s = time.monotonic() - t0
    while group_alive(record.pgid) and time.monotonic() - t0 < 30:
        time.sleep(0.1)
    server_s = time.monotonic() - t0
    out = log.read_text(errors="replace")
    print(f"SIGTERM: cm exited {code} after {cm_s:.1f} s; server group gone after {server_s:.1f} s")
    assert not group_alive(record.pgid) and server_s < 10, out[-4000:]
    assert code == 143, out[-4000:]
    assert "! SIGTERM received: stopping what this run started" in out
    assert f"server pid {record.pid} stopped" in out or f"server pid {record.pid} killed" in out
    assert "interrupted by SIGTERM, exit code 143" in out and "nothing incomplete was published" in out
    assert server.port_taken_reason("127.0.0.1", port) is None
    assert list(records.glob("*.json")) == []

    t1 = time.monotonic()
    again, log2 = main_command(tmp_path, "again", records)
    assert again.wait(timeout=3600) == 0, log2.read_text()[-6000:]
    out2 = log2.read_text(errors="replace")
    print(f"next run: {time.monotonic() - t1:.0f} s, exit 0")
    assert "vLLM server ready at" in out2 and "found a vLLM server" not in out2
    assert list(records.glob("*.json")) == []
