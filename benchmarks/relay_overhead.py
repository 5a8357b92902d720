"""Streamed tokens/s through the relay of `--docker`'s server (containers/relay.py: a loopback port in
front of the server's Unix socket) against the same server reached on its socket directly.

    python benchmarks/relay_overhead.py [--requests 64] [--tokens 512] [--rounds 3]

The server is the stand-in vLLM (tests/fixtures/vllm: the OpenAI protocol, one SSE event per
token, no model) on a Unix socket, as vLLM's `--uds` listens in the container: it answers as fast
as Python can, so the rate measured is far above this host's vLLM and the ratio is the relay's cost
near its own limit, what a GPU's streamed rates would ask of it. Each round sends N streamed requests
of T tokens at once and counts the SSE events received; the two sides alternate (socket, relay,
socket, relay, ...) on one running server, each timed over the same span (its batch).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "automation"))
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "vllm"))

import aiohttp  # noqa: E402

from standin.process import standin_env  # noqa: E402


async def one_batch(sock: str, url: str, requests: int, tokens: int) -> tuple[int, float]:
    """(SSE events with a token, seconds) for `requests` streamed completions sent at once, on the
    Unix socket `sock` (url's host unused) or, with sock "", over TCP to url."""
    connector = aiohttp.UnixConnector(path=sock, limit=0) if sock else aiohttp.TCPConnector(limit=0)
    body = {"model": "m", "prompt": "a b c d", "max_tokens": tokens, "stream": True, "ignore_eos": True}

    async def one(session: aiohttp.ClientSession) -> int:
        n = 0
        async with session.post(f"{url}/v1/completions", json=body) as r:
            r.raise_for_status()
            async for line in r.content:
                if line.startswith(b"data: {"):
                    n += 1
        return n
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=600)) as s:
        t0 = time.perf_counter()
        counts = await asyncio.gather(*(one(s) for _ in range(requests)))
        return sum(counts), time.perf_counter() - t0


def wait_for(check, timeout_s: float = 60) -> None:
    t0 = time.monotonic()
    while not check():
        if time.monotonic() - t0 > timeout_s:
            raise SystemExit("the stand-in or the relay did not come up")
        time.sleep(0.1)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="relay-overhead-"))
    sock = work / "server.sock"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = standin_env()
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "automation"), env["PYTHONPATH"]])
    standin = [sys.executable, "-m", "standin", "--model-name=m", f"--output-tokens={a.tokens}", f"--uds={sock}"]
    relay = subprocess.Popen([sys.executable, "-m", "mlperf_llm.containers.relay", f"--listen=127.0.0.1:{port}",
                              f"--socket={sock}", "--", *standin], env=env, stdout=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        wait_for(sock.exists)
        rates: dict[str, list[float]] = {"socket": [], "relay": []}
        print(f"{a.requests} streamed requests x {a.tokens} tokens at once; load average before: "
              f"{os.getloadavg()[0]:.1f}", flush=True)
        for r in range(a.rounds + 1):                       # round 0 warms both paths up, not counted
            for side in ("socket", "relay"):
                url = "http://localhost" if side == "socket" else f"http://127.0.0.1:{port}"
                events, seconds = asyncio.run(one_batch(str(sock) if side == "socket" else "", url, a.requests,
                                                        a.tokens))
                assert events == a.requests * a.tokens, (side, events)
                if r:
                    rates[side].append(events / seconds)
                    print(f"round {r} {side:6s}: {events / seconds:9.0f} tokens/s", flush=True)
        best = max(rates["relay"]) / max(rates["socket"])
        mid = statistics.median(rates["relay"]) / statistics.median(rates["socket"])
        print(json.dumps({"relay_over_socket_best": round(best, 3), "relay_over_socket_median": round(mid, 3),
                          "socket_best_tokens_per_s": round(max(rates["socket"])),
                          "relay_best_tokens_per_s": round(max(rates["relay"]))}))
        print(f"relay / socket: best {best:.3f}, median {mid:.3f}; load average after: {os.getloadavg()[0]:.1f}")
    finally:
        os.killpg(relay.pid, 15)
        relay.wait(timeout=30)


if __name__ == "__main__":
    main()
