"""A Ray node on this machine, started (the head) or joined (a worker) with `ray start`, and stopped.

`ray start` leaves its processes running in the background (GCS, raylet, their agents and workers).
Each node this module starts gets a token in the environment of `ray start` (MARK), which every
process of the node inherits: stopping it signals exactly those processes (read from
/proc/PID/environ), never another node's on the same machine (`ray stop` would stop every Ray
process of the user, a cluster the run only joined included). Its temporary folder is one of its
own, short (Ray's socket paths must fit 107 bytes), removed at the stop.

The record a later process stops the node from is a JSON file anyone with write access may have
edited: it is checked before anything is signalled or deleted (NodeRecord.load), its folder above
all, which must be one a start made (TEMP_BASE/TEMP_PREFIX*, a real folder of this user's).

Usage reporting is off (`--disable-usage-stats`, RAY_USAGE_STATS_ENABLED=0) unless asked for, and
the dashboard is not started. Ray's GCS, its raylet's ports and (unless the node's address is
loopback) its metrics port listen on every interface of the machine, whatever --node-ip-address
says (Ray's choice, no setting in 2.60): the start says so, and on a real cluster only the
cluster's nodes should reach them; the tests run each node in a network namespace of their own.
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
import uuid
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from cmcontract.proctree import descendants

from ..files import write_json_atomic
from ..vllm.command import RAY_NO_USAGE_STATS_SWITCH
from .placement import RayClusterError, RayNode, list_nodes, ray_env

MARK = "CM4MLPERF_RAY_NODE"
TOKEN = re.compile(r"[0-9a-f]{32}")      # uuid4().hex: what start() gives a node
TEMP_BASE = "/tmp"                       # each node's folder: TEMP_BASE/TEMP_PREFIX..., made by start()
TEMP_PREFIX = "cmray-"
DEFAULT_PORT = 6379
ROLES = ("head", "worker")
STOP_GRACE_S = 10.0
BY_HAND = (f"`grep -l {MARK}= /proc/[0-9]*/environ 2>/dev/null` lists the processes of the Ray nodes this "
           "project started (kill those of this node; `ray stop` stops every Ray process of this user), "
           f"and `ls -ld {TEMP_BASE}/{TEMP_PREFIX}*` their folders (remove this node's)")


@dataclass(frozen=True)
class NodeRecord:
    """What a later process needs to stop a node this project started (saved as JSON)."""
    role: str
    address: str          # the head's HOST:PORT (the cluster's address)
    node_ip: str
    temp_dir: str
    token: str
    python: str
    log_path: str
    usage_stats: bool
    started_at: float

    def save(self, path: str | Path) -> None:
        write_json_atomic(str(path), asdict(self))

    @classmethod
    def load(cls, path: str | Path) -> "NodeRecord":
        """The record saved at path, once every field is one start() could have written (else nothing
        is stopped or deleted: the stop kills by its token and folder and removes the folder)."""
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as e:
            raise RayClusterError(f"cannot read the Ray node record {path} ({e}); was the node started by "
                                  "run-ray-node?") from None
        if not isinstance(data, dict):
            raise _refused(path, "its content", f"is a JSON {type(data).__name__}, not an object")
        names = [f.name for f in fields(cls)]
        for name in names:
            if name not in data:
                raise _refused(path, name, "is missing")
            problem = CHECKS[name](data[name])
            if problem:
                raise _refused(path, f"{name}={data[name]!r}", problem)
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise _refused(path, unknown[0], "is not a field of a Ray node record")
        return cls(**data)


def _refused(path, what: str, reason: str) -> RayClusterError:
    return RayClusterError(f"the Ray node record {path} is refused, nothing was stopped or deleted: {what} {reason}. "
                           f"If it names a node run-ray-node started, delete the record file and stop the node's "
                           f"processes by hand: {BY_HAND}")


def temp_dir_problem(path) -> str | None:
    """Why path is not a folder start() made (None when it is one, or when it is gone already)."""
    if not isinstance(path, str):
        return "is not a path"
    p = Path(path)
    if not p.is_absolute() or p.parent != Path(TEMP_BASE) or not p.name.startswith(TEMP_PREFIX):
        return f"is not a folder {TEMP_PREFIX}* directly in {TEMP_BASE}, where a node's start makes its own"
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return None                       # a cleaned /tmp: nothing to delete, the token still finds the node
    except OSError as e:
        return f"cannot be examined ({e.strerror or e})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link, not the folder a node's start made"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if st.st_uid != os.getuid():
        return f"belongs to another user (uid {st.st_uid}), not to this one (uid {os.getuid()})"
    return None


def _text(value) -> str | None:
    return None if isinstance(value, str) and value.strip() else "is not a non-empty string"


def _address(value) -> str | None:
    try:
        return None if isinstance(value, str) and split_address(value) else "is not HOST:PORT"
    except RayClusterError:
        return "is not HOST:PORT"


CHECKS = {   # NodeRecord's fields: why a value is not one start() writes (None when it is)
    "role": lambda v: None if isinstance(v, str) and v in ROLES else f"is not one of {', '.join(ROLES)}",
    "address": _address,
    "node_ip": _text,
    "temp_dir": temp_dir_problem,
    "token": lambda v: None if isinstance(v, str) and TOKEN.fullmatch(v) else "is not 32 lowercase hex digits",
    "python": _text,
    "log_path": _text,
    "usage_stats": lambda v: None if isinstance(v, bool) else "is not true or false",
    "started_at": lambda v: None if isinstance(v, (int, float)) and not isinstance(v, bool) else "is not a time",
}


def check_role(role: str) -> str:
    if role not in ROLES:
        raise RayClusterError(f"ray_start={role!r}: use head (start a cluster on this node) or worker (join "
                              "the cluster --ray_address names)")
    return role


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise RayClusterError(f"ray_address={address!r} is not HOST:PORT, e.g. 10.0.0.1:{DEFAULT_PORT}")
    return host, int(port)


def ip_towards(host: str) -> str:
    """This machine's address on the route to host (a UDP socket's connect sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect((host, 9))
        except OSError as e:
            raise RayClusterError(f"no route from this machine to the Ray head {host} ({e.strerror or e}); "
                                  "give this node's address with --ray_node_ip") from None
        return s.getsockname()[0]


def wait_for_port(host: str, port: int, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection((host, port), timeout=2):
                return
        except OSError as e:
            if time.monotonic() >= deadline:
                raise RayClusterError(f"{what} at {host}:{port} does not answer after {timeout_s:.0f} s "
                                      f"({e.strerror or e}); start it first, or raise --ray_wait") from None
        time.sleep(1)


def start_argv(python: str, role: str, node_ip: str, temp_dir: str, *, port: int = DEFAULT_PORT,
               address: str = "", num_cpus: int | None = None, usage_stats: bool = False) -> list[str]:
    argv = [python, "-m", "ray.scripts.scripts", "start", f"--node-ip-address={node_ip}", f"--temp-dir={temp_dir}"]
    if not usage_stats:
        argv.append(RAY_NO_USAGE_STATS_SWITCH)
    if role == "head":
        argv += ["--head", f"--port={port}", "--include-dashboard=false"]
    else:
        argv.append(f"--address={address}")
    if num_cpus is not None:
        argv.append(f"--num-cpus={num_cpus}")
    return argv


def start(python: str, site: str, role: str, work_dir: str | Path, *, node_ip: str = "", port: int = DEFAULT_PORT,
          address: str = "", num_cpus: int | None = None, usage_stats: bool = False, wait_s: float = 120.0,
          log=print) -> NodeRecord:
    """Start the head, or join the cluster at address as a worker (waiting up to wait_s for its head)."""
    check_role(role)
    if role == "worker":
        head, head_port = split_address(address)
        wait_for_port(head, head_port, wait_s, "the Ray head")
        node_ip = node_ip or ip_towards(head)
    else:
        node_ip = node_ip or "127.0.0.1"
        address = f"{node_ip}:{port}"
    token = uuid.uuid4().hex
    temp_dir = tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=TEMP_BASE)
    log_path = Path(work_dir).resolve() / f"ray-{role}-{node_ip}.log"
    record = NodeRecord(role, address, node_ip, temp_dir, token, python, str(log_path), usage_stats, time.time())
    argv = start_argv(python, role, node_ip, temp_dir, port=port, address=address, num_cpus=num_cpus,
                      usage_stats=usage_stats)
    env = {**ray_env(site, usage_stats), MARK: token}
    log(f"starting a Ray {role} on {node_ip}" + (f", joining {address}" if role == "worker" else "")
        + f": {' '.join(argv[3:])} (usage reporting {'on, as asked' if usage_stats else 'off'}; log {log_path})")
    with open(log_path, "ab") as out:
        try:
            res = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                 timeout=wait_s + 60)
            failed = f"exited with code {res.returncode}" if res.returncode else ""
        except subprocess.TimeoutExpired:
            failed = f"did not finish within {wait_s + 60:.0f} s"
        except BaseException:
            stop(record)
            raise
    if failed:
        tail = "\n".join(Path(log_path).read_text(errors="replace").splitlines()[-12:])
        stop(record)
        raise RayClusterError(f"ray start ({role} on {node_ip}) {failed}:\n{tail}")
    log(listening_note(record))
    return record


def listening_note(record: NodeRecord) -> str:
    """What of the node listens beyond its address (Ray 2.60, read with `ss -ltnp`: docs/ray.md)."""
    gcs = f"the GCS (port {split_address(record.address)[1]}), " if record.role == "head" else ""
    metrics = "" if record.node_ip.startswith("127.") else " and its metrics port"
    return (f"note: this Ray {record.role} listens on every interface of this machine, not only {record.node_ip}: "
            f"{gcs}the raylet's ports{metrics} (ports Ray picks); let only the cluster's nodes reach them "
            "(a firewall, or the cluster's own network)")


def _holds_files_in(pid: str, folder: str, proc: str) -> bool:
    try:
        fds = os.listdir(f"{proc}/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"{proc}/{pid}/fd/{fd}").startswith(folder + os.sep):
                return True
        except OSError:
            continue
    return False


def processes(token: str, temp_dir: str = "", proc: str = "/proc") -> list[int]:
    """The node's processes: those whose environment holds its token, those with a file open in its
    temporary folder (Ray's agents rename themselves with setproctitle, which overwrites the
    environment /proc shows), and everything they started."""
    needle = f"{MARK}={token}".encode()
    found = set()
    for entry in os.listdir(proc):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if needle in Path(proc, entry, "environ").read_bytes().split(b"\0"):
                found.add(int(entry))
                continue
        except OSError:
            continue
        if temp_dir and _holds_files_in(entry, temp_dir, proc):
            found.add(int(entry))
    found.update(descendants(*found))
    return sorted(found)


def stop(record: NodeRecord, grace_s: float = STOP_GRACE_S) -> str:
    """SIGTERM the node's processes, SIGKILL those left after grace_s; remove its temporary folder."""
    pids = processes(record.token, record.temp_dir)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + (grace_s if sig == signal.SIGTERM else 5.0)
        while pids and time.monotonic() < deadline:
            time.sleep(0.2)
            pids = processes(record.token, record.temp_dir)
        if not pids:
            break
    shutil.rmtree(record.temp_dir, ignore_errors=True)
    left = f"; still running: {pids}" if pids else ""
    return f"Ray {record.role} on {record.node_ip} stopped{left}"


def wait_for_nodes(python: str, site: str, address: str, count: int, timeout_s: float, log=print) -> list[RayNode]:
    """The cluster's live nodes once there are at least `count` (a head waiting for its workers)."""
    deadline = time.monotonic() + timeout_s
    said = 0.0
    while True:
        nodes = list_nodes(python, site, address)
        if len(nodes) >= count:
            return nodes
        if time.monotonic() >= deadline:
            raise RayClusterError(f"the Ray cluster at {address} has {len(nodes)} node(s) after {timeout_s:.0f} s, "
                                  f"not the {count} asked for (--ray_nodes): join the others with --ray_start=worker "
                                  f"--ray_address={address} on each, or raise --ray_wait")
        if time.monotonic() - said >= 15:
            log(f"waiting for Ray nodes: {len(nodes)} of {count} after {timeout_s - (deadline - time.monotonic()):.0f} s")
            said = time.monotonic()
        time.sleep(2)
