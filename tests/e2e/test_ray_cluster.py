"""A real two-node Ray cluster on this machine, through the real `cm` (issue 28).

Each node is a network namespace of this test's own (`ip netns`), a head and a worker, joined by a
bridge in a third namespace: no interface of the machine's own network is in any of them, so Ray,
which listens on every interface, and vLLM reach only each other (no default route; checked). The
nodes are started by the steps (`run,ray-node,_head` and `_worker`, the worker waiting for its head),
then, in the head's namespace:

1. the main command on the cluster (`--ray_address`, Offline, test mode, 4 queries), given the
   session's vLLM environment (`--vllm_python`: checked and recorded, nothing installed): one replica per
   node, VALID, both endpoints' shares and the nodes in the record; every vLLM and Ray process it
   started, read from /proc while it runs, has usage reporting off;
2. the same with one replica whose vLLM is killed (SIGKILL) once its test is under way: one error
   naming the replica and its node, no launcher or vLLM left, the cluster it only joined still up.

The nodes are then stopped with `_stop` and nothing of them is left. The namespaces are removed,
and any process left in them killed, whatever happens. Before that, in the machine's own namespace,
the same commands given a Ray address where nothing listens end with that error: they install what
the namespaces cannot download (no network there)."""
import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

import chain
from costs import LEDGER, NO_QUERY_WORK_S, STOP_WAIT_S, work_in

pytestmark = pytest.mark.e2e
NAME = "test_ray_cluster"
SUBNET = "10.213.7"
HEAD_IP, WORKER_IP = f"{SUBNET}.2", f"{SUBNET}.3"
ADDRESS = f"{HEAD_IP}:6379"
NOWHERE = "127.0.0.1:1"          # loopback, where nothing listens


def ip(*args):
    res = subprocess.run(["ip", *args], capture_output=True, text=True)
    assert res.returncode == 0, f"ip {' '.join(args)}: {res.stderr}"
    return res.stdout


def ns_pids(ns: str) -> list[int]:
    res = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
    return [int(p) for p in res.stdout.split()] if res.returncode == 0 else []


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def environ(pid: int) -> dict:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(kv.split("=", 1) for kv in raw.decode(errors="replace").split("\0") if "=" in kv)


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def live(ns: str, *words: str) -> list[str]:
    """The running processes in ns whose command line holds one of words (all of them without words)."""
    return [f"{p}: {cmdline(p)[:160]}" for p in ns_pids(ns)
            if running(p) and (not words or any(w in cmdline(p) for w in words))]


@pytest.fixture
def namespaces():
    """(head, worker) namespaces on one bridge; removed, with whatever runs in them, at the end."""
    tag = f"cmr{os.getpid() % 100000}"
    lan, head, worker = f"{tag}-l", f"{tag}-h", f"{tag}-w"
    made = []
    try:
        for ns in (lan, head, worker):
            ip("netns", "add", ns)
            made.append(ns)
            ip("-n", ns, "link", "set", "lo", "up")
        ip("-n", lan, "link", "add", "br0", "type", "bridge")
        ip("-n", lan, "link", "set", "br0", "up")
        for ns, addr, side in ((head, HEAD_IP, "h"), (worker, WORKER_IP, "w")):
            ip("-n", lan, "link", "add", f"{tag}{side}0", "type", "veth", "peer", "name", f"{tag}{side}1", "netns", ns)
            ip("-n", lan, "link", "set", f"{tag}{side}0", "master", "br0", "up")
            ip("-n", ns, "addr", "add", f"{addr}/24", "dev", f"{tag}{side}1")
            ip("-n", ns, "link", "set", f"{tag}{side}1", "up")
            routes = ip("-n", ns, "route")
            assert "default" not in routes and routes.startswith(f"{SUBNET}.0/24"), routes
        yield head, worker
    finally:
        for ns in made:
            for pid in ns_pids(ns):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        time.sleep(0.5)
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def in_ns(ns: str | None, args: list[str], env: dict, log: Path, cwd: Path) -> subprocess.Popen:
    prefix = ["ip", "netns", "exec", ns] if ns else []
    with open(log, "w") as out:
        return subprocess.Popen([*prefix, chain.CM, *args], env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=cwd, start_new_session=True)


def finish(proc: subprocess.Popen, log: Path, limit_s: float) -> tuple[int, str]:
    try:
        rc = proc.wait(timeout=limit_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=STOP_WAIT_S)
        raise AssertionError(f"no end within {limit_s:.0f} s:\n{log.read_text(errors='replace')[-4000:]}") from None
    return rc, log.read_text(errors="replace")


def offline(results: Path, *extra: str) -> list[str]:
    return ["run", "script", "--tags=run-mlperf,inference,_performance-only,_embedded", f"--model={chain.MODEL}",
            "--division=open", "--device=cpu", "--execution_mode=test", "--quiet", "--scenario=Offline",
            f"--inference_src={chain.inference_source(chain.ROUND)}", f"--results_dir={results}", *extra]


class UsageWatch(threading.Thread):
    """Reads the environment of every vLLM and Ray process in the namespaces while a run goes on."""

    def __init__(self, namespaces):
        super().__init__(daemon=True)
        self.namespaces, self.stop, self.seen, self.bad = namespaces, threading.Event(), {}, []

    def run(self):
        while not self.stop.is_set():
            for ns in self.namespaces:
                for pid in ns_pids(ns):
                    line, env = cmdline(pid), environ(pid)
                    kind = ("launcher" if "launch.py" in line else "vllm" if "vllm.entrypoints" in line else
                            "ray" if ("raylet" in line or "gcs_server" in line) else None)
                    if kind is None or not env or pid in self.seen:
                        continue
                    self.seen[pid] = kind
                    wrong = {k: env.get(k) for k, want in (("RAY_USAGE_STATS_ENABLED", "0"), ("DO_NOT_TRACK", "1"))
                             if env.get(k) != want}
                    if kind in ("vllm", "launcher") and env.get("VLLM_NO_USAGE_STATS") != "1":
                        wrong["VLLM_NO_USAGE_STATS"] = env.get("VLLM_NO_USAGE_STATS")
                    if kind == "vllm":     # vLLM's own process: its Ray and tracking switches come with it
                        wrong.pop("RAY_USAGE_STATS_ENABLED", None)
                    if wrong:
                        self.bad.append(f"{kind} pid {pid} ({line[:120]}): {wrong}")
            time.sleep(0.5)


def test_two_ray_nodes_in_namespaces_serve_one_replica_each_and_a_killed_replica_is_named(
        tmp_path, cm_env, vllm_python, pace, namespaces):
    head_ns, worker_ns = namespaces
    t_start = time.monotonic()
    env = dict(cm_env)
    node_limit = pace.limit_s(queries=0, server_starts=1)

    # in the machine's namespace: nothing at the address, said; what the namespaces cannot download is installed
    for args, says in (
            (offline(tmp_path / "nowhere", f"--ray_address={NOWHERE}", "--test_query_count=4"),
             f"nothing answers at the Ray cluster address {NOWHERE}"),
            (["run", "script", "--tags=run,ray-node,_worker", f"--vllm_python={vllm_python}",
              f"--ray_address={NOWHERE}", "--ray_wait=1", "--quiet"],
             f"the Ray head at {NOWHERE} does not answer after 1 s")):
        rc, out = finish(in_ns(None, args, env, tmp_path / "nowhere.log", tmp_path), tmp_path / "nowhere.log",
                         pace.limit_s(queries=0, server_starts=1) + NO_QUERY_WORK_S)
        assert rc != 0 and says in out, out[-3000:]

    # the nodes, started by the steps: the worker first, waiting for its head
    worker_dir, head_dir = tmp_path / "worker", tmp_path / "head"
    worker_dir.mkdir(), head_dir.mkdir()
    worker = in_ns(worker_ns, ["run", "script", "--tags=run,ray-node,_worker", f"--vllm_python={vllm_python}",
                               f"--ray_address={ADDRESS}", f"--ray_node_ip={WORKER_IP}", "--ray_num_cpus=1",
                               "--ray_wait=120", "--quiet"], env, worker_dir / "cm.log", worker_dir)
    head = in_ns(head_ns, ["run", "script", "--tags=run,ray-node,_head", f"--vllm_python={vllm_python}",
                           f"--ray_node_ip={HEAD_IP}", "--ray_num_cpus=1", "--ray_nodes=2", "--quiet"],
                 env, head_dir / "cm.log", head_dir)
    records = {}
    for name, proc, folder in (("head", head, head_dir), ("worker", worker, worker_dir)):
        rc, out = finish(proc, folder / "cm.log", node_limit)
        assert rc == 0, out[-3000:]
        assert "usage reporting off" in out and "--disable-usage-stats" in out, out[-3000:]
        (records[name],) = re.findall(r"--tags=run,ray-node,_stop --ray_record=(\S+)", out)
    assert "raylet" in " ".join(live(head_ns)) and "raylet" in " ".join(live(worker_ns))

    try:
        # 1. one replica per node, VALID, shares and nodes recorded, no usage reported
        results = tmp_path / "results"
        watch = UsageWatch([head_ns, worker_ns])
        watch.start()
        # given the vLLM environment the session has (issue 38: a vLLM of your own): checked, installed none, recorded
        rc, out = finish(in_ns(head_ns, offline(results, f"--ray_address={ADDRESS}", "--test_query_count=4",
                                                f"--vllm_python={vllm_python}"),
                               env, tmp_path / "run.log", tmp_path), tmp_path / "run.log",
                         pace.limit_s(queries=4, server_starts=2))
        watch.stop.set()
        watch.join()
        assert rc == 0, out[-4000:]
        assert "Offline     performance VALID" in out, out[-4000:]
        assert f"using vLLM 0.32.0 (CPU build, torch 2.13.0+cpu) in {vllm_python}: nothing installed" in out, out[-4000:]
        whole = json.loads((results / "cm4mlperf-record.json").read_text())
        assert "install-vllm" not in {s["script"] for s in whole["steps"]}
        assert (whole["versions"]["vllm"], whole["versions"]["vllm_build"]) == ("0.32.0", "cpu"), whole["versions"]
        record = whole["server"]
        assert HEAD_IP in record["ray_nodes"] and WORKER_IP in record["ray_nodes"], record
        assert f"Ray node {HEAD_IP}" in record["placement"] and f"Ray node {WORKER_IP}" in record["placement"]
        (shares,) = record["endpoint_shares"].values()
        assert sorted(u.split("//")[1].split(":")[0] for u in shares) == [HEAD_IP, WORKER_IP], shares
        assert all(n > 0 for n in shares.values()) and sum(shares.values()) == 4, shares
        assert sorted(set(watch.seen.values())) == ["launcher", "ray", "vllm"], watch.seen
        assert list(watch.seen.values()).count("vllm") >= 2 and watch.bad == [], watch.bad
        assert live(head_ns, "vllm.entrypoints", "launch.py") == [] == live(worker_ns, "vllm.entrypoints")
        first = out

        # 2. the replica's vLLM killed during its test: one error naming it, nothing of the run left
        killed = tmp_path / "killed"
        log = tmp_path / "killed.log"
        proc = in_ns(head_ns, offline(killed, f"--ray_address={ADDRESS}", "--replicas=1", "--test_query_count=64"),
                     env, log, tmp_path)
        deadline = time.monotonic() + pace.limit_s(queries=0, server_starts=1)
        while not any(p.stat().st_size > 0 for p in killed.rglob("harness.log")):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-4000:]
            time.sleep(0.5)
        (victim,) = [p for p in ns_pids(head_ns) if running(p) and "vllm.entrypoints" in cmdline(p)
                     and "launch.py" not in cmdline(p)]      # vLLM's API server (its engine core is renamed)
        os.kill(victim, signal.SIGKILL)
        rc, out = finish(proc, log, NO_QUERY_WORK_S)     # its server is gone: the run ends, no more work
        assert rc != 0, out[-4000:]
        error = out[out.index("CM error:"):]
        assert f"the vLLM server this run started at http://{HEAD_IP}:" in error, error[:3000]
        assert f"on Ray node {HEAD_IP}" in error and "exited with code" in error, error[:3000]
        assert f"vLLM on Ray node {HEAD_IP}" in error and "exited with code -9" in error, error[:3000]   # its log
        assert live(head_ns, "vllm.entrypoints", "launch.py") == [] == live(worker_ns, "vllm.entrypoints")
        assert "raylet" in " ".join(live(head_ns)) and "raylet" in " ".join(live(worker_ns)), \
            "the cluster the run only joined was stopped"
    finally:
        for name, ns in (("worker", worker_ns), ("head", head_ns)):
            stop = subprocess.run(["ip", "netns", "exec", ns, chain.CM, "run", "script", "--tags=run,ray-node,_stop",
                                   f"--ray_record={records[name]}", "--quiet"], env=env, capture_output=True,
                                  text=True, stdin=subprocess.DEVNULL)
            assert stop.returncode == 0, stop.stdout[-2000:] + stop.stderr[-2000:]
    assert live(head_ns) == [] and live(worker_ns) == [], "processes left after _stop"
    LEDGER.charge(NAME, work_in(results, first, cm_runs=7, seconds=time.monotonic() - t_start))
