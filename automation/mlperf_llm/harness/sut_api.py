"""The SUT for vLLM's OpenAI API: LoadGen threads hand queries to asyncio event loops.

Each of `num_workers` loops runs in its own thread with its own `ApiClient` (one
connection pool over all endpoints); all of them share one `Balancer` (balance.py), which picks
each request's endpoint by the work every worker has in flight. Offline sends every sample as its own
request (the server batches); Server, Interactive and SingleStream (one query at a time: LoadGen
issues the next when this one completes) stream, reporting the first token.
After the first failed sample the run is failed and later samples complete at once, empty. A failure
the server caused (it ended, or stopped answering) is one error for all the samples it failed
(serverwatch.py).
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import Callable

from .balance import Balancer
from .client import ApiClient, ApiError
from .qsl import Dataset
from .responder import Responder
from .serverwatch import ServerWatch


@dataclass(frozen=True)
class ApiSutConfig:
    streaming: bool                 # report the first token: every scenario but Offline
    num_workers: int = 1
    max_inflight: int = 1024        # requests in flight per worker


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop when it is installed (about twice the requests per CPU second), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class _Worker:
    def __init__(self, name: str, make_client: Callable[[], ApiClient], max_inflight: int):
        self.loop = new_event_loop()
        self.make_client = make_client
        self.max_inflight = max_inflight
        self.client: ApiClient | None = None
        self.sem: asyncio.Semaphore | None = None
        self.tasks: set[asyncio.Task] = set()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)

    def start(self) -> None:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._open(), self.loop).result(60)

    async def _open(self) -> None:
        self.client = self.make_client()
        await self.client.open()
        self.sem = asyncio.Semaphore(self.max_inflight)

    def stop(self) -> None:
        async def _close() -> None:
            if self.tasks:
                await asyncio.gather(*self.tasks, return_exceptions=True)
            if self.client is not None:
                await self.client.close()
        try:
            asyncio.run_coroutine_threadsafe(_close(), self.loop).result(60)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)


class ApiSUT:
    def __init__(self, ds: Dataset, cfg: ApiSutConfig, make_client: Callable[[], ApiClient], responder: Responder,
                 watch: ServerWatch, balancer: Balancer):
        if cfg.num_workers < 1:
            raise ValueError(f"num_workers={cfg.num_workers}: must be at least 1")
        self.ds, self.cfg, self.responder, self.watch, self.balancer = ds, cfg, responder, watch, balancer
        self.workers = [_Worker(f"sut-loop-{i}", make_client, cfg.max_inflight) for i in range(cfg.num_workers)]
        self._next = 0

    def start(self) -> None:
        for w in self.workers:
            w.start()

    def stop(self) -> None:
        for w in self.workers:
            w.stop()

    def served_per_endpoint(self) -> dict[str, int]:
        """Requests answered by each endpoint, all workers together (their clients share the balancer)."""
        return self.balancer.served()

    # ---- LoadGen callbacks (called on LoadGen's threads) ------------------------------------
    def issue_queries(self, query_samples) -> None:
        items = [(q.id, q.index) for q in query_samples]
        self.responder.issued(items)
        n = len(self.workers)
        if n == 1 or len(items) == 1:
            w = self.workers[self._next % n]
            self._next += 1
            w.loop.call_soon_threadsafe(self._spawn, w, items)
            return
        for k, w in enumerate(self.workers):
            part = items[k::n]
            if part:
                w.loop.call_soon_threadsafe(self._spawn, w, part)

    def flush_queries(self) -> None:
        return None

    # ---- on a worker's loop ------------------------------------------------------------------
    def _spawn(self, w: _Worker, items: list[tuple[int, int]]) -> None:
        for qid, idx in items:
            t = w.loop.create_task(self._serve(w, qid, idx))
            w.tasks.add(t)
            t.add_done_callback(w.tasks.discard)

    async def _serve(self, w: _Worker, qid: int, idx: int) -> None:
        r = self.responder
        streaming = self.cfg.streaming
        first_sent = False
        if r.failed.is_set():         # skipped: the run had already failed
            r.fail(qid, None, first_sent, streaming)
            return

        def on_first(tok: int) -> None:
            nonlocal first_sent
            first_sent = True
            r.first_token(qid, tok)

        assert w.sem is not None and w.client is not None
        async with w.sem:
            try:
                comp = await w.client.complete(self.ds.tok_input[idx], streaming, on_first if streaming else None,
                                               sample_index=idx)
            except ApiError as e:
                r.fail(qid, await self.watch.explain(e) or f"sample {idx}: {e}", first_sent, streaming)
                return
            except Exception as e:  # a bug or an unexpected answer must not hang LoadGen
                r.fail(qid, f"sample {idx}: {type(e).__name__}: {e}", first_sent, streaming)
                return
        if not comp.token_ids:
            r.fail(qid, f"sample {idx}: the server generated no token", first_sent, streaming)
            return
        if streaming and not first_sent:
            r.first_token(qid, comp.token_ids[0])
        r.complete(qid, comp.token_ids)
