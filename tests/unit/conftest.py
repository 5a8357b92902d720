"""Unit tests run in this process only: no subprocess, no network, no server (those belong in
tests/integration). Every unit test runs with process creation and socket connect/bind refused, so a
test that needs them fails and says where it belongs instead of passing in the wrong folder."""
import os
import platform
import socket
import subprocess

import pytest

platform.uname().processor    # the standard library asks `uname -p` once and caches it: ask before the guard

WHERE = ("tests/unit runs in this process only (no subprocess, no network, no server); "
         "move this test to tests/integration")


def _refuse(what):
    def refused(*args, **kwargs):
        raise AssertionError(f"a unit test tried to {what}: {WHERE}")
    return refused


@pytest.fixture(autouse=True)
def _in_process_only(monkeypatch):
    monkeypatch.setattr(subprocess.Popen, "_execute_child", _refuse("start a process (subprocess)"))
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, _refuse(f"start a process (os.{name})"))
    for name in ("connect", "connect_ex", "bind"):
        monkeypatch.setattr(socket.socket, name, _refuse(f"open a network connection or port (socket.{name})"))
    yield
