"""Who listens on a port (vllm/portowner.py), on recorded /proc layouts: an IPv4 and an IPv6
listener, a connected socket on the same port that is no listener, a process group of two."""
import os

from mlperf_llm.vllm import portowner

TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5001 1 0000000000000000 100 0 0 10 0
   1: 0100007F:A2C4 0100007F:1F40 01 00000000:00000000 00:00000000 00000000     0        0 5002 1 0000000000000000 20 4 30 10 -1
"""
TCP6 = """  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:22B8 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 6001 1 0000000000000000 100 0 0 10 0
"""


def proc_tree(tmp_path, processes):
    """processes: {pid: (pgid, cmdline, [socket inodes])}"""
    root = tmp_path / "proc"
    (root / "net").mkdir(parents=True)
    (root / "net" / "tcp").write_text(TCP)
    (root / "net" / "tcp6").write_text(TCP6)
    for pid, (pgid, cmd, inodes) in processes.items():
        d = root / str(pid)
        (d / "fd").mkdir(parents=True)
        (d / "stat").write_text(f"{pid} (python3) S 1 {pgid} {pgid} 0 -1 4194304 0 0 0 0 1 2 0 0 20 0 1 0")
        (d / "cmdline").write_bytes(b"\0".join(w.encode() for w in cmd.split()) + b"\0")
        os.symlink("/dev/null", d / "fd" / "0")
        for n, inode in enumerate(inodes, 3):
            os.symlink(f"socket:[{inode}]", d / "fd" / str(n))
    return str(root)


def test_listeners_of_a_port_in_both_tables(tmp_path):
    proc = proc_tree(tmp_path, {})
    assert portowner.listening_inodes(8000, proc) == {5001}          # 0x1F40; the connected 5002 is no listener
    assert portowner.listening_inodes(8888, proc) == {6001}          # 0x22B8, IPv6
    assert portowner.listening_inodes(9000, proc) == set()
    assert portowner.listening_inodes(8000, str(tmp_path / "nowhere")) is None


def test_a_port_held_by_a_process_of_the_group_is_ours_and_another_is_named(tmp_path):
    proc = proc_tree(tmp_path, {100: (100, "python -m vllm.entrypoints.openai.api_server --port 8000", [5001]),
                                101: (100, "python engine-core", []),
                                200: (200, "python -m vllm.entrypoints.openai.api_server --port 8000", [])})
    assert sorted(portowner.group_pids(100, proc)) == [100, 101]
    assert portowner.not_ours(8000, 100, proc) is None
    assert portowner.not_ours(8000, 200, proc) == \
        "held by pid 100 (python -m vllm.entrypoints.openai.api_server --port 8000)"
    assert portowner.not_ours(9000, 200, proc) == "no process of the server's group listens there"
    assert portowner.not_ours(8000, 200, str(tmp_path / "nowhere")) is None      # not Linux: unknown, not guessed


def test_a_listener_no_visible_process_holds(tmp_path):
    proc = proc_tree(tmp_path, {200: (200, "python", [])})
    assert portowner.not_ours(8888, 200, proc) == "held by a process this user cannot see"


def test_a_containers_server_is_one_that_descends_from_its_first_process(tmp_path):
    """--docker: the listener must be under the container's first process (containers/served.py),
    however deep; a listener outside it is named."""
    proc = proc_tree(tmp_path, {300: (300, "catatonit -- python", []),
                                301: (301, "python -m vllm.entrypoints.openai.api_server --port 8000", [5001]),
                                400: (400, "catatonit -- python", [])})
    for pid, ppid in ((300, 1), (301, 300), (400, 1)):
        stat = tmp_path / "proc" / str(pid) / "stat"
        stat.write_text(stat.read_text().replace(" S 1 ", f" S {ppid} ", 1))
    assert portowner.descends_from(301, 300, proc) and not portowner.descends_from(301, 400, proc)
    assert portowner.not_under(8000, 300, proc) is None
    assert portowner.not_under(8000, 400, proc) == \
        "held by pid 301 (python -m vllm.entrypoints.openai.api_server --port 8000)"
    assert portowner.not_under(9000, 300, proc) == "no process of the container listens there"
    assert portowner.not_under(8000, 400, str(tmp_path / "nowhere")) is None


def test_a_records_container_removal_runs_only_the_engines_rm_of_a_container_of_ours(tmp_path):
    """`_stop --server_record=FILE` reads a file: its removal command is run only when it is podman's or
    docker's `rm` of a cm4mlperf- container, with nothing in its environment but podman's config."""
    from mlperf_llm.vllm import server
    ok = server.ServerRecord(pid=1, pgid=1, start_ticks=None, url="http://127.0.0.1:1", model_name="m", log_path="l",
                             container="cm4mlperf-vllm-8000-ab12cd34",
                             container_rm=["/usr/bin/podman", "--root", "/s/storage", "--runroot", "/s/run", "rm", "-f",
                                           "-t", "5", "cm4mlperf-vllm-8000-ab12cd34"],
                             container_env={"CONTAINERS_CONF": "/c/containers.conf"})
    assert server._removal_refused(ok) == ""
    import dataclasses
    # docker's `rm` takes no -t (it kills at once) and no private store: what run.remove_argv writes for it
    docker = dataclasses.replace(ok, container_rm=["/usr/local/bin/docker", "rm", "-f", "cm4mlperf-vllm-8000-ab12cd34"],
                                 container_env={})
    assert server._removal_refused(docker) == ""
    # the daemon's local socket a docker record keeps (Engine.reach_env), and only that
    on_socket = dataclasses.replace(docker, container_env={"DOCKER_HOST": "unix:///run/user/1000/docker.sock"})
    assert server._removal_refused(on_socket) == ""
    for bad in (dict(container_rm=["/bin/sh", "-c", "rm -rf ~"]),
                dict(container_rm=["/usr/bin/podman", "rm", "-f", "-t", "5", "somebody-elses"]),
                dict(container="somebody-elses", container_rm=["docker", "rm", "-f", "somebody-elses"]),
                dict(container_rm=["docker", "rm", "-f", "-t", "5", "cm4mlperf-vllm-8000-ab12cd34"]),
                dict(container_rm=["docker", "--root", "/s", "rm", "-f", "cm4mlperf-vllm-8000-ab12cd34"]),
                dict(container_env={"LD_PRELOAD": "/tmp/x.so"}),
                dict(container_env={"DOCKER_HOST": "unix:///run/docker.sock"}),        # podman's record
                dict(container_rm=docker.container_rm, container_env={"DOCKER_HOST": "ssh://someone@elsewhere"}),
                dict(container_rm=docker.container_rm, container_env={"DOCKER_HOST": "tcp://10.0.0.9:2375"}),
                dict(container_rm=docker.container_rm, container_env={"CONTAINERS_CONF": "/c/containers.conf"})):
        refused = server._removal_refused(dataclasses.replace(ok, **bad))
        assert "NOT removed" in refused and "remove it yourself" in refused
    assert "NOT removed" in server.remove_container(dataclasses.replace(ok, container_rm=["/bin/sh", "-c", "true"]))
