"""ApiClient against the stand-in over loopback."""

import asyncio

import pytest

from mlperf_llm.harness.client import ApiClient, ApiError, GenerationParams, PreflightError
from standin import StandinConfig, StandinThread, generated_ids

PROMPT = [1, 40, 41, 42]


def _run(coro):
    return asyncio.run(coro)


async def _complete(urls, stream, model="standin-model", params=None, **kw):
    firsts = []
    async with ApiClient(urls, model, params or GenerationParams(max_tokens=64), **kw) as c:
        comp = await c.complete(PROMPT, stream, firsts.append)
        return comp, firsts, c.served_per_endpoint()


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("via", ["return_token_ids", "logprobs"])
def test_generated_ids_come_back_unchanged(stream, via):
    cfg = StandinConfig(output_tokens=7)
    with StandinThread(cfg) as s:
        comp, firsts, _ = _run(_complete([s.url], stream, params=GenerationParams(max_tokens=64, token_ids_via=via)))
    expected, finish = generated_ids(cfg, PROMPT, 64)
    assert comp.token_ids == expected and comp.finish_reason == finish == "stop"
    if stream:
        assert firsts == [expected[0]] and comp.first_token_s is not None
    else:
        assert firsts == []


def test_max_tokens_caps_generation():
    with StandinThread(StandinConfig(output_tokens=50)) as s:
        comp, _, _ = _run(_complete([s.url], True, params=GenerationParams(max_tokens=5)))
    assert len(comp.token_ids) == 5 and comp.finish_reason == "length"


def test_preflight_names_wrong_model_and_unreachable_server():
    with StandinThread(StandinConfig(model_name="served")) as s:
        async def pre(urls, model):
            async with ApiClient(urls, model) as c:
                return await c.preflight(timeout_s=3)
        assert _run(pre([s.url], "served")) == {s.url: 4096}
        with pytest.raises(PreflightError, match="does not serve model 'other' .*serves: served.*api_model_name=served"):
            _run(pre([s.url], "other"))
        dead = "http://127.0.0.1:9"
        with pytest.raises(PreflightError, match=f"api_server {dead} is unreachable"):
            _run(pre([s.url, dead], "served"))


def test_transient_errors_are_retried_but_bad_requests_are_not():
    with StandinThread(StandinConfig(error_every=2)) as s:
        async def two():
            async with ApiClient([s.url], "standin-model", GenerationParams(max_tokens=8)) as c:
                return [await c.complete(PROMPT, False), await c.complete(PROMPT, True)]
        a, b = _run(two())
        assert a.token_ids == b.token_ids
    with StandinThread(StandinConfig(max_model_len=10)) as s:
        with pytest.raises(ApiError, match="answered 400.*maximum context length") as e:
            _run(_complete([s.url], False, params=GenerationParams(max_tokens=64)))
        assert e.value.retryable is False


def test_several_endpoints_share_the_load():
    with StandinThread() as a, StandinThread() as b:
        async def many():
            async with ApiClient([a.url, b.url], "standin-model", GenerationParams(max_tokens=4)) as c:
                await asyncio.gather(*(c.complete(PROMPT, i % 2 == 0) for i in range(40)))
                return c.served_per_endpoint()
        served = _run(many())
    assert sum(served.values()) == 40 and min(served.values()) >= 10


def test_tokenize_uses_the_servers_tokenizer():
    with StandinThread() as s:
        async def tok():
            async with ApiClient([s.url], "standin-model") as c:
                return await c.tokenize("<s>ab", False), await c.tokenize("ab", True)
        assert _run(tok()) == ([1, 97 + 3, 98 + 3], [1, 100, 101])
