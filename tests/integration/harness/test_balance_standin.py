"""Queries over several endpoints with real LoadGen and stand-in servers (real processes, loopback):
a fast and a slow replica (one that generates for one request at a time, as vLLM with
max_num_seqs=1), least-outstanding with a window against round-robin; two replicas this run
started, one killed during the test: one error naming it."""
from pathlib import Path

from mlperf_llm.harness.driver import HarnessRequest, run_all
from mlperf_llm.harness.results import HarnessStatus
from mlperf_llm.harness.testconfig import ManagedServer
from standin import StandinConfig, StandinProcess
from standin.dataset import write_dataset
from test_server_death import MODEL, kill_when_serving, start_managed, the_one_error

ROWS = 24


def offline(tmp_path, urls, **kw):
    dataset = write_dataset(str(tmp_path / "ds.pkl"), ROWS)
    req = HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path / "results"), dataset_path=dataset,
                         api_servers=tuple(urls), api_model_name=MODEL, test_query_count=ROWS, progress=False,
                         modes=("performance",), **kw)
    (out,) = run_all(req)
    return out, HarnessStatus.read(Path(out.directory))


def test_least_outstanding_with_a_window_sends_most_queries_to_the_fast_replica_and_round_robin_halves(tmp_path):
    fast = StandinConfig(model_name=MODEL, output_tokens=8, tpot_ms=5)
    slow = StandinConfig(model_name=MODEL, output_tokens=8, tpot_ms=5, max_num_seqs=1)
    with StandinProcess(fast) as f, StandinProcess(slow) as s:
        rr_out, rr = offline(tmp_path / "rr", [f.url, s.url], balance="round-robin")
        lo_out, lo = offline(tmp_path / "least", [f.url, s.url], balance="least", endpoint_window=2)
    assert rr_out.verdict == "VALID" and lo_out.verdict == "VALID", (rr_out.reasons, lo_out.reasons)
    assert rr.endpoints == {f.url: ROWS // 2, s.url: ROWS // 2}
    assert sum(lo.endpoints.values()) == ROWS and lo.endpoints[f.url] > lo.endpoints[s.url], lo.endpoints


def test_a_replica_killed_during_the_test_is_named_once_and_the_other_is_not(tmp_path):
    a = start_managed(tmp_path / "a", "--output-tokens=40", "--tpot-ms=50")
    b = start_managed(tmp_path / "b", "--output-tokens=40", "--tpot-ms=50")
    try:
        managed = tuple(ManagedServer(p.record.url, p.record.pid, p.record.start_ticks, p.record.log_path) for p in (a, b))
        killer = kill_when_serving(b)
        dataset = write_dataset(str(tmp_path / "ds.pkl"), ROWS)
        req = HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path / "results"), dataset_path=dataset,
                             api_servers=(a.url, b.url), api_model_name=MODEL, test_query_count=ROWS,
                             progress=False, modes=("accuracy",), managed_servers=managed)
        (acc,) = run_all(req)
        killer.join(5)
        error = the_one_error(acc)
    finally:
        a.stop(1)
        b.stop(1)
    assert error.startswith(f"the vLLM server this run started at {b.url} (pid {b.record.pid}) was killed by "
                            "signal 9 (SIGKILL) during the Offline accuracy test"), error
    assert a.url not in error
