"""The real chain on loopback (open division): harness (LoadGen + a stand-in OpenAI server) -> accuracy and TEST06
(the accuracy library) -> the submission tree -> the official checker where the LoadGen installed
has the round's seeds."""
import os

import pytest

from submission_fixtures import FIX, inference_source, metadata
from mlperf_llm.accuracy import process as acc
from mlperf_llm.accuracy.test06_config import audit_config
from mlperf_llm.harness.driver import HarnessRequest, run_all
from mlperf_llm.harness.rounds import get_round as harness_round, installed_loadgen_version, loadgen_check
from mlperf_llm.standin import StandinConfig, StandinProcess
from mlperf_llm.standin.dataset import write_dataset
from mlperf_llm.submission.checker import format_report, run_checker
from mlperf_llm.submission.rules import find_violations
from mlperf_llm.submission.tree import BuildRequest, build_submission

TOKENIZER = os.path.join(FIX, "..", "accuracy", "golden", "tokenizer")
ROWS = 24


def test_harness_accuracy_submission_chain(tmp_path):
    dataset = write_dataset(str(tmp_path / "ds.pkl"), ROWS)
    results = tmp_path / "results"
    audit, _ = audit_config("", str(tmp_path / "audit"))
    with StandinProcess(StandinConfig(output_tokens=12, ttft_ms=5, tpot_ms=1)) as sp:
        outs = run_all(HarnessRequest(results_dir=str(results), dataset_path=dataset, api_servers=(sp.url,),
                                      api_model_name="standin-model", scenarios=("Offline", "Server"),
                                      modes=("performance", "accuracy", "TEST06"), test_query_count=ROWS,
                                      server_target_qps=20, audit_conf=audit, progress=False))
    assert all(o.verdict != "FAILED" for o in outs), [o.line() for o in outs]
    acc.process_accuracy(acc.AccuracyRequest(acc.accuracy_dirs(str(results), "llama2-70b-99"), dataset, TOKENIZER))
    acc.verify_test06(acc.Test06Request(str(results), "llama2-70b-99", ["Offline", "Server"]))

    report = build_submission(BuildRequest(str(results), os.path.join(FIX, "system.json"),
                                           metadata("v5.1", "open"), str(tmp_path / "mlperf_submission")))
    assert [(r.model, r.scenario) for r in report.results] == [("llama2-70b-99", "Offline"),
                                                                ("llama2-70b-99", "Server")]
    assert find_violations(report.submission_dir) == []
    by = {o.scenario: o for o in outs if o.mode == "performance"}
    for r in report.results:     # the tree's numbers are the harness's
        assert r.value == pytest.approx(float(by[r.scenario].summary["tokens_per_second"]), rel=1e-4)
        assert r.test06 and r.test06["eos"] == "True" and r.test06_samples > 0

    problem = loadgen_check(harness_round("5.1"), installed_loadgen_version())
    src, why = inference_source("v5.1")
    if problem or not src:
        pytest.skip(f"checker part skipped: {problem or why}")
    r = run_checker(report.submission_dir, "v5.1", "cm4mlperf", src, workdir=str(tmp_path / "chk"))
    # open division: the stand-in's made-up answers miss the accuracy targets, which open allows
    assert r.passed and r.errors == [], format_report(r)
    assert "min_duration" in r.full_length_checks
