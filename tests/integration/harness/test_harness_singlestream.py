"""LoadGen's SingleStream through the whole harness (driver -> run.py subprocess -> real LoadGen) against
the stand-in: llama3.1-8b-edge, the benchmark whose table entry has it. The data set is the stand-in's
OpenOrca-layout pickle (what the QSL reads today); the first token is reported (the benchmark logs
token latencies), one query at a time."""

import json
from pathlib import Path

import pytest

from mlperf_llm.harness.cmenv import outcome_records
from mlperf_llm.harness.driver import HarnessInputError, HarnessRequest, run_all
from mlperf_llm.harness.qsl import load_dataset
from mlperf_llm.harness.results import HarnessStatus
from standin import StandinConfig, StandinProcess, generated_ids
from standin.dataset import write_dataset

MODEL = "llama3.1-8b-edge"
QUERIES = 64          # LoadGen's early stopping for a p90 needs 64 queries; with fewer the test is INVALID
TTFT_MS, TPOT_MS, TOKENS = 20, 10, 4


def _req(tmp_path, dataset, url, **kw):
    base = dict(model=MODEL, round="6.1", results_dir=str(tmp_path / "results"), dataset_path=dataset,
                scenarios=("SingleStream",), api_servers=(url,), api_model_name="standin-model",
                test_query_count=QUERIES, progress=False)
    return HarnessRequest(**{**base, **kw})


def _detail(directory: str) -> dict:
    values = {}
    for line in (Path(directory) / "mlperf_log_detail.txt").read_text().splitlines():
        if line.startswith(":::MLLOG"):
            rec = json.loads(line[len(":::MLLOG"):])
            values[rec["key"]] = rec["value"]
    return values


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One request: the SingleStream performance test (a given target latency) and its accuracy test."""
    tmp_path = tmp_path_factory.mktemp("ss")
    dataset = write_dataset(str(tmp_path / "ds.pkl"), QUERIES)
    cfg = StandinConfig(output_tokens=TOKENS, ttft_ms=TTFT_MS, tpot_ms=TPOT_MS)
    with StandinProcess(cfg) as sp:
        outs = run_all(_req(tmp_path, dataset, sp.url, singlestream_target_latency=50))
    return tmp_path, dataset, cfg, outs


def test_singlestream_performance_is_valid_in_the_results_layout(run):
    tmp_path, _, _, (perf, acc) = run
    assert (perf.scenario, perf.mode, perf.verdict) == ("SingleStream", "performance", "VALID"), perf.reasons
    run1 = tmp_path / "results" / MODEL / "SingleStream" / "performance" / "run_1"
    assert perf.directory == str(run1)
    for name in ("mlperf_log_summary.txt", "mlperf_log_detail.txt", "user.conf", "harness.log", "harness_status.json"):
        assert (run1 / name).is_file(), name
    conf = (run1 / "user.conf").read_text().splitlines()
    assert conf[1:] == ["llama3_1-8b-edge.SingleStream.target_latency = 50",
                        "llama3_1-8b-edge.*.performance_sample_count_override = 64",
                        "llama3_1-8b-edge.SingleStream.min_query_count = 64",
                        "llama3_1-8b-edge.SingleStream.min_duration = 0",
                        "llama3_1-8b-edge.SingleStream.sample_concatenate_permutation = 0"]
    d = _detail(perf.directory)
    assert d["effective_scenario"] == "SingleStream" and d["requested_use_token_latencies"] is True
    assert d["effective_max_async_queries"] == 1 and d["result_query_count"] == QUERIES
    assert d["effective_target_qps"] == 20                       # 1 s / the 50 ms target latency
    assert d["num_errors"] == 0 and d["result_validity"] == "VALID"


def test_the_first_token_is_reported_before_the_sample_completes(run):
    _, _, _, (perf, _) = run
    d, s = _detail(perf.directory), perf.summary
    # a query: first token after 20 ms, then 3 more 10 ms apart (~50 ms); LoadGen timed the first token
    # apart from the sample, so TTFT is well under the whole latency and TPOT is ~10 ms
    assert TTFT_MS * 1e6 <= s["ttft_p90_ns"] < s["latency_p90_ns"], s
    assert (TTFT_MS + (TOKENS - 1) * TPOT_MS) * 1e6 <= s["latency_p90_ns"] < 2e9
    assert TPOT_MS * 0.9e6 <= d["result_time_per_output_token_50.00_percentile_ns"] < s["ttft_p90_ns"] + 50e6
    assert d["result_first_token_90.00_percentile_latency_ns"] == s["ttft_p90_ns"]
    status = HarnessStatus.read(Path(perf.directory))
    assert status.ok and status.completed == QUERIES and status.generated_tokens == TOKENS * QUERIES


def test_the_reported_metric_is_the_p90_latency_in_ms(run):
    tmp_path, dataset, _, outs = run
    perf = outs[0]
    assert perf.summary["metric"] == pytest.approx(_detail(perf.directory)["result_90.00_percentile_latency_ns"] / 1e6)
    assert perf.summary["metric_unit"] == "ms (p90 latency)" and "ms (p90 latency)" in perf.line()
    req = _req(tmp_path, dataset, "http://unused", singlestream_target_latency=50)
    t = outcome_records(req, outs)[0]
    assert (t.metric, t.unit, t.target_qps, t.target_latency_ms) == (perf.summary["metric"], "ms (p90 latency)",
                                                                     None, pytest.approx(50))
    assert t.target_source == "given as --singlestream_target_latency"
    used = json.loads((tmp_path / "results" / "targets.json").read_text())
    assert used == {"SingleStream": {"target_latency_ms": 50, "source": "given"}}


def test_singlestream_accuracy_logs_every_sample_once(run):
    _, dataset, cfg, (_, acc) = run
    assert (acc.mode, acc.verdict) == ("accuracy", "VALID")
    assert Path(acc.directory).parts[-3:] == (MODEL, "SingleStream", "accuracy")
    records = json.loads((Path(acc.directory) / "mlperf_log_accuracy.json").read_text())
    ds = load_dataset(dataset)
    got = {r["qsl_idx"]: list(memoryview(bytes.fromhex(r["data"])).cast("i")) for r in records}
    assert len(records) == QUERIES and sorted(got) == list(range(QUERIES))
    assert all(ids == generated_ids(cfg, ds.tok_input[i], 128)[0] for i, ids in got.items())


def test_too_few_queries_for_early_stopping_is_invalid_with_loadgens_numbers(tmp_path):
    dataset = write_dataset(str(tmp_path / "ds.pkl"), 10)
    with StandinProcess(StandinConfig(output_tokens=3, ttft_ms=5)) as sp:
        perf, = run_all(_req(tmp_path, dataset, sp.url, modes=("performance",), test_query_count=10))
    assert perf.verdict == "INVALID"
    assert perf.reasons == ["LoadGen result is INVALID",
                            "early stopping not met: 10 queries processed, at least 64 needed (TPOT)"]
    assert "target_latency" not in (Path(perf.directory) / "user.conf").read_text()   # LoadGen's 10 ms
    used = json.loads((tmp_path / "results" / "targets.json").read_text())
    assert used["SingleStream"] == {"target_latency_ms": None, "source": "LoadGen default (mlperf.conf)"}


def test_a_valid_singlestream_run_without_its_target_latency_is_refused(tmp_path):
    req = _req(tmp_path, "unused.pkl", "http://127.0.0.1:9", execution_mode="valid")
    with pytest.raises(HarnessInputError, match="--singlestream_target_latency=MS"):
        run_all(req)
    assert not (tmp_path / "results").exists()
