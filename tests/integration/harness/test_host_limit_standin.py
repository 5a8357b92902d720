"""The probe of one query alone (harness/hostlimit.py) against the loopback stand-in of vLLM, which
streams each token after a set delay: the probe reads at least those delays (the host may add to
them, never take away), asks for exactly PROBE_TOKENS tokens, and a server that answers fewer or none
is named."""
import pytest

from mlperf_llm.harness import hostlimit
from standin import StandinConfig, StandinThread

PROMPT = [1, 40, 41, 42]


def test_the_probe_reads_the_servers_first_token_and_per_token_delays():
    cfg = StandinConfig(output_tokens=64, ttft_ms=120.0, tpot_ms=40.0)
    with StandinThread(cfg) as s:
        alone = hostlimit.probe(s.url, cfg.model_name, PROMPT)
    assert alone.ttft_ms >= 120.0 * 0.95 and alone.tpot_ms >= 40.0 * 0.95
    # judged against bounds the stand-in's pace is over, and ones it is far within
    assert hostlimit.judge("llama3.1-8b", "Interactive", alone, (500, 30)).figure == "TPOT"
    assert hostlimit.judge("llama2-70b-99", "Server", alone, (2000 + alone.ttft_ms * 10, 200 + alone.tpot_ms * 10)) \
        is None


def test_a_server_that_stops_short_or_is_gone_is_named():
    cfg = StandinConfig(output_tokens=1)
    with StandinThread(cfg) as s:
        with pytest.raises(hostlimit.ProbeError, match=r"answered 1 token\(s\) to a probe that asked for 16"):
            hostlimit.probe(s.url, cfg.model_name, PROMPT)
    with pytest.raises(hostlimit.ProbeError, match="127.0.0.1:9"):
        hostlimit.probe("http://127.0.0.1:9", "m", PROMPT)
