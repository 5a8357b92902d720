"""Async OpenAI-compatible client for vLLM: token-id prompts, streaming, connection reuse.

One `ApiClient` lives on one event loop. It sends each request to the endpoint its `Balancer`
chooses (balance.py: one shared by all of a test's clients, least outstanding work first), keeps
connections alive in one aiohttp session, and reads the generated token ids the server reports (no
re-tokenizing).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Callable

import aiohttp

from .apierrors import ApiError, PreflightError
from .balance import Balancer
from ..vllm.inputs import API_KEY_ENV, VLLM_KEY_ENV


@dataclass(frozen=True)
class GenerationParams:
    max_tokens: int = 1024
    min_tokens: int = 1
    temperature: float = 0.0
    token_ids_via: str = "return_token_ids"   # or "logprobs" (vLLM before return_token_ids existed)
    top_p: float = 1.0
    keep_special_tokens: bool = False         # the answer's text keeps them (harmony channels)
    seed: int | None = None                   # sampling: request i samples with seed + i (vLLM's per-request seed)

    def body(self, model: str, prompt: list[int], stream: bool) -> dict:
        b = {"model": model, "prompt": prompt, "max_tokens": self.max_tokens, "min_tokens": self.min_tokens,
             "temperature": self.temperature, "stream": stream}
        if self.temperature > 0:
            b["top_p"] = self.top_p
        if self.keep_special_tokens:
            b["skip_special_tokens"] = False
        if self.token_ids_via == "logprobs":
            b.update(logprobs=0, return_tokens_as_token_ids=True)
        else:
            b["return_token_ids"] = True
        return b

    def seed_for(self, sample_index: int | None) -> int | None:
        """The sample's own seed (repeats of one question are other samples: they sample apart)."""
        if self.seed is None or sample_index is None:
            return None
        return (self.seed + sample_index) % (1 << 31)


@dataclass
class Completion:
    token_ids: list[int]
    finish_reason: str | None = None
    first_token_s: float | None = None    # perf_counter() when the first token arrived
    endpoint: str = ""


def _choice_token_ids(choice: dict, via: str) -> list[int] | None:
    if via == "logprobs":
        lp = choice.get("logprobs") or {}
        toks = lp.get("tokens")
        if toks is None:
            return None
        return [int(t.split(":", 1)[1]) for t in toks]
    ids = choice.get("token_ids")
    return None if ids is None else [int(t) for t in ids]


_TOKEN_IDS_KEY = b'"token_ids":['


def _fast_token_ids(payload: bytes) -> list[int] | None:
    """`token_ids` of a one-choice stream chunk without a full JSON parse; None when unsure.

    vLLM writes compact JSON; a chunk with one `"token_ids":[` and no `"error"` is read
    directly, anything else goes through json.loads.
    """
    k = payload.find(_TOKEN_IDS_KEY)
    if k < 0 or payload.find(_TOKEN_IDS_KEY, k + 1) >= 0 or b'"error"' in payload:
        return None
    start = k + len(_TOKEN_IDS_KEY)
    end = payload.find(b"]", start)
    if end < 0:
        return None
    body = payload[start:end]
    try:
        return [int(t) for t in body.split(b",")] if body.strip() else []
    except ValueError:
        return None


def _key_problem(api_key: str | None) -> str:
    """What a 401 means for this client, and the fix."""
    if api_key:
        return (f"the server refused the API key given (--api_key, {API_KEY_ENV}, or {VLLM_KEY_ENV}); fix: pass the key "
                f"it was started with, --api_key=KEY or {VLLM_KEY_ENV}=KEY in the environment")
    return (f"the server requires an API key; fix: pass it with --api_key=KEY, or export {VLLM_KEY_ENV}=KEY (off the "
            "command line)")


def _missing_ids_error(url: str, via: str) -> ApiError:
    return ApiError(url, f"the server's answer has no generated token ids ({via}); with vLLM older than "
                         "0.10 set CM_MLPERF_VLLM_TOKEN_IDS=logprobs", retryable=False)


@dataclass
class ApiClient:
    urls: list[str]
    model: str
    params: GenerationParams = field(default_factory=GenerationParams)
    max_inflight_per_endpoint: int = 1024
    request_timeout_s: float = 3600.0
    retries: int = 2
    balancer: Balancer | None = None         # None: one of its own (this client's requests only)
    api_key: str | None = field(default=None, repr=False)   # the servers' key (--api_key): sent as a Bearer token
    _session: aiohttp.ClientSession | None = field(default=None, init=False)
    _body_parts: dict = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.urls = [u.rstrip("/") for u in self.urls]
        if not self.urls:
            raise ValueError("api_server: no endpoint given; pass --api_server=http://HOST:PORT[,URL2...]")
        if self.balancer is None:
            self.balancer = Balancer(self.urls)

    async def open(self) -> None:
        conn = aiohttp.TCPConnector(limit=self.max_inflight_per_endpoint * len(self.urls),
                                    limit_per_host=self.max_inflight_per_endpoint, keepalive_timeout=60,
                                    ttl_dns_cache=300)
        self._session = aiohttp.ClientSession(connector=conn, timeout=aiohttp.ClientTimeout(
            total=self.request_timeout_s, sock_connect=10), json_serialize=json.dumps,
            headers={"Authorization": f"Bearer {self.api_key}"} if self.api_key else None)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> "ApiClient":
        await self.open()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("ApiClient used before open()")
        return self._session

    def served_per_endpoint(self) -> dict[str, int]:
        return self.balancer.served()

    # ---- checks before LoadGen starts -------------------------------------------------
    async def preflight(self, timeout_s: float = 15.0) -> dict[str, int | None]:
        """Check every endpoint is up and serves `model`; returns url -> max_model_len."""
        out: dict[str, int | None] = {}
        t = aiohttp.ClientTimeout(total=timeout_s)
        for url in self.urls:
            try:
                async with self.session.get(f"{url}/health", timeout=t) as r:
                    if r.status != 200:
                        raise PreflightError(f"api_server {url} is not healthy: GET /health answered {r.status}; "
                                             "fix: wait until the server has loaded the model, or check its log")
                async with self.session.get(f"{url}/v1/models", timeout=t) as r:
                    if r.status == 401:
                        raise PreflightError(f"api_server {url}: GET /v1/models answered 401: {_key_problem(self.api_key)}")
                    if r.status != 200:
                        raise PreflightError(f"api_server {url}: GET /v1/models answered {r.status}; "
                                             "fix: point --api_server at an OpenAI-compatible (vLLM) server")
                    data = (await r.json()).get("data") or []
            except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as e:
                raise PreflightError(f"api_server {url} is unreachable ({type(e).__name__}: {e}); fix: start the "
                                     "vLLM server or correct --api_server") from None
            served = {m.get("id"): m.get("max_model_len") for m in data}
            if self.model not in served:
                raise PreflightError(f"api_server {url} does not serve model {self.model!r} (it serves: "
                                     f"{', '.join(map(str, served)) or 'nothing'}); fix: pass "
                                     f"--api_model_name={next(iter(served), '<name>')} or start the server with it")
            out[url] = served[self.model]
        return out

    async def tokenize(self, text: str, add_special_tokens: bool) -> list[int]:
        """Token ids of `text` by the server's own tokenizer (vLLM's POST /tokenize)."""
        url = self.urls[0]
        async with self.session.post(f"{url}/tokenize", json={
                "model": self.model, "prompt": text, "add_special_tokens": add_special_tokens}) as r:
            if r.status != 200:
                raise ApiError(url, f"POST /tokenize answered {r.status}", r.status, retryable=False)
            return [int(t) for t in (await r.json())["tokens"]]

    # ---- completions ----------------------------------------------------------------------
    async def complete(self, prompt: list[int], stream: bool,
                       on_first_token: Callable[[int], None] | None = None,
                       sample_index: int | None = None) -> Completion:
        """Generate for one prompt, retrying transient failures; `on_first_token` is called once;
        `sample_index` gives a sampled request its seed (GenerationParams.seed_for)."""
        seed = self.params.seed_for(sample_index)
        first_sent = False

        def first(tok: int) -> None:
            nonlocal first_sent
            if not first_sent:
                first_sent = True
                if on_first_token is not None:
                    on_first_token(tok)

        attempt = 0
        while True:
            url = await self.balancer.acquire(len(prompt))
            served = False
            try:
                comp = await (self._stream(url, prompt, first, seed) if stream else self._once(url, prompt, seed))
                served = True
                return comp
            except ApiError as e:
                if not e.retryable or attempt >= self.retries:
                    raise
            except (aiohttp.ClientError, asyncio.TimeoutError, OSError, ValueError) as e:
                if attempt >= self.retries:
                    # no whole answer: refused, reset, cut short, timed out
                    lost = isinstance(e, (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, OSError,
                                          asyncio.TimeoutError))
                    raise ApiError(url, f"{type(e).__name__}: {e}", unreachable=lost) from None
            finally:
                self.balancer.release(url, len(prompt), served)
            attempt += 1
            await asyncio.sleep(0.2 * attempt)

    async def _raise_for_status(self, url: str, r: aiohttp.ClientResponse) -> None:
        if r.status == 200:
            return
        text = (await r.text())[:300]
        if r.status == 401:
            text = f"{text}; {_key_problem(self.api_key)}"
        raise ApiError(url, f"POST /v1/completions answered {r.status}: {text}", r.status,
                       retryable=r.status >= 500 or r.status == 429)

    async def _once(self, url: str, prompt: list[int], seed: int | None = None) -> Completion:
        async with self.session.post(f"{url}/v1/completions", data=self._body(prompt, False, seed),
                                     headers=_JSON) as r:
            await self._raise_for_status(url, r)
            choice = (await r.json())["choices"][0]
        ids = _choice_token_ids(choice, self.params.token_ids_via)
        if ids is None:
            raise _missing_ids_error(url, self.params.token_ids_via)
        return Completion(ids, choice.get("finish_reason"), None, url)

    def _body(self, prompt: list[int], stream: bool, seed: int | None = None) -> bytes:
        """The request JSON: a fixed head and tail around the ids (json.dumps of a long id list per
        request costs several times more), and the request's seed, if any, at its end."""
        parts = self._body_parts.get(stream)
        if parts is None:
            marker = -7
            text = json.dumps(self.params.body(self.model, [marker], stream), separators=(",", ":"))
            head, tail = text.split(f"[{marker}]")
            parts = self._body_parts[stream] = (head.encode() + b"[", b"]" + tail.encode())
        tail = parts[1] if seed is None else parts[1][:-1] + b',"seed":%d}' % seed
        return parts[0] + ",".join(map(str, prompt)).encode() + tail

    async def _stream(self, url: str, prompt: list[int], first: Callable[[int], None],
                      seed: int | None = None) -> Completion:
        st = _StreamState(self.params.token_ids_via, url, first)
        async with self.session.post(f"{url}/v1/completions", data=self._body(prompt, True, seed),
                                     headers=_JSON) as r:
            await self._raise_for_status(url, r)
            buf = b""
            # whatever arrived, split into lines here: far fewer awaits than one readline per line;
            # read to the end so the connection goes back to the pool
            async for data in r.content.iter_any():
                buf += data
                if b"\n" not in data:
                    continue
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    st.line(line)
            if buf:
                st.line(buf)
        if not st.done:
            raise ApiError(url, f"stream ended before [DONE] after {len(st.ids)} tokens (server died?)",
                           unreachable=True)
        return Completion(st.ids, st.finish, st.first_s, url)


_JSON = {"Content-Type": "application/json"}


class _StreamState:
    """Reads SSE lines of one streamed completion: ids, finish reason, first-token time."""

    def __init__(self, via: str, url: str, first: Callable[[int], None]):
        self.via, self.url, self.first = via, url, first
        self.ids: list[int] = []
        self.finish: str | None = None
        self.first_s: float | None = None
        self.done = False

    def _add(self, new: list[int]) -> None:
        if new and self.first_s is None:
            self.first_s = time.perf_counter()
            self.first(new[0])
        self.ids.extend(new)

    def line(self, raw: bytes) -> None:
        line = raw.strip()
        if not line.startswith(b"data:"):
            return
        payload = line[5:].strip()
        if payload == b"[DONE]":
            self.done = True
            return
        fast = _fast_token_ids(payload) if self.via == "return_token_ids" else None
        if fast is not None:
            self._add(fast)
            f = payload.find(b'"finish_reason":"')
            if f >= 0:
                self.finish = payload[f + 17:payload.find(b'"', f + 17)].decode()
            return
        chunk = json.loads(payload)
        if "error" in chunk and not chunk.get("choices"):
            raise ApiError(self.url, f"stream error: {str(chunk['error'])[:300]}")
        for choice in chunk.get("choices") or ():
            new = _choice_token_ids(choice, self.via)
            if new is None:
                if choice.get("text"):
                    raise _missing_ids_error(self.url, self.via)
                new = []
            self._add(new)
            self.finish = choice.get("finish_reason") or self.finish
