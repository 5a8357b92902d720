"""accuracy/sandbox.py: a program a model wrote runs under limits, refused what it must not do, and
leaves nothing behind (real processes, small limits)."""
import glob
import os
import tempfile

import pytest

from mlperf_llm.accuracy.sandbox import Limits, isolation, run_program

FAST = Limits(wall_s=5, cpu_s=3, memory_bytes=256 << 20, file_bytes=1 << 20, output_bytes=64 << 10)


def _leftovers():
    return glob.glob(os.path.join(tempfile.gettempdir(), "cm4mlperf-sandbox-*"))


def test_a_program_reads_stdin_and_its_output_comes_back():
    out = run_program("import sys\nn = int(sys.stdin.read())\nprint(n * 2)\n", "21\n", FAST)
    assert out.ok and out.stdout == "42\n" and out.why == ""


def test_an_exception_is_an_error_with_its_last_line():
    out = run_program("raise ValueError('bad input')\n", "", FAST)
    assert out.verdict == "error" and out.exit_code == 1 and "ValueError: bad input" in out.why


@pytest.mark.parametrize("source, verdict, words", [
    ("while True:\n    pass\n", {"cpu-time", "timeout"}, ["limit"]),
    ("import time\ntime.sleep(60)\n", {"timeout"}, ["wall-clock"]),
    ("x = bytearray(1 << 31)\n", {"memory"}, ["256 MiB"]),
    ("while True:\n    print('y' * 4096)\n", {"file-size"}, ["1 MiB"]),
    ("import os\nos.fork()\n", {"refused"}, ["os.fork"]),
    ("import subprocess\nsubprocess.run(['true'])\n", {"refused"}, ["subprocess.Popen"]),
    ("import socket\nsocket.create_connection(('127.0.0.1', 9))\n", {"refused"}, ["socket"]),
    ("open('/tmp/cm4mlperf-escaped.txt', 'w').write('x')\n", {"refused"}, ["outside its folder"]),
    ("import os\nos.remove('/etc/hostname')\n", {"refused"}, ["os.remove"]),
    ("import ctypes\nctypes.CDLL(None).system(b'true')\n", {"refused"}, ["ctypes"]),
])
def test_a_hostile_or_runaway_program_is_stopped_and_named(source, verdict, words):
    out = run_program(source, "", FAST)
    assert out.verdict in verdict, (out.verdict, out.why, out.stderr_tail)
    for w in words:
        assert w in out.why, (w, out.why)
    assert out.seconds < FAST.wall_s + 5
    assert not os.path.exists("/tmp/cm4mlperf-escaped.txt")


def test_files_in_its_own_folder_are_allowed_and_removed_after():
    before = set(_leftovers())
    out = run_program("open('scratch.txt', 'w').write('ok')\nprint(open('scratch.txt').read())\n", "", FAST)
    assert out.ok and out.stdout.strip() == "ok"
    assert set(_leftovers()) == before


def test_nothing_it_started_is_left_running():
    """A program that outlives its wall clock is killed with its whole group: its process is gone
    once the run returns (its pid, printed first, no longer exists)."""
    out = run_program("import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(60)\n", "", Limits(wall_s=1))
    assert out.verdict == "timeout" and out.stdout.strip().isdigit()
    assert not os.path.exists(f"/proc/{out.stdout.strip()}")


def test_the_isolation_is_said():
    assert "guard" in isolation()
