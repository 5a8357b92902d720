"""reproduce/runenv.run_chain with real processes: the chain is the venv's own `cm` (here a stand-in
script in a venv-shaped folder), its output said line by line, its exit status returned, its
environment without this interpreter's PYTHONPATH, what it leaves in its session stopped (and not
waited for: a process holding the output open does not hold the replay); interrupted, the chain
and what it started are stopped before the interruption goes on."""
import os
import subprocess
import time

import pytest

from mlperf_llm.reproduce import runenv

CM = """#!/bin/bash
echo "argv: $*"
echo "PYTHONPATH=${PYTHONPATH:-unset}"
sleep 300 &
echo "child $!"
if [ -n "$HANG" ]; then wait; fi
exit 3
"""


@pytest.fixture
def venv(tmp_path):
    bin_dir = tmp_path / "venv-run" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "cm").write_text(CM)
    (bin_dir / "cm").chmod(0o755)
    return str(bin_dir / "python")


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:          # a zombie is gone for our purposes
        return f.read().split()[2] != "Z"


def test_the_chain_is_the_venvs_cm_with_the_request_as_its_command_line(venv, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/outer/site-packages")
    said = []
    rc = runenv.run_chain(venv, {"tags": "run-mlperf,inference", "model": "llama2-70b-99", "quiet": True},
                          said.append, cwd=str(tmp_path))
    assert rc == 3
    assert said[0] == "argv: run script --tags=run-mlperf,inference --model=llama2-70b-99 --quiet"
    assert said[1] == "PYTHONPATH=unset"
    leftover = int(said[2].split()[1])             # a process the chain left, holding its output open
    deadline = time.monotonic() + 10
    while alive(leftover) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(leftover), "what the chain left in its session outlived it"


def test_an_interrupted_replay_stops_the_chain_and_what_it_started(venv, tmp_path, monkeypatch):
    monkeypatch.setenv("HANG", "1")
    monkeypatch.setattr(runenv, "STOP_GRACE_S", 5.0)
    pids = []

    def say(line):
        if line.startswith("child "):
            pids.append(int(line.split()[1]))
            raise KeyboardInterrupt                  # as Ctrl-C (or the engine's SIGTERM) arrives
    with pytest.raises(KeyboardInterrupt):
        runenv.run_chain(venv, {"tags": "run-mlperf,inference"}, say, cwd=str(tmp_path))
    deadline = time.monotonic() + 10
    while alive(pids[0]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pids[0]), "the chain's own child outlived the interrupted replay"
    out = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True).stdout
    assert out.strip() == ""
