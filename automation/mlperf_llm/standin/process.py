"""Run the stand-in as a child process (so it can die for real) or in a thread."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import asdict
from pathlib import Path

from .server import StandinConfig, serve

_AUTOMATION_DIR = str(Path(__file__).resolve().parents[2])


def _cli_args(cfg: StandinConfig, responses_file: str | None) -> list[str]:
    d = asdict(cfg)
    args = []
    for key in ("model_name", "max_model_len", "output_tokens", "ttft_ms", "tpot_ms", "error_every",
                "die_after", "tokenizer_offset"):
        args += ["--" + key.replace("_", "-"), str(d[key])]
    if responses_file:
        args += ["--responses", responses_file]
    return args


class StandinProcess:
    """`with StandinProcess(cfg) as sp: sp.url` — a stand-in in its own process, killed on exit."""

    def __init__(self, cfg: StandinConfig | None = None, start_timeout_s: float = 30.0):
        self.cfg = cfg or StandinConfig()
        self.start_timeout_s = start_timeout_s
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self._tmp: tempfile.TemporaryDirectory | None = None

    def start(self) -> "StandinProcess":
        responses_file = None
        if self.cfg.responses:
            self._tmp = tempfile.TemporaryDirectory(prefix="standin-")
            responses_file = os.path.join(self._tmp.name, "responses.json")
            Path(responses_file).write_text(json.dumps(self.cfg.responses))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([_AUTOMATION_DIR] + [p for p in [env.get("PYTHONPATH")] if p])
        self.proc = subprocess.Popen([sys.executable, "-m", "mlperf_llm.standin", *_cli_args(self.cfg, responses_file)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        result: dict[str, str] = {}

        def read_url() -> None:
            assert self.proc and self.proc.stdout
            for line in self.proc.stdout:
                if line.startswith("STANDIN_URL="):
                    result["url"] = line.strip().split("=", 1)[1]
                    return

        reader = threading.Thread(target=read_url, daemon=True)
        reader.start()
        reader.join(self.start_timeout_s)
        if "url" not in result:
            self.stop()
            raise RuntimeError(f"stand-in did not start within {self.start_timeout_s} s: "
                               f"{self.proc.stderr.read() if self.proc.stderr else ''}")
        self.url = result["url"]
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self._tmp:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> "StandinProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class StandinThread:
    """A stand-in on an event loop in a daemon thread of this process (no die_after)."""

    def __init__(self, cfg: StandinConfig | None = None):
        self.cfg = cfg or StandinConfig()
        self.loop = asyncio.new_event_loop()
        self.url = ""
        self._runner = None
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> "StandinThread":
        if self.cfg.die_after:
            raise ValueError("die_after needs a process of its own: use StandinProcess")
        self._thread.start()
        self._runner, self.url = asyncio.run_coroutine_threadsafe(serve(self.cfg), self.loop).result(30)
        return self

    def __exit__(self, *exc) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()
