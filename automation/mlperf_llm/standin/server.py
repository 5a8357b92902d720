"""A loopback OpenAI-compatible stand-in for a vLLM server.

It speaks the parts of vLLM's protocol the harness uses: GET /health, GET /v1/models,
POST /tokenize, POST /v1/completions (prompt as a string or as token ids; JSON or
streamed SSE; generated ids returned as `token_ids` when `return_token_ids` is set, or as
`logprobs.tokens` "token_id:N" strings when `return_tokens_as_token_ids` is set).
Latency, token counts, errors and a death mid-run are controlled by `StandinConfig`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from dataclasses import dataclass, field

from aiohttp import web

from . import toytok


@dataclass
class StandinConfig:
    model_name: str = "standin-model"
    max_model_len: int = 4096
    output_tokens: int = 16          # tokens generated per request (capped by max_tokens)
    ttft_ms: float = 0.0             # delay before the first token
    tpot_ms: float = 0.0             # delay between later tokens
    error_every: int = 0             # every k-th completion request answers HTTP 500 (0: never)
    die_after: int = 0               # the process exits while serving request number k (0: never)
    tokenizer_offset: int = toytok.OFFSET   # /tokenize uses this offset (3 = the toy tokenizer)
    responses: dict[str, list[int]] = field(default_factory=dict)  # prompt key -> ids to answer


def prompt_key(prompt_ids: list[int]) -> str:
    """Key of a token-id prompt in `StandinConfig.responses`."""
    return hashlib.sha1(",".join(map(str, prompt_ids)).encode()).hexdigest()


def generated_ids(cfg: StandinConfig, prompt_ids: list[int], max_tokens: int) -> tuple[list[int], str]:
    """The ids the stand-in generates for a prompt, and the finish reason."""
    scripted = cfg.responses.get(prompt_key(prompt_ids))
    if scripted is not None:
        ids = list(scripted[:max_tokens])
        return ids, ("stop" if len(scripted) <= max_tokens else "length")
    n = min(max_tokens, cfg.output_tokens)
    seed = sum(prompt_ids)
    ids = [toytok.OFFSET + 97 + (seed + i) % 26 for i in range(n)]
    if n < max_tokens:
        ids[-1] = toytok.EOS_ID
        return ids, "stop"
    return ids, "length"


def _error(status: int, message: str, etype: str) -> web.Response:
    return web.json_response({"object": "error", "message": message, "type": etype, "code": status,
                              "error": {"message": message, "type": etype, "code": status}}, status=status)


class Standin:
    def __init__(self, cfg: StandinConfig):
        self.cfg = cfg
        self.completions = 0
        self.inflight = 0
        self.max_inflight = 0

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/health", self.health)
        app.router.add_get("/v1/models", self.models)
        app.router.add_post("/tokenize", self.tokenize)
        app.router.add_post("/v1/completions", self.complete)
        app.router.add_get("/standin/stats", self.stats)
        return app

    async def health(self, request: web.Request) -> web.Response:
        return web.Response(status=200)

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{
            "id": self.cfg.model_name, "object": "model", "owned_by": "standin",
            "max_model_len": self.cfg.max_model_len}]})

    async def stats(self, request: web.Request) -> web.Response:
        return web.json_response({"completions": self.completions, "inflight": self.inflight,
                                  "max_inflight": self.max_inflight})

    async def tokenize(self, request: web.Request) -> web.Response:
        body = await request.json()
        if body.get("model", self.cfg.model_name) != self.cfg.model_name:
            return _error(404, f"The model `{body.get('model')}` does not exist.", "NotFoundError")
        ids = toytok.encode(str(body.get("prompt", "")), bool(body.get("add_special_tokens", True)),
                            offset=self.cfg.tokenizer_offset)
        return web.json_response({"tokens": ids, "count": len(ids), "max_model_len": self.cfg.max_model_len})

    async def complete(self, request: web.Request) -> web.StreamResponse:
        self.completions += 1
        number = self.completions
        self.inflight += 1
        self.max_inflight = max(self.max_inflight, self.inflight)
        try:
            return await self._complete(request, number)
        finally:
            self.inflight -= 1

    async def _complete(self, request: web.Request, number: int) -> web.StreamResponse:
        cfg = self.cfg
        body = await request.json()
        if body.get("model") != cfg.model_name:
            return _error(404, f"The model `{body.get('model')}` does not exist.", "NotFoundError")
        prompt = body.get("prompt")
        if isinstance(prompt, str):
            prompt = toytok.encode(prompt, add_special_tokens=True)
        if not (isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt)):
            return _error(400, "prompt must be a string or a non-empty list of token ids", "BadRequestError")
        if max(prompt) >= toytok.VOCAB_SIZE or min(prompt) < 0:
            return _error(400, f"token id out of vocabulary (size {toytok.VOCAB_SIZE})", "BadRequestError")
        max_tokens = int(body.get("max_tokens") or 16)
        if len(prompt) + max_tokens > cfg.max_model_len:
            return _error(400, f"This model's maximum context length is {cfg.max_model_len} tokens; "
                               f"requested {len(prompt) + max_tokens}", "BadRequestError")
        if cfg.error_every and number % cfg.error_every == 0:
            return _error(500, "injected error", "InternalServerError")
        dying = bool(cfg.die_after) and number >= cfg.die_after
        ids, finish = generated_ids(cfg, prompt, max_tokens)
        want_ids = bool(body.get("return_token_ids"))
        want_lp = body.get("logprobs") is not None and bool(body.get("return_tokens_as_token_ids"))
        rid = f"cmpl-standin-{number}"
        if body.get("stream"):
            return await self._stream(request, rid, prompt, ids, finish, want_ids, want_lp, dying)
        if dying:
            os._exit(3)
        delay = (cfg.ttft_ms + cfg.tpot_ms * max(len(ids) - 1, 0)) / 1000.0
        if delay:
            await asyncio.sleep(delay)
        choice = {"index": 0, "text": toytok.decode(ids), "finish_reason": finish,
                  "logprobs": self._logprobs(ids) if want_lp else None}
        if want_ids:
            choice["token_ids"] = ids
            choice["prompt_token_ids"] = prompt
        return web.json_response({
            "id": rid, "object": "text_completion", "created": int(time.time()), "model": cfg.model_name,
            "choices": [choice],
            "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(ids),
                      "total_tokens": len(prompt) + len(ids)}})

    @staticmethod
    def _logprobs(ids: list[int]) -> dict:
        return {"tokens": [f"token_id:{t}" for t in ids], "token_logprobs": [0.0] * len(ids),
                "top_logprobs": None, "text_offset": list(range(len(ids)))}

    async def _stream(self, request, rid, prompt, ids, finish, want_ids, want_lp, dying) -> web.StreamResponse:
        cfg = self.cfg
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        created = int(time.time())
        for i, tok in enumerate(ids):
            wait = cfg.ttft_ms if i == 0 else cfg.tpot_ms
            if wait:
                await asyncio.sleep(wait / 1000.0)
            if dying and i >= min(2, len(ids) - 1):
                os._exit(3)
            last = i == len(ids) - 1
            choice = {"index": 0, "text": toytok.decode([tok]), "finish_reason": finish if last else None,
                      "logprobs": self._logprobs([tok]) if want_lp else None}
            if want_ids:
                choice["token_ids"] = [tok]
                if i == 0:
                    choice["prompt_token_ids"] = prompt
            chunk = {"id": rid, "object": "text_completion", "created": created, "model": cfg.model_name,
                     "choices": [choice]}
            await resp.write(b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp


async def serve(cfg: StandinConfig, host: str = "127.0.0.1", port: int = 0) -> tuple[web.AppRunner, str]:
    """Start the stand-in on the running loop; returns the runner (call `cleanup()`) and its URL."""
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError(f"stand-in host {host!r}: the stand-in listens on loopback only; use 127.0.0.1")
    runner = web.AppRunner(Standin(cfg).app(), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port, backlog=4096)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]  # the real port when port=0
    return runner, f"http://{host}:{bound}"
