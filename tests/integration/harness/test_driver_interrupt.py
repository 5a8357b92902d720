"""A LoadGen test's process does not outlive the harness driver that started it: a signal to the
driver's process alone (not its group: `kill PID`, a parent engine's sub-run) interrupts the driver,
which stops the test's process (SIGTERM, then SIGKILL) before it lets the interruption go on."""
import os
import signal
import sys
import time

import pytest

from mlperf_llm.harness.testrun import run_logged as _run_logged

CHILD = "import os, time; print(os.getpid(), flush=True); time.sleep(120)"


def test_an_interrupted_driver_stops_its_test_process(tmp_path):
    log = tmp_path / "run.log"

    def interrupt(_signum, _frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.alarm(2)
    try:
        with pytest.raises(KeyboardInterrupt):
            _run_logged([sys.executable, "-c", CHILD], log)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    pid = int(log.read_text().splitlines()[1])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}"):
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}"), f"the test's process {pid} outlived its driver"
