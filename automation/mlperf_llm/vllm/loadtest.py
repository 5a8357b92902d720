"""Send token-id prompts to OpenAI-compatible `/v1/completions` servers and measure tokens per second.

Used by the throughput benchmark, by the tuning check and by the end-to-end tests. Requests are
greedy (temperature 0) and, for fixed lengths, `ignore_eos` with `min_tokens == max_tokens`, so a run
generates exactly requests x max_tokens tokens. The generated token ids come back with each answer
(`return_token_ids`), streamed or not; requests are spread round-robin over the given servers.
"""
from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

import aiohttp


@dataclass(frozen=True)
class Completion:
    token_ids: tuple[int, ...]
    text: str
    finish_reason: str | None
    first_token_s: float | None  # time to first token (streaming only)
    server: str


@dataclass(frozen=True)
class LoadResult:
    completions: tuple[Completion, ...]
    seconds: float

    @property
    def output_tokens(self) -> int:
        return sum(len(c.token_ids) for c in self.completions)

    @property
    def tokens_per_s(self) -> float:
        return self.output_tokens / self.seconds if self.seconds > 0 else 0.0


class CompletionError(RuntimeError):
    pass


def request_body(model: str, prompt_ids, max_tokens: int, fixed_length: bool, stream: bool) -> dict:
    body = {'model': model, 'prompt': list(prompt_ids), 'max_tokens': max_tokens, 'temperature': 0.0,
            'return_token_ids': True, 'stream': stream}
    if fixed_length:
        body.update(ignore_eos=True, min_tokens=max_tokens)
    if stream:
        body['stream_options'] = {'include_usage': True}
    return body


async def _complete(session, url, body, api_key) -> Completion:
    headers = {'Authorization': f'Bearer {api_key}'} if api_key else {}
    t0 = time.monotonic()
    async with session.post(f'{url}/v1/completions', json=body, headers=headers) as r:
        if r.status != 200:
            raise CompletionError(f'{url}/v1/completions answered HTTP {r.status}: {(await r.text())[:500]}')
        if not body['stream']:
            data = await r.json()
            choice = data['choices'][0]
            return Completion(tuple(choice.get('token_ids') or ()), choice.get('text', ''),
                              choice.get('finish_reason'), None, url)
        ids, text, finish, first = [], [], None, None
        async for raw in r.content:
            line = raw.decode().strip()
            if not line.startswith('data:'):
                continue
            payload = line[5:].strip()
            if payload == '[DONE]':
                break
            chunk = json.loads(payload)
            for choice in chunk.get('choices', []):
                new_ids = choice.get('token_ids') or []
                if new_ids and first is None:
                    first = time.monotonic() - t0
                ids.extend(new_ids)
                text.append(choice.get('text', ''))
                finish = choice.get('finish_reason') or finish
        return Completion(tuple(ids), ''.join(text), finish, first, url)


async def _run(urls, model, prompts, max_tokens, fixed_length, stream, concurrency, api_key, timeout_s):
    sem = asyncio.Semaphore(concurrency or len(prompts) or 1)
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        async def one(i, p):
            async with sem:
                body = request_body(model, p, max_tokens, fixed_length, stream)
                return await _complete(session, urls[i % len(urls)], body, api_key)
        t0 = time.monotonic()
        results = await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts)))
        return LoadResult(tuple(results), time.monotonic() - t0)


def run_completions(urls, model: str, prompts, max_tokens: int, *, fixed_length: bool = True,
                    stream: bool = False, concurrency: int | None = None, api_key: str | None = None,
                    timeout_s: float = 1800.0) -> LoadResult:
    """Send all prompts at once (or `concurrency` at a time) and wait for every answer."""
    urls = [urls] if isinstance(urls, str) else list(urls)
    if not urls:
        raise CompletionError('no server URL given')
    return asyncio.run(_run(urls, model, [list(p) for p in prompts], max_tokens, fixed_length, stream,
                            concurrency, api_key, timeout_s))
