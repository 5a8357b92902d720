"""Running a program a model wrote (LiveCodeBench answers) without trusting it.

Each program runs in a fresh folder of its own, as a process of its own session (its own process
group, killed whole when it ends or times out), under these limits:

- **wall clock** (`Limits.wall_s`): killed (SIGKILL to the group) when it runs longer;
- **CPU time** (RLIMIT_CPU), **memory** (RLIMIT_AS), **file size** (RLIMIT_FSIZE: its output goes to a
  file, so a program that prints without end is stopped too), **open files** (RLIMIT_NOFILE);
- **no network**: a network namespace of its own (`unshare --net`, as root or in a user namespace)
  where the machine allows one; everywhere, a guard installed before the program runs (a Python
  audit hook, which the program cannot remove) refuses sockets, new processes (fork, exec, spawn,
  subprocess), native libraries (ctypes) and writes, renames or removals outside its folder. A
  refused action ends the program at once with the verdict `refused` naming what it tried.

The folder is removed afterwards, whatever happened; nothing the program started is left running.
`isolation()` says which of the two network guards this machine has (the scorer records it).
"""
from __future__ import annotations

import functools
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REFUSED_EXIT = 121                  # the guard's exit status for a refused action (its name on stderr)
REFUSED_MARK = "SANDBOX-REFUSED: "

# Runs before the program, in the program's interpreter (python -I: no user site, no PYTHON* env).
GUARD = r'''
import os, sys
HOME = os.path.realpath(os.getcwd())
DENY = {"socket.__new__", "socket.connect", "socket.bind", "socket.getaddrinfo", "os.fork", "os.forkpty",
        "os.system", "os.exec", "os.posix_spawn", "os.spawn", "subprocess.Popen", "ctypes.dlopen",
        "ctypes.dlsym", "os.kill", "os.killpg", "os.setsid", "pty.spawn", "sys.remote_exec"}
PATHS = {"os.remove", "os.rmdir", "os.rename", "os.chmod", "os.chown", "os.link", "os.symlink",
         "os.truncate", "shutil.rmtree", "os.mkdir"}
_write = os.write
def refuse(what):
    _write(2, ("\n''' + REFUSED_MARK + r'''" + what + "\n").encode())
    os._exit(''' + str(REFUSED_EXIT) + r''')
def outside(path):
    try:
        p = os.path.realpath(os.fsdecode(path)) if not isinstance(path, int) else None
    except Exception:
        return True
    return p is not None and p != HOME and not p.startswith(HOME + os.sep)
def hook(event, args):
    if event in DENY:
        refuse(event)
    if event == "open":
        path, mode, flags = (list(args) + [None, None, None])[:3]
        writes = (mode is not None and any(c in str(mode) for c in "wax+")) or (isinstance(flags, int) and flags & (
            os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC))
        if writes and path is not None and not isinstance(path, int) and outside(path):
            refuse(f"open for writing outside its folder: {path!r}")
    if event in PATHS and args and outside(args[0]):
        refuse(f"{event} outside its folder: {args[0]!r}")
sys.addaudithook(hook)
import runpy
runpy.run_path("program.py", run_name="__main__")
'''


@dataclass(frozen=True)
class Limits:
    wall_s: float = 6.0
    cpu_s: int = 5
    memory_bytes: int = 1 << 30
    file_bytes: int = 16 << 20      # each file it writes, its output included
    output_bytes: int = 1 << 20     # of its output, read back
    open_files: int = 64


@dataclass(frozen=True)
class Outcome:
    verdict: str                    # ok | error | timeout | cpu-time | memory | file-size | refused | killed
    stdout: str
    stderr_tail: str
    exit_code: int | None           # None where a signal ended it
    seconds: float
    why: str                        # '' for ok; else what happened, in words

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"


@functools.lru_cache(maxsize=1)
def _netns_prefix() -> tuple[str, ...]:
    """The unshare command that gives a process a network namespace of its own here, () where none does."""
    unshare = shutil.which("unshare")
    if not unshare:
        return ()
    for prefix in ((unshare, "--net"), (unshare, "--map-root-user", "--net")):
        try:
            if subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0:
                return prefix
        except (OSError, subprocess.SubprocessError):
            continue
    return ()


def isolation() -> str:
    prefix = _netns_prefix()
    if prefix:
        how = "a user namespace" if "--map-root-user" in prefix else "root"
        return f"network namespace of its own (unshare, {how}) and the guard"
    return "the guard only (no network namespace here: unshare is missing or not allowed)"


def _limit(limits: Limits):
    def apply():
        os.setsid()
        for what, soft, hard in ((resource.RLIMIT_CPU, limits.cpu_s, limits.cpu_s + 1),   # SIGXCPU, then SIGKILL
                                 (resource.RLIMIT_AS, limits.memory_bytes, limits.memory_bytes),
                                 (resource.RLIMIT_FSIZE, limits.file_bytes, limits.file_bytes),
                                 (resource.RLIMIT_NOFILE, limits.open_files, limits.open_files),
                                 (resource.RLIMIT_CORE, 0, 0)):
            resource.setrlimit(what, (soft, hard))
    return apply


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _verdict(code: int | None, timed_out: bool, stderr: str, limits: Limits) -> tuple[str, str]:
    too_big = "file-size", f"wrote more than {limits.file_bytes >> 20} MiB to a file or its output (the limit)"
    if timed_out:
        return "timeout", f"still running after {limits.wall_s:g} s (the wall-clock limit): killed"
    if code == 0:
        return "ok", ""
    if code == REFUSED_EXIT and REFUSED_MARK in stderr:
        what = stderr.rsplit(REFUSED_MARK, 1)[1].strip().splitlines()[0]
        return "refused", f"tried {what}: not allowed, ended"
    if code is not None and code < 0:
        sig = -code
        if sig == signal.SIGXCPU:
            return "cpu-time", f"used its {limits.cpu_s} s of CPU time (the limit): killed"
        if sig == signal.SIGXFSZ:
            return too_big
        return "killed", f"ended by signal {signal.Signals(sig).name}"
    if "[Errno 27] File too large" in stderr:         # Python ignores SIGXFSZ: the write fails instead
        return too_big
    if "MemoryError" in stderr:
        return "memory", f"ran out of its {limits.memory_bytes >> 20} MiB of memory (the limit)"
    last = next((line for line in reversed(stderr.strip().splitlines()) if line.strip()), "")
    return "error", f"exit status {code}" + (f": {last[:200]}" if last else "")


def run_program(source: str, stdin: str = "", limits: Limits = Limits(), files: dict[str, str] | None = None) -> Outcome:
    """Run `source` (Python) on `stdin` under `limits`, with `files` (name: text) in its folder; its
    output and a verdict, never an exception for what the program does."""
    folder = Path(tempfile.mkdtemp(prefix="cm4mlperf-sandbox-"))
    start = time.monotonic()
    try:
        for name, text in (files or {}).items():
            (folder / Path(name).name).write_text(text)
        (folder / "program.py").write_text(source)
        (folder / "guard.py").write_text(GUARD)
        (folder / "stdin.txt").write_text(stdin)
        env = {"PATH": "/usr/bin:/bin", "HOME": str(folder), "TMPDIR": str(folder), "LANG": "C.UTF-8",
               "PYTHONHASHSEED": "0", "PYTHONIOENCODING": "utf-8"}
        argv = [*_netns_prefix(), sys.executable, "-I", "-B", "guard.py"]    # -B: no .pyc written anywhere
        with open(folder / "stdin.txt", "rb") as fin, open(folder / "stdout.txt", "wb") as fout, \
                open(folder / "stderr.txt", "wb") as ferr:
            proc = subprocess.Popen(argv, cwd=folder, env=env, stdin=fin, stdout=fout, stderr=ferr,
                                    preexec_fn=_limit(limits), close_fds=True)
            timed_out = False
            try:
                code = proc.wait(timeout=limits.wall_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc.pid)
                code = proc.wait()
            except BaseException:               # Ctrl-C, SIGTERM: the program goes with us
                _kill_group(proc.pid)
                proc.wait()
                raise
            _kill_group(proc.pid)               # anything it left in its group
        stdout = _read(folder / "stdout.txt", limits.output_bytes)
        stderr = _read(folder / "stderr.txt", 64 << 10)
        verdict, why = _verdict(None if timed_out else code, timed_out, stderr, limits)
        return Outcome(verdict, stdout, stderr[-2000:], code if code is not None and code >= 0 else None,
                       round(time.monotonic() - start, 3), why)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _read(path: Path, limit: int) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""
