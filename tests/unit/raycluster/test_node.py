"""A Ray node's command and the processes that are its own (read from a /proc written here)."""
import subprocess

import pytest

from mlperf_llm.raycluster import node
from mlperf_llm.raycluster.placement import RayClusterError, RayNode, choose, ray_env
from mlperf_llm.vllm.command import RAY_NO_USAGE_STATS_SWITCH, ServeConfig, ray_guidance


def test_the_head_runs_without_dashboard_or_usage_reporting_in_a_folder_of_its_own():
    argv = node.start_argv("/venv/bin/python", "head", "10.0.0.1", "/tmp/cmray-x", port=6380, num_cpus=2)
    assert argv[:4] == ["/venv/bin/python", "-m", "ray.scripts.scripts", "start"]
    assert {"--head", "--port=6380", "--include-dashboard=false", "--disable-usage-stats",
            "--node-ip-address=10.0.0.1", "--temp-dir=/tmp/cmray-x", "--num-cpus=2"} <= set(argv)
    worker = node.start_argv("p", "worker", "10.0.0.2", "/tmp/cmray-y", address="10.0.0.1:6380", usage_stats=True)
    assert "--address=10.0.0.1:6380" in worker and "--head" not in worker and "--disable-usage-stats" not in worker


def test_every_ray_start_the_code_builds_or_prints_reports_nothing():
    built = [node.start_argv("p", "head", "10.0.0.1", "/tmp/cmray-x"),
             node.start_argv("p", "worker", "10.0.0.2", "/tmp/cmray-y", address="10.0.0.1:6379")]
    assert all(RAY_NO_USAGE_STATS_SWITCH in argv for argv in built)
    cfg = ServeConfig(model="m", tensor_parallel_size=2, distributed_executor_backend="ray", ray_address="10.1.2.3")
    shown = [line for line in ray_guidance(cfg) if "ray start" in line]
    assert len(shown) == 2
    assert all(line.endswith(RAY_NO_USAGE_STATS_SWITCH) and "RAY_USAGE_STATS_ENABLED=0 " in line for line in shown)


def test_a_start_says_its_command_and_that_ray_listens_on_every_interface(tmp_path, monkeypatch):
    monkeypatch.setattr(node, "TEMP_BASE", str(tmp_path))
    monkeypatch.setattr(node.subprocess, "run", lambda argv, **kw: subprocess.CompletedProcess(argv, 0))
    logs = []
    record = node.start("/venv/bin/python", "/site", "head", tmp_path, node_ip="10.0.0.1", port=6380, log=logs.append)
    assert RAY_NO_USAGE_STATS_SWITCH in logs[0] and "usage reporting off" in logs[0]
    assert logs[-1] == ("note: this Ray head listens on every interface of this machine, not only 10.0.0.1: the GCS "
                        "(port 6380), the raylet's ports and its metrics port (ports Ray picks); let only the "
                        "cluster's nodes reach them (a firewall, or the cluster's own network)")
    record.save(tmp_path / "record.json")                  # the folder it made is one a stop accepts
    assert node.NodeRecord.load(tmp_path / "record.json") == record


def test_a_loopback_head_or_a_worker_says_only_what_listens_beyond_its_address():
    head = node.NodeRecord("head", "127.0.0.1:6379", "127.0.0.1", "/tmp/cmray-x", "t", "p", "l", False, 0.0)
    assert "the GCS (port 6379), the raylet's ports (ports Ray picks)" in node.listening_note(head)
    worker = node.NodeRecord("worker", "10.0.0.1:6379", "10.0.0.2", "/tmp/cmray-y", "t", "p", "l", False, 0.0)
    assert "not only 10.0.0.2: the raylet's ports and its metrics port" in node.listening_note(worker)


def test_rays_environment_reports_nothing_unless_asked():
    env = ray_env("/site", base={"PYTHONPATH": "/mine"})
    assert env["PYTHONPATH"] == "/site:/mine"
    assert env["RAY_USAGE_STATS_ENABLED"] == "0" and env["VLLM_NO_USAGE_STATS"] == "1" and env["DO_NOT_TRACK"] == "1"
    assert "RAY_USAGE_STATS_ENABLED" not in ray_env("/site", usage_stats=True, base={})


@pytest.mark.parametrize("role, says", [("master", "use head"), ("", "use head")])
def test_a_role_that_is_neither_head_nor_worker_is_refused(role, says):
    with pytest.raises(RayClusterError, match=says):
        node.check_role(role)


@pytest.mark.parametrize("address", ["10.0.0.1", "10.0.0.1:x", ":6379", "10.0.0.1:70000"])
def test_an_address_without_a_port_is_refused(address):
    with pytest.raises(RayClusterError, match="is not HOST:PORT"):
        node.split_address(address)


def _node(i, head=False):
    return RayNode(id=f"{i:056x}", ip=f"10.0.0.{i}", hostname="h", cpus=1.0, memory_bytes=1 << 30, head=head)


def test_one_replica_per_node_or_the_first_n_and_never_more_than_the_nodes():
    nodes = [_node(1, head=True), _node(2), _node(3)]
    assert choose(nodes, None) == nodes
    assert choose(nodes, 2) == nodes[:2]
    with pytest.raises(RayClusterError, match="--replicas=4 on a Ray cluster of 3 node.*takes a node of its own"):
        choose(nodes, 4)
    with pytest.raises(RayClusterError, match="no live node"):
        choose([], None)


def _proc(tmp_path, pid, ppid, environ=b"", fds=()):
    d = tmp_path / str(pid)
    (d / "fd").mkdir(parents=True)
    (d / "environ").write_bytes(environ)
    (d / "stat").write_text(f"{pid} (x) S {ppid} {pid} {pid} 0")
    for i, target in enumerate(fds):
        (d / "fd" / str(i)).symlink_to(target)


def test_the_nodes_processes_are_found_by_its_token_its_folder_and_their_children(tmp_path, monkeypatch):
    proc = tmp_path / "proc"
    _proc(proc, 100, 1, b"A=1\0CM4MLPERF_RAY_NODE=tok\0")                  # raylet: the token
    _proc(proc, 101, 100)                                                  # its worker: a child
    _proc(proc, 102, 1, b"\0\0garbled by setproctitle", fds=["/tmp/cmray-a/session/logs/agent.log"])
    _proc(proc, 200, 1, b"CM4MLPERF_RAY_NODE=other\0", fds=["/tmp/cmray-b/x"])   # another node
    _proc(proc, 300, 1, b"B=2\0")
    import cmcontract.proctree as proctree
    parents = {int(p.name): int((p / "stat").read_text().split()[3]) for p in proc.iterdir()}
    monkeypatch.setattr(proctree, "_children_by_parent",
                        lambda: {ppid: [c for c, p in parents.items() if p == ppid] for ppid in set(parents.values())})
    assert node.processes("tok", "/tmp/cmray-a", proc=str(proc)) == [100, 101, 102]
