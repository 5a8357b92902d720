"""A loopback port in front of a server that has no network: vLLM in a container started with
`--network none` listens on a Unix socket in a folder of the run mounted into it (`--uds`), and this
process, on the host, listens where the harness expects the server (127.0.0.1:PORT, or the --host
asked for) and forwards each connection to that socket, bytes as they come. It starts the command that runs the container (the
engine's client) as its child, so that the two are one process group: the server's pid, group and
log are this process's; it ends with the child's exit code when the child ends, and on SIGTERM,
SIGINT or SIGHUP stops the child first. The socket goes with it.

    python -m mlperf_llm.containers.relay --listen 127.0.0.1:PORT --socket DIR/NAME -- ENGINE ARGS...

The socket is reached by its name inside its folder (this process works in that folder), so a
folder deep in a cache is no trouble to AF_UNIX's 108-byte limit on paths.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

CHUNK = 1 << 16
STOP_WAIT_S = 30.0


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m mlperf_llm.containers.relay")
    ap.add_argument("--listen", required=True, help="HOST:PORT where the server is expected (127.0.0.1:PORT)")
    ap.add_argument("--socket", required=True, help="the server's Unix socket (it need not exist yet)")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- the command that runs the server")
    a = ap.parse_args(argv)
    if a.command[:1] == ["--"]:
        a.command = a.command[1:]
    if not a.command:
        ap.error("no command after --: the command that runs the server")
    host, _, port = a.listen.rpartition(":")
    if not host or not port.isdigit():
        ap.error(f"--listen {a.listen!r}: HOST:PORT, as the server would listen (127.0.0.1:8000)")
    a.host, a.port = host.strip("[]"), int(port)
    return a


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """reader's bytes to writer until either side ends; then writer is closed."""
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


def _handler(socket_name: str):
    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_unix_connection(socket_name)
        except OSError:             # not listening yet (loading) or gone: the client sees a closed connection
            client_w.close()
            return
        try:
            await asyncio.gather(_pump(client_r, server_w), _pump(server_r, client_w))
        except asyncio.CancelledError:     # the relay stopping with the connection open: closed, not logged
            client_w.close()
            server_w.close()
    return handle


async def serve(listener: socket.socket, socket_name: str, child: subprocess.Popen) -> int:
    """Forward connections until the child ends or a stop signal comes; the child's exit code (or
    128 + the signal's number when stopped)."""
    loop = asyncio.get_running_loop()
    stopped = asyncio.Event()
    got: list[int] = []

    def on_signal(sig: int) -> None:
        got.append(sig)
        stopped.set()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, on_signal, sig)
    server = await asyncio.start_server(_handler(socket_name), sock=listener)
    ended = loop.run_in_executor(None, child.wait)
    stop = asyncio.ensure_future(stopped.wait())
    await asyncio.wait({ended, stop}, return_when=asyncio.FIRST_COMPLETED)
    server.close()
    if not ended.done():
        child.send_signal(got[0] if got else signal.SIGTERM)
        try:
            await asyncio.wait_for(asyncio.shield(ended), STOP_WAIT_S)
        except asyncio.TimeoutError:
            child.kill()
            await ended
    stop.cancel()
    return 128 + got[0] if got else child.returncode


def main(argv: list[str] | None = None) -> int:
    a = parse(sys.argv[1:] if argv is None else argv)
    folder, name = os.path.split(os.path.abspath(a.socket))
    if not os.path.isdir(folder):
        print(f"relay: --socket={a.socket}: its folder {folder} does not exist (the launcher makes it before the "
              "server starts)", flush=True)
        return 2
    try:
        listener = socket.create_server((a.host, a.port), family=socket.AF_INET6 if ":" in a.host else socket.AF_INET)
    except OSError as e:
        print(f"relay: cannot listen on {a.listen}: {e.strerror}; choose another --port", flush=True)
        return 98
    os.chdir(folder)
    try:
        child = subprocess.Popen(a.command, stdin=subprocess.DEVNULL)
    except OSError as e:
        print(f"relay: cannot start {a.command[0]!r}: {e.strerror}", flush=True)
        return 127
    print(f"relay: {a.listen} -> {a.socket} (the server's socket), for pid {child.pid}", flush=True)
    try:
        return asyncio.run(serve(listener, name, child))
    finally:
        if child.poll() is None:
            child.kill()
        Path(name).unlink(missing_ok=True)
        try:
            os.rmdir(folder)        # the launcher's folder for it, when nothing else is there
        except OSError:
            pass


if __name__ == "__main__":
    sys.exit(main())
