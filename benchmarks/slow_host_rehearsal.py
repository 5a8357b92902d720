"""The slow-host rehearsal: a command (by default CI, `bash .ci/run`) run with this machine slowed to
the slow kind of host's pace, by a CPU quota that this script sets up and removes itself.

The slow kind of host (a 2-core AMD EPYC without AVX-512) decodes with vLLM on CPU 3-6x slower than
the fast kind (with AVX-512). A test that assumes the fast kind's pace (a fixed load, a fixed
wall-clock limit) passes on a fast developer's machine and fails CI on a slow one: rehearse before
resolving an issue that touches tests/e2e or the harness (docs/testing.md, "Slow-host rehearsal").

    sudo python3 benchmarks/slow_host_rehearsal.py [--factor 3] [-- COMMAND ...]

How: a cgroup of its own (`cm4mlperf-slow-host-<pid>`; cgroup v2's cpu.max, else v1's
cpu.cfs_quota_us) gets cores / FACTOR of the machine's CPU time, and the command starts inside it,
so that every process it starts (the vLLM servers, LoadGen, pytest) shares that quota. Before the
command, the same CPU-bound work on every core is timed inside and outside the cgroup, and the
ratio printed: the slowdown really applied. On its end, an interrupt (SIGINT, SIGTERM, SIGHUP) or an
error, the command's process group is stopped, any process left in the cgroup killed and the cgroup
removed; the command's exit status is this script's.

A quota slows everything alike, installs and pytest as well as vLLM's decoding, where the slow kind
of host is slowest on vLLM's decoding: a rehearsed CI run takes longer than one on the slow kind, and
its wall time is not the slow kind's. What it shows is whether the suite stays green at that pace.
Needs root (or a delegated cgroup) and Linux.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CGROUP_ROOT = Path("/sys/fs/cgroup")
PERIOD_US = 100_000
DEFAULT_FACTOR = 3.0          # the low end of the slow kind's 3-6x (vLLM decoding on CPU without AVX-512)
CALIBRATION_WORK = 4_000_000  # a CPU-bound loop per core, timed inside and outside the quota


class RehearsalError(RuntimeError):
    pass


@dataclass(frozen=True)
class Quota:
    """Where the quota lives and how it is written."""
    directory: Path
    version: int              # 2: cpu.max; 1: cpu.cfs_quota_us / cpu.cfs_period_us

    def files(self, cores: int, factor: float) -> dict[str, str]:
        """What to write, file by file, for cores / factor of the machine's CPU time."""
        quota = max(1000, int(cores * PERIOD_US / factor))
        if self.version == 2:
            return {"cpu.max": f"{quota} {PERIOD_US}"}
        return {"cpu.cfs_period_us": str(PERIOD_US), "cpu.cfs_quota_us": str(quota)}


def find_cpu_controller(root: Path = CGROUP_ROOT) -> tuple[Path, int]:
    """The folder under which a cgroup with a CPU quota can be made: cgroup v2 with the cpu
    controller enabled for children, else v1's cpu hierarchy; the reason and the fix when neither."""
    controllers, subtree = root / "cgroup.controllers", root / "cgroup.subtree_control"
    if controllers.is_file() and "cpu" in controllers.read_text().split():
        if "cpu" not in subtree.read_text().split():
            raise RehearsalError(f"{subtree} does not enable the cpu controller for child cgroups; fix: "
                                 f"echo +cpu > {subtree} (as root), or run under systemd-run --scope -p CPUQuota=...")
        return root, 2
    for v1 in (root / "cpu", root / "cpu,cpuacct"):
        if (v1 / "cpu.cfs_quota_us").is_file():
            return v1, 1
    raise RehearsalError(f"no cgroup CPU controller under {root} (neither v2's cpu.max nor v1's cpu.cfs_quota_us); "
                         "the rehearsal needs Linux cgroups with the cpu controller")


def make_cgroup(parent: Path, version: int, cores: int, factor: float) -> Quota:
    q = Quota(parent / f"cm4mlperf-slow-host-{os.getpid()}", version)
    try:
        q.directory.mkdir()
        for name, value in q.files(cores, factor).items():
            (q.directory / name).write_text(value)
    except OSError as e:
        remove_cgroup(q)
        raise RehearsalError(f"cannot set up the cgroup {q.directory} ({e}); fix: run as root") from None
    return q


def pids_in(q: Quota) -> list[int]:
    try:
        return [int(p) for p in (q.directory / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def remove_cgroup(q: Quota) -> None:
    """Kill what is left in the cgroup, then remove it."""
    for _ in range(50):
        left = pids_in(q)
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    try:
        q.directory.rmdir()
    except FileNotFoundError:
        pass


def _enter(q: Quota):
    """preexec_fn: the child joins the cgroup before it runs anything, in a process group of its own."""
    def enter() -> None:
        (q.directory / "cgroup.procs").write_text(str(os.getpid()))
        os.setsid()
    return enter


def _calibrate(q: Quota | None, cores: int) -> float:
    """Seconds for CALIBRATION_WORK iterations on every core at once, inside q (None: outside)."""
    code = f"import multiprocessing as m\ndef w(_):\n    s = 0\n    for i in range({CALIBRATION_WORK}): s += i\n" \
           f"if __name__ == '__main__':\n    m.Pool({cores}).map(w, range({cores}))\n"
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", code], check=True, preexec_fn=_enter(q) if q else None)
    return time.monotonic() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--factor", type=float, default=DEFAULT_FACTOR,
                    help=f"how many times slower (default {DEFAULT_FACTOR:g}: the slow kind's low end)")
    ap.add_argument("command", nargs="*", help="what to run (default: bash .ci/run)")
    args = ap.parse_args(argv)
    if not args.factor >= 1:
        raise RehearsalError(f"--factor={args.factor:g}: give 1 or more (how many times slower)")
    command = args.command or ["bash", str(ROOT / ".ci" / "run")]
    cores = os.cpu_count() or 1
    parent, version = find_cpu_controller()
    q = make_cgroup(parent, version, cores, args.factor)
    proc = None

    def stop(signum, _frame):
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signum)
        raise KeyboardInterrupt

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    try:
        fast, slow = _calibrate(None, cores), _calibrate(q, cores)
        print(f"slow-host rehearsal: {q.directory} gives {cores} cores / {args.factor:g} of the CPU time; "
              f"the same work on every core took {fast:.1f} s outside, {slow:.1f} s inside ({slow / fast:.1f}x)",
              flush=True)
        proc = subprocess.Popen(command, cwd=ROOT, preexec_fn=_enter(q))
        return proc.wait()
    except KeyboardInterrupt:
        if proc is not None:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        return 130
    finally:
        remove_cgroup(q)
        print(f"slow-host rehearsal: {q.directory} removed", flush=True)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RehearsalError as e:
        print(f"slow-host rehearsal: {e}", file=sys.stderr)
        sys.exit(2)
