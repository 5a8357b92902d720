"""Which endpoint serves the next request, for every worker of a test at once.

One `Balancer` per test is shared by the SUT's workers (each an event loop in its own thread, with
its own HTTP client), so the choice sees every request in flight, not one worker's share:

- "least" (the default): the endpoint with the fewest requests in flight; on a tie, the fewest
  prompt tokens in flight (a long prompt's prefill is the work a server has not started yet);
  then the one after the last chosen.
- "round-robin": in turn, whatever each has in flight (what a plain list of URLs did; kept to
  compare with).

`window`: at most this many requests in flight per endpoint (None: no limit). A request that finds
every endpoint full waits for the first one to free a slot, so that a slow replica holds a window
and not a queue while a fast one is idle. Each endpoint's served count is the test's share record.
"""
from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass

POLICIES = ("least", "round-robin")


@dataclass
class _Load:
    url: str
    requests: int = 0
    tokens: int = 0
    served: int = 0


class Balancer:
    def __init__(self, urls: list[str], policy: str = "least", window: int | None = None):
        if policy not in POLICIES:
            raise ValueError(f"balance={policy!r}: choose {' or '.join(POLICIES)}")
        if window is not None and window < 1:
            raise ValueError(f"endpoint window {window}: at least 1 request in flight per endpoint")
        if not urls:
            raise ValueError("no endpoint to balance over")
        self.policy, self.window = policy, window
        self._loads = [_Load(u) for u in urls]
        self._last = -1
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = []

    def _free(self, load: _Load) -> bool:
        return self.window is None or load.requests < self.window

    def _choose(self) -> int | None:
        n = len(self._loads)
        order = [(self._last + 1 + k) % n for k in range(n)]       # rotation breaks the last ties
        free = [i for i in order if self._free(self._loads[i])]
        if not free:
            return None
        if self.policy == "round-robin":
            return free[0]
        return min(free, key=lambda i: (self._loads[i].requests, self._loads[i].tokens))

    def try_acquire(self, tokens: int = 0) -> str | None:
        """Takes a slot on the chosen endpoint and returns its URL; None when every one is full."""
        with self._lock:
            return self._take_locked(tokens)

    async def acquire(self, tokens: int = 0) -> str:
        """A slot on an endpoint, waiting (on this event loop) for one to be freed where all are full."""
        while True:
            loop = asyncio.get_running_loop()
            with self._lock:
                url = self._take_locked(tokens)
                if url is None:
                    fut = loop.create_future()
                    self._waiters.append((loop, fut))
            if url is not None:
                return url
            await fut

    def _take_locked(self, tokens: int) -> str | None:
        i = self._choose()
        if i is None:
            return None
        load = self._loads[i]
        load.requests += 1
        load.tokens += tokens
        self._last = i
        return load.url

    def release(self, url: str, tokens: int = 0, served: bool = False) -> None:
        """Frees the slot taken for url; served: the request was answered there."""
        with self._lock:
            load = next(x for x in self._loads if x.url == url)
            load.requests -= 1
            load.tokens -= tokens
            load.served += int(served)
            waiters, self._waiters = self._waiters, []
        for loop, fut in waiters:      # every waiter tries again (the freed slot goes to one of them)
            loop.call_soon_threadsafe(_wake, fut)

    def served(self) -> dict[str, int]:
        with self._lock:
            return {x.url: x.served for x in self._loads}

    def in_flight(self) -> dict[str, int]:
        with self._lock:
            return {x.url: x.requests for x in self._loads}


def _wake(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(None)
