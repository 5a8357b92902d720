"""A server this run started that ends during a test: the test fails once, with one error naming the
server, its pid, its exit code or signal, the test, and its log's last lines (real processes: the
stand-in server started as run-vllm-server starts vLLM, its own process group and log)."""
import json
import os
import signal
import sys
import threading
import time
import urllib.request
from pathlib import Path

from mlperf_llm.harness.driver import HarnessRequest, run_all
from mlperf_llm.harness.results import HarnessStatus
from mlperf_llm.harness.testconfig import ManagedServer
from mlperf_llm.vllm import server
from standin import standin_env
from standin.dataset import write_dataset

ROWS = 24
MODEL = "standin-model"


def start_managed(tmp_path, *extra):
    port = server.free_port("127.0.0.1")
    argv = [sys.executable, "-m", "standin", "--port", str(port), "--model-name", MODEL, *extra]
    proc = server.start(argv, host="127.0.0.1", port=port, model_name=MODEL,
                        log_path=tmp_path / f"vllm-server-{port}.log", env=standin_env())
    proc.wait_ready(60, progress=lambda m: None, interval_s=0.1)
    return proc


def request(tmp_path, proc, **kw):
    r = proc.record
    dataset = write_dataset(str(tmp_path / "ds.pkl"), ROWS)
    return HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path / "results"), dataset_path=dataset,
                          api_servers=(proc.url,), api_model_name=MODEL, test_query_count=ROWS, progress=False,
                          managed_servers=(ManagedServer(r.url, r.pid, r.start_ticks, r.log_path),), **kw)


def kill_when_serving(proc):
    """SIGKILL the server once it has requests in flight (without collecting its exit status: the run
    that started it is this process, as the cm process is for run-vllm-server's server)."""
    def go():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"{proc.url}/standin/stats", timeout=5) as r:
                if json.loads(r.read())["inflight"] > 0:
                    break
            time.sleep(0.02)
        os.kill(proc.record.pid, signal.SIGKILL)
    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def the_one_error(outcome):
    assert outcome.verdict == "FAILED" and outcome.returncode == 3, outcome
    status = HarnessStatus.read(Path(outcome.directory))
    assert not status.ok and status.failed_samples >= 1
    assert len(status.errors) == 1, status.errors
    assert outcome.reasons == status.errors
    return status.errors[0]


def test_a_managed_server_killed_during_the_offline_accuracy_test_is_named_once(tmp_path):
    proc = start_managed(tmp_path, "--output-tokens=40", "--tpot-ms=50")
    try:
        killer = kill_when_serving(proc)
        t0 = time.monotonic()
        acc, = run_all(request(tmp_path, proc, modes=("accuracy",)))
        took = time.monotonic() - t0
        killer.join(5)
        error = the_one_error(acc)
    finally:
        proc.stop(1)
    head, log = error.split("\n", 1)
    assert head == (f"the vLLM server this run started at {proc.url} (pid {proc.record.pid}) was killed by signal 9 "
                    f"(SIGKILL) during the Offline accuracy test; the test stops here. Last lines of its log "
                    f"{proc.record.log_path}:")
    assert f"STANDIN_URL={proc.url}" in log and "OOM killer" in log
    assert took < 30


def test_a_managed_server_that_exits_on_its_own_is_named_with_its_exit_code(tmp_path):
    proc = start_managed(tmp_path, "--output-tokens=6", "--tpot-ms=5", "--die-after=8")
    try:
        perf, = run_all(request(tmp_path, proc, scenarios=("Server",), modes=("performance",), server_target_qps=40))
        error = the_one_error(perf)
    finally:
        proc.stop(1)
    assert error.startswith(f"the vLLM server this run started at {proc.url} (pid {proc.record.pid}) exited with "
                            "code 3 during the Server performance test; the test stops here.")
    assert "OOM" not in error


def test_a_managed_server_gone_before_the_test_refuses_it_with_its_end(tmp_path):
    proc = start_managed(tmp_path)
    req = request(tmp_path, proc, modes=("accuracy",))
    os.kill(proc.record.pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while server.process_end(proc.record.pid, proc.record.start_ticks) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        acc, = run_all(req)
    finally:
        proc.stop(1)
    assert acc.verdict == "FAILED" and acc.returncode == 2
    assert acc.reasons[0].startswith(f"the vLLM server this run started at {proc.url} (pid {proc.record.pid}) was "
                                     "killed by signal 15 (SIGTERM) before the Offline accuracy test")
