"""Why requests to a server fail, said once for the whole test instead of once per sample.

A server this run started (`TestConfig.managed_servers`) that has ended is named with its URL, pid,
exit code or signal, the test it ended during, and the last lines of its log. A server the run did
not start (`--api_server`) that stops answering is named once with the first connection error.
Anything else (an HTTP error answer, a bad answer) stays the sample's own failure.
"""

from __future__ import annotations

import asyncio
import threading
import time

from ..vllm.server import SIGKILL_HINT, log_tail, process_end
from .apierrors import ApiError
from .testconfig import ManagedServer

LOG_LINES = 20
SETTLE_S = 2.0      # a lost connection may come just before its server's process has quite ended


class ServerWatch:
    """One per test, shared by the SUT's event-loop threads."""

    def __init__(self, managed: tuple[ManagedServer, ...], test: str, settle_s: float = SETTLE_S):
        self.managed = {s.url.rstrip("/"): s for s in managed}
        self.test = test                       # "Offline accuracy"
        self.settle_s = settle_s
        self._said: dict[str, tuple[str, bool]] = {}     # url -> (its message, whether it says the end)
        self._lock = threading.Lock()

    def ended(self, when: str = "during") -> str | None:
        """The message for the first managed server that has ended, else None (no waiting)."""
        for url in self.managed:
            message = self._ended(url, when)
            if message:
                return message
        return None

    async def explain(self, err: ApiError) -> str | None:
        """The one message for a failure the server caused (the same text for each sample it fails);
        None when the failure is the sample's own."""
        url = err.endpoint.rstrip("/")
        with self._lock:
            said = self._said.get(url)
        if said and said[1]:
            return said[0]
        if url in self.managed:
            deadline = time.monotonic() + (self.settle_s if err.unreachable and not said else 0.0)
            while True:
                message = self._ended(url, "during")
                if message or time.monotonic() >= deadline:
                    break
                await asyncio.sleep(0.05)
            if message:
                return message
        if not err.unreachable:
            return None
        with self._lock:
            if url not in self._said:
                whose = ("the vLLM server this run started there still runs: see its log "
                         f"{self.managed[url].log_path}" if url in self.managed else
                         "is the server still running? Its own log says why it stopped")
                self._said[url] = (f"{url} stopped answering during the {self.test} test ({err.message}); "
                                   f"{whose}; fix: restart it, then run the test again", False)
            return self._said[url][0]

    def _ended(self, url: str, when: str) -> str | None:
        s = self.managed[url]
        end = process_end(s.pid, s.start_ticks)
        if end is None:
            return None
        hint = f"\n{SIGKILL_HINT}" if "SIGKILL" in end else ""
        who = f"on {s.where} (its launcher here, pid {s.pid}," if s.where else f"(pid {s.pid})"
        if s.where:
            end = f"{end})"
        message = (f"the vLLM server this run started at {url} {who} {end} {when} the {self.test} test; "
                   f"the test stops here. Last lines of its log {s.log_path}:\n"
                   f"{log_tail(s.log_path, LOG_LINES)}{hint}")
        with self._lock:
            said = self._said.get(url)
            if said is None or not said[1]:
                self._said[url] = (message, True)
            return self._said[url][0]
