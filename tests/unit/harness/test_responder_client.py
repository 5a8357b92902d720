import ctypes

from mlperf_llm.harness.client import GenerationParams, _choice_token_ids
from mlperf_llm.harness.progress import Progress, Stats
from mlperf_llm.harness.responder import Responder


class FakeLG:
    """Records what LoadGen would receive (reads the response buffers during the call, as LoadGen does)."""

    def __init__(self):
        self.first, self.done = [], []

    @staticmethod
    def QuerySampleResponse(qid, ptr, size, n_tokens=None):
        data = ctypes.string_at(ptr, size) if size else b""
        return (qid, data, n_tokens)

    def FirstTokenComplete(self, responses):
        self.first.extend(responses)

    def QuerySamplesComplete(self, responses):
        self.done.extend(responses)


def _ints(b):
    return list(memoryview(b).cast("i"))


def test_responses_are_int32_ids_with_n_tokens():
    lg, stats = FakeLG(), Stats()
    r = Responder(lg, stats)
    r.first_token(7, 42)
    r.complete(7, [42, 300, 2])
    assert [(q, _ints(d)) for q, d, _ in lg.first] == [(7, [42])]
    (qid, data, n), = lg.done
    assert (qid, _ints(data), n, len(data)) == (7, [42, 300, 2], 3, 12)
    assert (stats.completed, stats.tokens, r.failed.is_set()) == (1, 3, False)


def test_a_failure_completes_empty_and_marks_the_run_failed():
    lg, stats = FakeLG(), Stats()
    r = Responder(lg, stats)
    r.fail(9, "server died", first_token_sent=False, streaming=True)
    assert lg.first == [(9, b"", None)] and lg.done == [(9, b"", 0)]
    assert r.failed.is_set() and r.errors == ["server died"] and stats.failed == 1


def test_a_reason_is_kept_once_and_a_follower_sample_adds_none():
    lg, stats = FakeLG(), Stats()
    r = Responder(lg, stats)
    for qid in (1, 2, 3):
        r.fail(qid, "the server ended", first_token_sent=False, streaming=False)
    r.fail(4, "sample 4: HTTP 400", first_token_sent=False, streaming=False)
    r.fail(5, None, first_token_sent=False, streaming=False)          # skipped: the run had already failed
    assert r.errors == ["the server ended", "sample 4: HTTP 400"]
    assert stats.failed == 5 and [q for q, _, _ in lg.done] == [1, 2, 3, 4, 5]


def test_request_body_asks_for_token_ids():
    b = GenerationParams().body("m", [1, 2], stream=True)
    assert b["prompt"] == [1, 2] and b["return_token_ids"] is True and b["stream"] is True
    assert b["max_tokens"] == 1024 and b["min_tokens"] == 1 and b["temperature"] == 0.0
    lp = GenerationParams(token_ids_via="logprobs").body("m", [1], stream=False)
    assert lp["logprobs"] == 0 and lp["return_tokens_as_token_ids"] is True and "return_token_ids" not in lp


def test_token_ids_are_read_from_either_field():
    assert _choice_token_ids({"token_ids": [5, 6]}, "return_token_ids") == [5, 6]
    assert _choice_token_ids({"text": "x"}, "return_token_ids") is None
    assert _choice_token_ids({"logprobs": {"tokens": ["token_id:5", "token_id:29871"]}}, "logprobs") == [5, 29871]


def test_progress_line_shows_samples_and_tokens_per_second():
    import io
    stats = Stats(issued=10, completed=4, tokens=400)
    out = io.StringIO()
    with Progress(stats, "Offline performance", interval_s=0.01, stream=out):
        pass
    line = out.getvalue().strip().splitlines()[-1]
    assert line.startswith("Offline performance: 4/10 samples |") and "tok/s" in line and "6 in flight" in line


def test_fast_stream_parse_agrees_with_json():
    import json
    from mlperf_llm.harness.client import _fast_token_ids
    first = {"id": "c", "choices": [{"index": 0, "text": "a", "finish_reason": None, "token_ids": [5, 29871],
                                     "prompt_token_ids": [1, 2, 3]}]}
    payload = json.dumps(first, separators=(",", ":")).encode()
    assert _fast_token_ids(payload) == [5, 29871]
    assert _fast_token_ids(b'{"choices":[{"token_ids":[]}]}') == []
    # anything unusual falls back to a full parse
    assert _fast_token_ids(b'{"error":{"message":"x"},"choices":[{"token_ids":[1]}]}') is None
    assert _fast_token_ids(b'{"choices":[{"token_ids":[1]},{"token_ids":[2]}]}') is None
    assert _fast_token_ids(b'{"choices":[{"text":"x"}]}') is None


def test_request_bytes_are_the_json_body():
    import json
    from mlperf_llm.harness.client import ApiClient
    c = ApiClient(["http://x"], 'mo"del', GenerationParams(max_tokens=7))
    for stream in (True, False):
        assert json.loads(c._body([1, 29871, 3], stream)) == GenerationParams(max_tokens=7).body('mo"del', [1, 29871, 3], stream)


def test_a_sampling_request_carries_top_p_the_samples_own_seed_and_keeps_special_tokens():
    import json
    from mlperf_llm.harness.client import ApiClient
    p = GenerationParams(max_tokens=9, temperature=1.0, top_p=1.0, seed=7, keep_special_tokens=True)
    b = p.body("m", [1], stream=False)
    assert b["temperature"] == 1.0 and b["top_p"] == 1.0 and b["skip_special_tokens"] is False
    assert "seed" not in b                        # each request's own, added per sample
    assert (p.seed_for(0), p.seed_for(12), p.seed_for(None)) == (7, 19, None)
    assert GenerationParams(seed=(1 << 31) - 1).seed_for(1) == 0
    c = ApiClient(["http://x"], "m", p)
    for stream in (True, False):
        assert json.loads(c._body([4, 5], stream, p.seed_for(3))) == {**p.body("m", [4, 5], stream), "seed": 10}
        assert json.loads(c._body([4, 5], stream)) == p.body("m", [4, 5], stream)
    greedy = GenerationParams().body("m", [1], stream=False)       # llama: greedy, as before
    assert "top_p" not in greedy and "skip_special_tokens" not in greedy
