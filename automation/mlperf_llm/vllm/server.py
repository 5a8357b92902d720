"""Managed lifecycle of an OpenAI-compatible vLLM server, and checks of servers that already run.

start() refuses a taken port, launches the command in its own process group with output going to a
log file, and returns a `ServerProcess`; wait_ready() polls `/health` then `/v1/models` with progress,
noticing an early death (its exit code and the log's tail go into the error); stop() sends SIGTERM to
the whole group and SIGKILL after a short grace period (STOP_GRACE_S: during an interrupted benchmark
vLLM was seen still running 30 s after SIGTERM, issue 20). A `ServerRecord` (JSON) lets a later process
stop a server it did not start, guarded against PID reuse; it names the run that owns the server
(its pid and start time) so that a server left by a run that was killed can be told apart
(records.py). check_existing() vets `--api_server` URLs.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable

from ..files import write_json_atomic
from ..containers.engine import reach_env_ok
from ..containers.run import NAME_PREFIX, REMOVE
from . import portowner
from .command import redact, shell_command

LOG_TAIL_LINES = 40
STOP_GRACE_S = 5.0
LAUNCHER_GRACE_S = 30.0      # a Ray replica's launcher stops its server through Ray first (launch.py)
SIGKILL_HINT = ('A process of the server was killed by SIGKILL: on Linux usually the kernel\'s OOM killer '
                '(see dmesg); give the KV cache less memory (--kv_cache_space=GiB).')


class ServerError(RuntimeError):
    """A server could not be started, reached, or used."""


class PortTakenError(ServerError):
    pass


class EarlyExitError(ServerError):
    pass


class ReadyTimeoutError(ServerError):
    pass


class ModelMismatchError(ServerError):
    pass


@dataclass(frozen=True)
class ServerRecord:
    """What a later process needs to find, use and stop a started server (saved as JSON)."""

    pid: int
    pgid: int
    start_ticks: int | None
    url: str
    model_name: str
    log_path: str
    argv: list[str] = field(default_factory=list)
    owner_pid: int | None = None          # the process (the `cm` run) that started the server
    owner_start_ticks: int | None = None  # its start time: a reused PID is not the owner
    owner_uid: int | None = None
    started_at: float = 0.0               # time.time() at the start
    keep: bool = False                    # --keep_server: meant to outlive its run
    where: str = ''                       # a replica on a Ray node: that node (pid/log: its launcher's)
    container: str = ''                   # served from an image: the container (pid/pgid: its `podman run`)
    container_rm: list[str] = field(default_factory=list)   # the engine's command that removes it
    container_env: dict = field(default_factory=dict)       # what that command needs in its environment
    rpc_folder: str = ''                  # its own temporary folder, its sockets' too, made for it (rpc_env)

    def owner_alive(self) -> bool:
        """True while the run that started the server still runs (same PID, same start time)."""
        if self.owner_pid is None:
            return False
        ticks = _proc_start_ticks(self.owner_pid)
        return ticks is not None and (self.owner_start_ticks is None or ticks == self.owner_start_ticks)

    def server_alive(self) -> bool:
        """True while the server's process (the same one: start time checked) or its group runs."""
        ticks = _proc_start_ticks(self.pid)
        if ticks is not None and self.start_ticks is not None and ticks != self.start_ticks:
            return False
        return _group_alive(self.pgid)

    def save(self, path: str | Path) -> None:
        write_json_atomic(str(path), asdict(self))

    @classmethod
    def load(cls, path: str | Path) -> 'ServerRecord':
        try:
            return cls(**json.loads(Path(path).read_text()))
        except (OSError, ValueError, TypeError) as e:
            raise ServerError(f'cannot read server record {path} ({e}); was the server started by '
                              'run-vllm-server in this work directory?') from None


# ---------------------------------------------------------------- helpers

def log_since(path: str | Path, offset: int) -> str:
    """What was appended to a log from byte `offset` on ('' if unreadable)."""
    try:
        with open(path, 'rb') as f:
            f.seek(offset)
            return f.read().decode('utf-8', 'replace')
    except OSError:
        return ''


def log_tail(path: str | Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        with open(path, 'rb') as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            text = f.read().decode('utf-8', 'replace')
    except OSError as e:
        return f'(log {path} unreadable: {e})'
    return '\n'.join(text.splitlines()[-lines:])


def port_taken_reason(host: str, port: int) -> str | None:
    """None if a server could bind host:port, else why not."""
    with socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: TIME_WAIT is no obstacle
        try:
            s.bind((host, port))
        except OSError as e:
            return e.strerror or str(e)
    return None


def free_port(host: str) -> int:
    """A port nothing listens on now (the kernel's choice)."""
    with socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _proc_start_ticks(pid: int) -> int | None:
    """Process start time in clock ticks since boot (field 22 of /proc/PID/stat); None if gone/unknown."""
    try:
        stat = Path(f'/proc/{pid}/stat').read_text()
    except OSError:
        return None
    try:
        return int(stat.rsplit(')', 1)[1].split()[19])
    except (IndexError, ValueError):
        return None


def process_end(pid: int, start_ticks: int | None) -> str | None:
    """None while the process `pid` that started at `start_ticks` runs; else how it ended, in words:
    'exited with code 3', 'was killed by signal 9 (SIGKILL)' (read from /proc while it waits for its
    parent to collect it), or, once collected, that it has exited (its status went to its parent)."""
    try:
        fields = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    except (OSError, IndexError):
        return 'has exited (its exit status went to the process that started it)'
    if start_ticks is not None and fields[19:20] != [str(start_ticks)]:
        return 'has exited (its PID now belongs to another process)'
    if fields[0] not in ('Z', 'X'):
        return None
    if len(fields) < 50:                       # exit_code: Linux 3.5 and later
        return 'has exited (this kernel does not show its exit status)'
    status = int(fields[49])
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = 'unknown'
        return f'was killed by signal {number} ({name})'
    return f'exited with code {os.WEXITSTATUS(status)}'


def http_get_json(url: str, timeout: float = 5.0, api_key: str | None = None):
    """GET url; return (status, parsed JSON or None). Raises OSError/URLError on connection failure."""
    req = urllib.request.Request(url, headers={'Authorization': f'Bearer {api_key}'} if api_key else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        return e.code, None
    try:
        return status, json.loads(body) if body else None
    except ValueError:
        return status, None


def served_model_names(models_json) -> list[str]:
    """Names listed by an OpenAI-style /v1/models answer."""
    if not isinstance(models_json, dict) or not isinstance(models_json.get('data'), list):
        return []
    return [m.get('id') for m in models_json['data'] if isinstance(m, dict) and m.get('id')]


def probe(url: str, model_name: str, api_key: str | None = None, timeout: float = 5.0) -> str | None:
    """None when url answers /health and serves model_name; else a short reason."""
    try:
        status, _ = http_get_json(f'{url}/health', timeout, api_key)
        if status != 200:
            return f'/health answered HTTP {status}'
        status, models = http_get_json(f'{url}/v1/models', timeout, api_key)
    except (OSError, urllib.error.URLError) as e:
        reason = getattr(e, 'reason', e)
        return f'not reachable ({reason})'
    if status == 401:
        return '/v1/models answered HTTP 401: the API key is missing or wrong'
    if status != 200:
        return f'/v1/models answered HTTP {status}'
    names = served_model_names(models)
    if model_name not in names:
        return f'serves {names or "no models"}, not {model_name!r}'
    return None


# ---------------------------------------------------------------- lifecycle

class ServerProcess:
    """A server started by this process (Popen kept so that the exit code can be read and reaped)."""

    def __init__(self, popen: subprocess.Popen, record: ServerRecord):
        self.popen = popen
        self.record = record

    @property
    def url(self) -> str:
        return self.record.url

    def returncode(self) -> int | None:
        return self.popen.poll()

    def wait_ready(self, timeout_s: float, api_key: str | None = None,
                   progress: Callable[[str], None] = print, interval_s: float = 1.0,
                   progress_every_s: float = 10.0) -> float:
        """Block until the server is ready; return seconds waited. Raises EarlyExitError/ReadyTimeoutError."""
        t0 = time.monotonic()
        next_report = t0 + progress_every_s
        reason = 'not polled yet'
        while True:
            code = self.returncode()
            if code is not None:
                if not _group_alive(self.record.pgid):     # nothing of it left to stop: its socket folder goes
                    _remove_rpc_folder(self.record)
                tail = log_tail(self.record.log_path)
                killed = '\n' + SIGKILL_HINT if code == -9 or ': -9}' in tail else ''
                raise EarlyExitError(
                    f'vLLM server exited with code {code} after {time.monotonic() - t0:.0f} s, before it was ready.\n'
                    f'Command: {shell_command(redact(self.record.argv))}\n'
                    f'Last lines of {self.record.log_path}:\n{tail}{killed}')
            reason = probe(self.url, self.record.model_name, api_key, timeout=min(5.0, interval_s * 5))
            now = time.monotonic()
            if reason is None:
                self._check_it_is_ours()
                progress(f'vLLM server ready at {self.url} after {now - t0:.0f} s (log: {self.record.log_path})')
                return now - t0
            if now - t0 >= timeout_s:
                raise ReadyTimeoutError(
                    f'vLLM server at {self.url} not ready after {timeout_s:.0f} s (last check: {reason}); '
                    'raise --server_start_timeout if the model is large.\n'
                    f'Last lines of {self.record.log_path}:\n{log_tail(self.record.log_path)}')
            if now >= next_report:
                progress(f'waiting for vLLM at {self.url}: {now - t0:.0f} s of {timeout_s:.0f} s ({reason}); '
                         f'log: {self.record.log_path}')
                next_report = now + progress_every_s
            time.sleep(interval_s)

    def _check_it_is_ours(self) -> None:
        """The server that answered must be a process of this server's group (portowner): a server
        that another run started on the same port first answers too, and must not be measured."""
        port = urllib.parse.urlsplit(self.url).port
        other = portowner.not_ours(port, self.record.pgid) if port else None
        if other:
            raise PortTakenError(
                f'{self.url} answered, but not from the vLLM server this run started (pid {self.record.pid}): '
                f'port {port} is {other}. Another run or program took the port first; leave --port out (each '
                f'run then takes a free port), or choose another --port. Log of ours: {self.record.log_path}')

    def stop(self, grace_s: float = STOP_GRACE_S) -> str:
        return stop(self.record, grace_s, popen=self.popen)


def _spawn(argv: list[str], log_path: Path, env: dict | None, cwd: str | Path | None = None,
           cpus: tuple[int, ...] = (), hint: str = '') -> subprocess.Popen:
    """argv in a new process group, its output appended to log_path after a line saying what started."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, 'ab') as log:
        log.write(f'# {time.strftime("%Y-%m-%d %H:%M:%S")} starting: {shell_command(redact(argv))}\n'.encode())
        log.flush()
        try:
            return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=env, cwd=cwd, start_new_session=True,
                                    preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
        except OSError as e:
            raise ServerError(f'cannot start {argv[0]!r}: {e}{hint}') from None


def _record(popen: subprocess.Popen, url: str, model_name: str, log_path: Path, argv: list[str],
            where: str = '') -> ServerRecord:
    """The record of a process this run just started (owned by this process)."""
    return ServerRecord(pid=popen.pid, pgid=popen.pid, start_ticks=_proc_start_ticks(popen.pid), url=url,
                        model_name=model_name, log_path=str(log_path), argv=redact(list(argv)),
                        owner_pid=os.getpid(), owner_start_ticks=_proc_start_ticks(os.getpid()),
                        owner_uid=os.getuid() if hasattr(os, 'getuid') else None, started_at=time.time(),
                        where=where)


# vLLM's processes talk over sockets it names `<VLLM_RPC_BASE_PATH>/<uuid4>`, the temporary folder unless
# told otherwise, and its engine meets its workers at a file `<temporary folder>/vllm_dist_<hex>` (torch's
# FileStore); a server stopped by a signal leaves both: a host that ran a thousand servers had a thousand
# sockets in /tmp, and one day of CI runs left 289 such files. Each server started here gets a folder of its
# own, its VLLM_RPC_BASE_PATH and its TMPDIR, gone with everything in it when it is stopped.
RPC_ENV = 'VLLM_RPC_BASE_PATH'
RPC_PREFIX = 'vllm-rpc-'


def rpc_env(env: dict | None) -> tuple[dict, str]:
    """The server's environment with a temporary folder made for it (its TMPDIR, and its sockets' unless
    the caller named a VLLM_RPC_BASE_PATH: theirs, left alone), and that folder."""
    env = dict(os.environ if env is None else env)
    # short on purpose: a socket's path has at most 107 bytes, and vLLM adds 37
    folder = tempfile.mkdtemp(prefix=RPC_PREFIX)
    return {**env, RPC_ENV: env.get(RPC_ENV) or folder, 'TMPDIR': folder}, folder


def _remove_rpc_folder(record: ServerRecord) -> None:
    """The server's own temporary folder gone, with what it left there; only a folder of ours that
    rpc_env made (a record is a file: a folder it names without the prefix, a link, or another
    user's is left alone)."""
    folder = record.rpc_folder
    if not folder or not os.path.basename(folder).startswith(RPC_PREFIX):
        return
    try:
        st = os.lstat(folder)
    except OSError:
        return
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid():
        shutil.rmtree(folder, ignore_errors=True)


def _remove_sockets(folder: str | Path) -> None:
    """Only the sockets in `folder` removed, then the folder when that empties it."""
    try:
        for entry in os.scandir(folder):
            if stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                os.unlink(entry.path)
        os.rmdir(folder)
    except OSError:
        pass


def start(argv: list[str], *, host: str, port: int, model_name: str, log_path: str | Path,
          env: dict | None = None, cwd: str | Path | None = None, cpus: tuple[int, ...] = ()) -> ServerProcess:
    """Launch argv in a new process group, output appended to log_path. Refuses a taken port.
    cpus: the CPUs the process and everything it starts may run on (a replica's), else all."""
    reason = port_taken_reason(host, port)
    if reason is not None:
        raise PortTakenError(
            f'port {port} on {host} is already in use ({reason}). Stop whatever listens there, choose another '
            f'--port, or, if it is a vLLM server with the right model, use --api_server=http://{host}:{port}')
    log_path = Path(log_path).resolve()
    env, rpc_folder = rpc_env(env)
    try:
        popen = _spawn(argv, log_path, env, cwd=cwd, cpus=cpus, hint='; is vLLM installed in that environment?')
    except BaseException:
        shutil.rmtree(rpc_folder, ignore_errors=True)
        raise
    url_host = f'[{host}]' if ':' in host else host
    if host in ('0.0.0.0', '::'):
        url_host = '127.0.0.1'
    record = replace(_record(popen, f'http://{url_host}:{port}', model_name, log_path, argv), rpc_folder=rpc_folder)
    return ServerProcess(popen, record)


class LaunchedProcess(ServerProcess):
    """A server another machine (a Ray node) runs, through a launcher process here that stands for it
    (raycluster/launch.py): its pid, log and exit code are the replica's. Whether the server that
    answers is the one started is checked on its node, by the actor that started it."""

    OWNED_WAIT_S = 60.0

    def __init__(self, popen: subprocess.Popen, record: ServerRecord, ready_path: Path):
        super().__init__(popen, record)
        self.ready_path = ready_path

    def _check_it_is_ours(self) -> None:
        owned = Path(f'{self.ready_path}.owned')
        deadline = time.monotonic() + self.OWNED_WAIT_S
        while not owned.exists() and time.monotonic() < deadline and self.returncode() is None:
            time.sleep(0.2)
        answer = owned.read_text().strip() if owned.exists() else 'its node did not say within ' \
            f'{self.OWNED_WAIT_S:.0f} s'
        if answer != 'yes':
            raise PortTakenError(f'{self.url} answered, but not from the vLLM server this run started on '
                                 f'{self.record.where}: {answer}. Leave --port out (each replica then takes a '
                                 f'port free on its node). Log: {self.record.log_path}')


class ContainedProcess(ServerProcess):
    """A server in a container of this machine (containers/served.py), through the process that stands
    for it here (the host's relay, the engine's `podman run` its child): its pid, group, log and exit
    code are that process's. The port's holder must descend from `root_pid()` (the relay, while the
    engine names the container running); what the relay reaches is the socket in the run's own
    folder, mounted into that container only."""

    def __init__(self, popen: subprocess.Popen, record: ServerRecord, root_pid: Callable[[], int | None]):
        super().__init__(popen, record)
        self.root_pid = root_pid

    def _check_it_is_ours(self) -> None:
        port = urllib.parse.urlsplit(self.url).port
        root = self.root_pid()
        other = portowner.not_under(port, root) if port and root else None
        if port and not root:
            other = f'not checked: container {self.record.container} has no running process the engine names'
        if other:
            raise PortTakenError(
                f'{self.url} answered, but not from the vLLM server of container {self.record.container}: port '
                f'{port} is {other}. Leave --port out (each run then takes a free port), or choose another '
                f'--port. Log of ours: {self.record.log_path}')


def start_launched(launcher_argv: list[str], server_argv: list[str], *, model_name: str, log_path: str | Path,
                   ready_path: Path, env: dict, timeout_s: float = 180.0) -> LaunchedProcess:
    """Start a launcher (its own process group, output appended to log_path) that starts the server
    elsewhere and writes ready_path (JSON: url, ip, node, ...) once the server's process runs; returns
    when it has, with the server's URL in the record. EarlyExitError when the launcher ends first."""
    log_path = Path(log_path).resolve()
    for stale in (ready_path, Path(f'{ready_path}.owned')):
        stale.unlink(missing_ok=True)
    popen = _spawn(launcher_argv, log_path, env)
    t0 = time.monotonic()
    while not ready_path.exists():
        code = popen.poll()
        if code is not None or time.monotonic() - t0 > timeout_s:
            if code is None:
                stop(_record(popen, '', model_name, log_path, server_argv), popen=popen)
            raise EarlyExitError(
                f'the replica\'s launcher {"exited with code " + str(code) if code is not None else "timed out"} '
                f'before its server was started.\nLast lines of {log_path}:\n{log_tail(log_path)}')
        time.sleep(0.2)
    info = json.loads(ready_path.read_text())
    where = f'Ray node {info["ip"]} ({info.get("hostname", "")}, node id {str(info.get("node", ""))[:12]})'
    return LaunchedProcess(popen, _record(popen, info['url'], model_name, log_path, info.get('argv', server_argv),
                                          where), ready_path)


def _group_stats(pgid: int):
    """(state, utime+stime ticks) of each process in the group, read from /proc. A process whose main
    thread has exited while another still runs is 'R': until its last thread ends it holds its files
    (a server's listening port among them)."""
    out = []
    if not os.path.isdir('/proc'):
        return out
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            f = Path(f'/proc/{entry}/stat').read_text().rsplit(')', 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(f) > 12 and f[2] == str(pgid):
            state = 'R' if f[0] in ('Z', 'X') and _a_thread_runs(entry) else f[0]
            out.append((state, int(f[11]) + int(f[12])))
    return out


def _a_thread_runs(pid: str) -> bool:
    try:
        tasks = os.listdir(f'/proc/{pid}/task')
    except OSError:
        return False
    for task in tasks:
        try:
            if Path(f'/proc/{pid}/task/{task}/stat').read_text().rsplit(')', 1)[1].split()[0] not in ('Z', 'X'):
                return True
        except (OSError, IndexError):
            continue
    return False


def group_cpu_seconds(pgid: int) -> float:
    """CPU time (user + system) used so far by the live processes of a server's group (for benchmarks)."""
    return sum(ticks for state, ticks in _group_stats(pgid) if state not in ('Z', 'X')) / os.sysconf('SC_CLK_TCK')


def _group_alive(pgid: int) -> bool:
    """True while a process of the group is running (zombies waiting to be reaped do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not os.path.isdir('/proc'):
        return True
    return any(state not in ('Z', 'X') for state, _ in _group_stats(pgid))


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def stop(record: ServerRecord, grace_s: float = STOP_GRACE_S, popen: subprocess.Popen | None = None) -> str:
    """SIGTERM the server's process group, SIGKILL what is left after grace_s; a server in a container:
    the container removed after that, whatever became of its `podman run`. Returns what happened."""
    said = _stop_group(record, grace_s, popen)
    _remove_rpc_folder(record)
    if record.container:
        said += '; ' + remove_container(record)
    return said


CONTAINER_NAME = re.compile(rf'^{re.escape(NAME_PREFIX)}[A-Za-z0-9_.-]{{1,100}}$')


def _removal_refused(record: ServerRecord) -> str:
    """Why the record's removal command is not run ('' when it is the engine's `rm` of the record's
    container): a record is a file (`_stop --server_record=`), and only that command is run from it."""
    argv, rest = list(record.container_rm), list(record.container_rm[1:])
    kind = os.path.basename(argv[0]) if argv else ''
    while kind == 'podman' and rest[:1] in (['--root'], ['--runroot']) and len(rest) >= 2:     # a private store
        rest = rest[2:]
    if kind not in REMOVE or not CONTAINER_NAME.match(record.container) \
            or rest != [*REMOVE[kind], record.container] or not reach_env_ok(kind, record.container_env):
        return (f'container {record.container[:80]!r} NOT removed: the record\'s removal command is not podman\'s or '
                f'docker\'s `rm` of a container of ours ({shell_command(argv)[:200]}); remove it yourself')
    return ''


def socket_folder(log_path: str | Path, container: str) -> Path:
    """The host folder of a container's server socket (containers/served.py): beside the server's log."""
    return Path(log_path).resolve().parent / f'{container}.socket'


def _remove_socket_folder(record: ServerRecord) -> None:
    """The container's socket folder gone when its relay could not remove it (killed by SIGKILL): only
    sockets in it are removed, and the folder only when that empties it."""
    _remove_sockets(socket_folder(record.log_path, record.container))


def remove_container(record: ServerRecord) -> str:
    """The record's container gone (the engine's `rm -f`): the engine's client can die by SIGKILL and
    leave its container running. Its socket folder goes too."""
    refused = _removal_refused(record)
    if refused:
        return refused
    try:
        return _remove(record)
    finally:
        _remove_socket_folder(record)


def _remove(record: ServerRecord) -> str:
    try:
        res = subprocess.run(record.container_rm, capture_output=True, text=True, timeout=120,
                             env={**os.environ, **record.container_env}, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f'container {record.container} NOT removed ({e}); remove it: {shell_command(record.container_rm)}'
    if res.returncode != 0 and 'no such container' in (res.stderr + res.stdout).lower():
        return f'container {record.container} already gone'
    if res.returncode != 0:
        return (f'container {record.container} NOT removed ({(res.stderr or res.stdout).strip()[-300:]}); '
                f'remove it: {shell_command(record.container_rm)}')
    return f'container {record.container} removed'


def _stop_group(record: ServerRecord, grace_s: float, popen: subprocess.Popen | None) -> str:
    if record.where:
        grace_s = max(grace_s, LAUNCHER_GRACE_S)
    if popen is None:
        ticks = _proc_start_ticks(record.pid)
        if ticks is not None and record.start_ticks is not None and ticks != record.start_ticks:
            # Linux does not reuse a PID while its process group lives, so the server's group is gone.
            return f'server pid {record.pid} had already exited (the PID now belongs to another process)'
    elif popen.poll() is not None and not _group_alive(record.pgid):
        return f'server pid {record.pid} had already exited with code {popen.returncode}'
    if not _group_alive(record.pgid):
        return f'server pid {record.pid} had already exited'
    _signal_group(record.pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if popen is not None:
            popen.poll()
        if not _group_alive(record.pgid):
            if popen is not None:
                popen.wait(timeout=10)      # reap it: the group is gone, only a zombie can be left
            return f'server pid {record.pid} stopped (SIGTERM)'
        time.sleep(0.2)
    _signal_group(record.pgid, signal.SIGKILL)
    if popen is not None:
        try:
            popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
    return f'server pid {record.pid} killed (SIGKILL after {grace_s:g} s)'


# ---------------------------------------------------------------- servers that already run

@dataclass(frozen=True)
class ExistingServer:
    url: str
    model_name: str


def check_existing(urls, expected_model_name: str, api_key: str | None = None,
                   timeout_s: float = 10.0) -> list[ExistingServer]:
    """Each URL must answer /v1/models listing expected_model_name; otherwise one error naming every bad URL."""
    urls = list(urls)
    if not urls:
        raise ServerError('no server URLs given; pass --api_server=http://HOST:PORT[,http://HOST:PORT...]')
    problems = []
    for url in urls:
        try:
            status, models = http_get_json(f'{url}/v1/models', timeout_s, api_key)
        except (OSError, urllib.error.URLError) as e:
            problems.append(f'{url}: not reachable ({getattr(e, "reason", e)}); is the server running?')
            continue
        if status != 200:
            hint = ': the API key is missing or wrong (--api_key)' if status == 401 else ''
            problems.append(f'{url}: /v1/models answered HTTP {status}{hint}')
            continue
        names = served_model_names(models)
        if expected_model_name not in names:
            problems.append(f'{url}: serves {names or "no models"}, not {expected_model_name!r}; pass the '
                            f'served name with --served_model_name or point --api_server at the right server')
    if problems:
        mismatch = all('serves' in p for p in problems)
        cls = ModelMismatchError if mismatch else ServerError
        raise cls('--api_server check failed:\n  ' + '\n  '.join(problems))
    return [ExistingServer(url, expected_model_name) for url in urls]
