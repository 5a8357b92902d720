"""A replay's chain in the recorded run environment (docs/reproduce.md, "The run's own environment").

A record carries the run's own environment (`versions.run_environment`: every distribution of the
interpreter `cm` ran in, with the archive's sha256 where a venv of ours installed it, else the exact
version). A replay makes a venv of exactly those (the step install-run-environment: nothing
resolved, this project from its files here) and runs the recorded chain with that venv's `cm`, as
a child process whose output is said line by line; the harness, LoadGen's wheel, the scoring and
the checker then run the recorded packages, not this interpreter's.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
from typing import Callable, Optional

from cmcontract.places import cache_root

from ..sysinfo import envlock
from ..sysinfo.pyenv import HARNESS_PYTHON_ENV
from .capture import PROJECT
from .record import Record

STEP_TAGS = "install,run-environment"
HERE = "here"                    # --run_env=here: the chain runs in this interpreter, as before
LOCKED = "lock"                  # --run_env=lock: in a venv of the recorded run environment
CHOICES = (LOCKED, HERE)
STOP_GRACE_S = 30.0              # the child chain's own cleanup (its servers) before SIGKILL


class RunEnvError(RuntimeError):
    pass


def check_choice(value: str, flag: str = "run_env") -> str:
    """--run_env (or --model_env): '' (the record's environment where it has one), 'lock' or 'here'."""
    value = (value or "").strip().lower()
    if value and value not in CHOICES:
        what = {"run_env": "a venv of the recorded run environment", "model_env": "the model steps' venv made from "
                "the recorded model environment"}.get(flag, "the recorded environment")
        here = "this interpreter" if flag == "run_env" else "this machine's own, as its cache has it"
        raise RunEnvError(f"--{flag}={value}: choose {LOCKED} ({what}) or {HERE} ({here})")
    return value


def recorded_environment(rec: Record, role: str, bare_pins: bool = False,
                         leave_out: tuple[str, ...] = ()) -> Optional[list[envlock.Locked]]:
    """The record's `<role>_environment` (server, run, model) as lock entries (envlock.from_record:
    those with a hash, or with bare_pins every one by exact version; leave_out never taken from a
    record): [] where the record has none (an older record); None where it has one this version
    cannot take (a name, version or hash not in their form)."""
    environment = (rec.versions or {}).get(f"{role}_environment")
    if not isinstance(environment, dict) or not environment:
        return []
    try:
        return envlock.from_record(environment, bare_pins, leave_out, where=f"the record's {role} environment")
    except envlock.LockError:
        return None


def recorded_run_lock(rec: Record) -> Optional[list[envlock.Locked]]:
    """The record's run environment as lock entries (recorded_environment), hashless packages by exact
    version. This project is never taken from a record: it is installed from its files here."""
    return recorded_environment(rec, "run", bare_pins=True, leave_out=(PROJECT,))


def lock_path(text: str, kind: str = "run") -> str:
    """Where a replay writes a lock it installs from (kind: run, vllm): named by its digest, so the
    same lock is the same cache entry of the step that installs it, for every replay."""
    return os.path.join(cache_root(), "environments", f"{kind}-lock-{hashlib.sha256(text.encode()).hexdigest()[:16]}.txt")


def describe(entries: list[envlock.Locked], path: str, in_image: bool = False) -> str:
    """in_image: --docker=chain's, the image's `run` venv made from the lock, nothing installed here."""
    bare = sum(1 for d in entries if not d.sha256)
    return (f"the chain's own environment as recorded (the harness, LoadGen's wheel, the scoring, the checker, cm): "
            f"{len(entries)} packages in " + ("the image's run venv, nothing installed here" if in_image else
                                              "a venv of their own") +
            f", {len(entries) - bare} by their archive's recorded sha256, "
            f"{bare} by exact version only (the recorded venv was not made by this project, so it holds no hashes "
            f"for them), nothing resolved; this project from its files here ({os.path.basename(path)})")


def install(run_script: Callable[[dict], dict], path: str) -> str:
    """The venv of the lock at `path` (the step install-run-environment, cached): its python.
    RunEnvError with the step's message (which names each package that could not be had)."""
    r = run_script({"tags": STEP_TAGS, "lock": path, "quiet": True})
    if r.get("return", 0) > 0:
        raise RunEnvError(f"the recorded run environment cannot be made here: {r.get('error', 'no message')}. "
                          "Replay with --run_env=here to run the chain in this interpreter instead (the "
                          "comparison then names each package that differs)")
    python = (r.get("new_env") or {}).get("CM_RUN_ENV_PYTHON", "")
    if not python:
        raise RunEnvError("install-run-environment gave no CM_RUN_ENV_PYTHON")
    return python


def request_argv(request: dict) -> list[str]:
    """A chain's request (cmind input dict) as the `cm` command line that asks the same: inputs as
    --k=v, env as --env.K=V, adr as --adr.NAME.K=V, quiet as --quiet."""
    argv = ["run", "script", f"--tags={request['tags']}"]
    argv += [f"--{k}" if v is True else f"--{k}={v}" for k, v in request.items()
             if k not in ("tags", "quiet", "env", "adr")]
    argv += [f"--env.{k}={v}" for k, v in (request.get("env") or {}).items()]
    argv += [f"--adr.{k}={v}" for k, v in _flat(request.get("adr") or {})]
    return argv + (["--quiet"] if request.get("quiet") else [])


def _flat(d: dict, prefix: str = ""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _flat(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


def in_venv(request: dict, python: str) -> dict:
    """The request for the chain run by `python`'s cm: the harness told to run in that interpreter too
    (pyenv.HARNESS_PYTHON_ENV; else it would run in the one a cached LoadGen step was installed for,
    this interpreter's)."""
    return {**request, "env": {**(request.get("env") or {}), HARNESS_PYTHON_ENV: python}}


def cm_of(python: str) -> str:
    return os.path.join(os.path.dirname(python), "cm")


def child_env(base: Optional[dict] = None) -> dict:
    """The chain's environment: this one (the CM home, the cache), less what would put this
    interpreter's packages before the venv's (PYTHONPATH, PYTHONHOME, VIRTUAL_ENV)."""
    env = dict(os.environ if base is None else base)
    for name in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"):
        env.pop(name, None)
    return env


def run_chain(python: str, request: dict, say: Callable[[str], None], cwd: Optional[str] = None) -> int:
    """The chain of `request`, run by the `cm` of `python`'s venv in a session of its own; its output
    said line by line; its exit status. What it leaves in its session when it exits is stopped (a
    process that kept the output open would otherwise hold the replay). Interrupted (Ctrl-C,
    SIGTERM): the chain is stopped (SIGTERM, its cleanup, then SIGKILL after STOP_GRACE_S) and the
    interruption goes on."""
    import selectors
    from cmcontract.proctree import stop_tree
    proc = subprocess.Popen([cm_of(python), *request_argv(request)], cwd=cwd, env=child_env(),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    assert proc.stdout is not None
    fd, pending = proc.stdout.fileno(), b""
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                if sel.select(timeout=0.5):
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        break
                    *lines, pending = (pending + chunk).split(b"\n")
                    for line in lines:
                        say(line.decode(errors="replace"))
                elif proc.poll() is not None:       # exited; what it left may hold the pipe open
                    break
        if pending:
            say(pending.decode(errors="replace"))
        return proc.wait()
    except BaseException:
        stop_tree(proc, STOP_GRACE_S)
        raise
    finally:
        _stop_session(proc.pid)
        proc.stdout.close()


def _stop_session(sid: int) -> None:
    """SIGKILL what is left in the chain's session (its own processes, once it has exited)."""
    import signal
    try:
        os.killpg(sid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
