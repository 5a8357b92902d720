"""The relay of a server with no network (containers/relay.py): a loopback port in front of a Unix
socket, its command its child in one process group. Here the command is the stand-in vLLM on a Unix
socket, as vLLM's `--uds` in the image's container listens: requests reach it through the port,
the group stops together, and nothing is left (the socket, its folder, the child)."""
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from standin.process import standin_env

from mlperf_llm.containers import relay
from mlperf_llm.vllm import server

AUTOMATION = str(Path(relay.__file__).resolve().parents[2])        # the folder mlperf_llm is in


def _start(tmp_path, port: int, command: list[str]) -> tuple[subprocess.Popen, object]:
    folder = tmp_path / "x.socket"
    folder.mkdir(mode=0o700)
    env = standin_env()
    env["PYTHONPATH"] = os.pathsep.join([AUTOMATION, env["PYTHONPATH"]])
    p = subprocess.Popen([sys.executable, "-m", "mlperf_llm.containers.relay", f"--listen=127.0.0.1:{port}",
                          f"--socket={folder}/server.sock", "--", *command], env=env, start_new_session=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p, folder


def _standin(folder) -> list[str]:
    return [sys.executable, "-m", "standin", "--model-name=m", f"--uds={folder}/server.sock"]


def _ready(url: str, p: subprocess.Popen, timeout_s: float = 60) -> None:
    t0 = time.monotonic()
    while (why := server.probe(url, "m")) is not None:
        assert p.poll() is None, p.stdout.read()
        assert time.monotonic() - t0 < timeout_s, why
        time.sleep(0.2)


def test_requests_reach_the_socket_and_the_group_stops_together(tmp_path):
    port = server.free_port("127.0.0.1")
    p, folder = _start(tmp_path, port, _standin(tmp_path / "x.socket"))
    url = f"http://127.0.0.1:{port}"
    try:
        _ready(url, p)
        body = json.dumps({"model": "m", "prompt": "hello there", "max_tokens": 4}).encode()
        req = urllib.request.Request(f"{url}/v1/completions", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            answer = json.load(r)
        assert answer["choices"][0]["text"] and answer["usage"]["completion_tokens"] == 4
        assert server.portowner.not_under(port, p.pid) is None          # the port's holder: the relay
        os.killpg(p.pid, signal.SIGTERM)                                # what server.stop sends first
        assert p.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert not folder.exists()                                          # the socket and its folder went
    assert "not reachable" in server.probe(url, "m")
    with pytest.raises(ProcessLookupError):
        os.killpg(p.pid, 0)                                             # the stand-in went with it


def test_before_the_socket_listens_a_client_sees_a_closed_connection(tmp_path):
    port = server.free_port("127.0.0.1")
    p, _ = _start(tmp_path, port, [sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        t0 = time.monotonic()
        while "refused" in (server.probe(f"http://127.0.0.1:{port}", "m") or "") and time.monotonic() - t0 < 30:
            time.sleep(0.1)                                             # the relay binding its port
        assert "not reachable" in server.probe(f"http://127.0.0.1:{port}", "m")
        assert p.poll() is None
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=30)


def test_the_commands_end_ends_the_relay_with_its_code(tmp_path):
    p, folder = _start(tmp_path, server.free_port("127.0.0.1"), [sys.executable, "-c", "raise SystemExit(7)"])
    assert p.wait(timeout=60) == 7
    assert not folder.exists()


def test_a_taken_port_is_said_and_the_command_never_starts(tmp_path):
    import socket
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        marker = tmp_path / "started"
        p, _ = _start(tmp_path, port, [sys.executable, "-c", f"open({str(marker)!r}, 'w')"])
        out, _ = p.communicate(timeout=60)
    assert p.returncode == 98 and f"cannot listen on 127.0.0.1:{port}" in out and "another --port" in out
    assert not marker.exists()


def test_a_socket_in_a_missing_folder_is_said_and_nothing_starts(tmp_path):
    marker = tmp_path / "started"
    env = dict(standin_env(), PYTHONPATH=AUTOMATION)
    out = subprocess.run([sys.executable, "-m", "mlperf_llm.containers.relay", "--listen=127.0.0.1:0",
                          f"--socket={tmp_path}/gone/server.sock", "--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and f"its folder {tmp_path}/gone does not exist" in out.stdout
    assert not marker.exists()
