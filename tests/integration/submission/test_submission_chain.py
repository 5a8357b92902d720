"""The real chain on loopback (open division): harness (LoadGen + a stand-in OpenAI server) -> accuracy and TEST06
(the accuracy library) -> the submission tree -> the official checker, for the round whose seeds the
installed LoadGen carries (mlperf_llm.rounds; 6.0.17, the newest wheel, is v6.1's)."""
import os

import pytest

from submission_fixtures import FIX, inference_source, metadata
from mlperf_llm.accuracy import process as acc
from mlperf_llm.accuracy.test06_config import audit_config
from mlperf_llm.harness.driver import HarnessRequest, run_all
from mlperf_llm.harness.rounds import installed_loadgen_version
from mlperf_llm.rounds import ROUNDS
from standin import StandinConfig, StandinProcess
from standin.dataset import write_dataset
from mlperf_llm.submission.checker import format_report, run_checker
from mlperf_llm.submission.rules import find_violations
from mlperf_llm.submission.tree import BuildRequest, build_submission

TOKENIZER = os.path.join(FIX, "..", "accuracy", "golden", "tokenizer")
ROWS = 24


def test_harness_accuracy_submission_chain(tmp_path):
    version = installed_loadgen_version()
    rnd = next((r for r in ROUNDS.values() if r.loadgen_in_range(version or "")), None)
    assert rnd, f"mlcommons-loadgen {version} carries the seeds of no round in mlperf_llm.rounds"
    model = "llama2-70b-99.9"          # in every round
    dataset = write_dataset(str(tmp_path / "ds.pkl"), ROWS)
    results = tmp_path / "results"
    audit, _ = audit_config("", str(tmp_path / "audit"), rnd)
    with StandinProcess(StandinConfig(output_tokens=12, ttft_ms=5, tpot_ms=1)) as sp:
        outs = run_all(HarnessRequest(results_dir=str(results), dataset_path=dataset, api_servers=(sp.url,),
                                      api_model_name="standin-model", scenarios=("Offline", "Server"),
                                      model=model, round=rnd.name,
                                      modes=("performance", "accuracy", "TEST06"), test_query_count=ROWS,
                                      server_target_qps=20, audit_conf=audit, progress=False))
    assert all(o.verdict != "FAILED" for o in outs), [o.line() for o in outs]
    acc.process_accuracy(acc.AccuracyRequest(acc.accuracy_dirs(str(results), model), dataset, TOKENIZER,
                                             model=model))
    acc.verify_test06(acc.Test06Request(str(results), model, ["Offline", "Server"], round=rnd.name))

    report = build_submission(BuildRequest(str(results), os.path.join(FIX, "system.json"),
                                           metadata(rnd.version, "open"), str(tmp_path / "mlperf_submission")))
    assert [(r.model, r.scenario) for r in report.results] == [(model, "Offline"), (model, "Server")]
    assert find_violations(report.submission_dir) == []
    by = {o.scenario: o for o in outs if o.mode == "performance"}
    for r in report.results:     # the tree's numbers are the harness's
        assert r.value == pytest.approx(float(by[r.scenario].summary["tokens_per_second"]), rel=1e-4)
        assert r.test06 and r.test06["eos"] == "True" and r.test06_samples > 0

    assert not [w for w in report.warnings if "qsl_rng_seed" in w], report.warnings
    src, _ = inference_source(rnd.version)
    r = run_checker(report.submission_dir, rnd.version, "cm4mlperf", src, workdir=str(tmp_path / "chk"))
    # open division: the stand-in's made-up answers miss the accuracy targets, which open allows
    assert r.passed and r.errors == [], format_report(r)
    assert "min_duration" in r.full_length_checks
