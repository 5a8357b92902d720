"""TEST07 and TEST09 for gpt-oss-120b, end to end short of vLLM: their audit.config from the round's
source (../shared's master b66003e, shortened as a test run shortens it), the LoadGen runs of the
harness against a stand-in server (TEST07 on the GPQA compliance set, TEST09 on the performance set),
then the round's own run_verification.py of each, TEST07 running our scorer as its accuracy script
in a process of its own. The verdicts come from the official scripts: PASS where the answers are
right often enough and long enough, FAIL where they are too short."""
import sys
from pathlib import Path

import pytest

from mlperf_llm.accuracy.compliance_audit import write_audits
from mlperf_llm.accuracy.compliance_run import ComplianceRunError, verify_all
from mlperf_llm.accuracy.compliance_verify import verify_test09
from mlperf_llm.datasets import gptoss
from mlperf_llm.datasets.tokenizer import ModelTokenizer
from mlperf_llm.harness.driver import HarnessRequest, run_all
from standin import StandinConfig, StandinProcess
from standin.server import prompt_key

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures" / "datasets"))
from tiny_tokenizer import make_tokenizer  # noqa: E402

SRC = Path(__file__).resolve().parents[4] / "shared" / "mlcommons-inference" / "master-b66003e"
ANSWER = "<|channel|>analysis<|message|>thinking<|end|><|start|>assistant<|channel|>final<|message|>Answer: {}<|return|>"
TRUTH = ["A", "B", "C", "D"]
GIVEN = ["A", "B", "C", "A"]          # 3 of 4 right: 75, above TEST07's threshold of 60.698


def setup(tmp_path, perf_tokens: int):
    tokdir = make_tokenizer(tmp_path / "tok", [ANSWER.format(x) for x in "ABCD"] + ["question"])
    tok = ModelTokenizer.from_folder(tokdir)
    gpqa = [gptoss.Prompt((7, 8, 9 + i), "gpqa_diamond", t) for i, t in enumerate(TRUTH)]
    perf = [gptoss.Prompt((5, 6, 40 + i)) for i in range(3)]
    paths = {"gpqa": gptoss.write_set(gpqa, tmp_path / "acc_eval_compliance_gpqa.parquet"),
             "perf": gptoss.write_set(perf, tmp_path / "perf_eval_ref.parquet")}
    responses = {prompt_key(list(p.input_tokens)): tok.encode(ANSWER.format(g), add_special_tokens=False)
                 for p, g in zip(gpqa, GIVEN)}
    audit = tmp_path / "audit"
    write_audits(SRC, "gpt-oss-120b", audit, {"TEST07": {"Offline": 4}, "TEST09": {"Offline": 2}})
    cfg = StandinConfig(output_tokens=perf_tokens, responses=responses, max_model_len=20000)
    return tokdir, paths, audit, cfg


def run(tmp_path, perf_tokens: int, modes: tuple[str, ...]):
    tokdir, paths, audit, cfg = setup(tmp_path, perf_tokens)
    with StandinProcess(cfg) as sp:
        outs = run_all(HarnessRequest(
            model="gpt-oss-120b", round="6.1", results_dir=str(tmp_path / "results"), dataset_path=str(paths["gpqa"]),
            performance_dataset_path=str(paths["perf"]), compliance_dataset_path=str(paths["gpqa"]),
            audit_dir=str(audit), api_servers=(sp.url,), api_model_name="standin-model", scenarios=("Offline",),
            modes=modes, test_query_count=4, progress=False))
    env = {"CM_MLPERF_RESULTS_DIR": str(tmp_path / "results"), "CM_MLPERF_MODEL": "gpt-oss-120b",
           "CM_MLPERF_INFERENCE_VERSION": "6.1", "CM_MLPERF_LOADGEN_SCENARIO": "Offline",
           "CM_MLPERF_INFERENCE_SOURCE": str(SRC), "CM_DATASET_COMPLIANCE_PATH": str(paths["gpqa"]),
           "CM_ML_MODEL_PATH": str(tokdir), "CM_PYTHON_BIN_WITH_PATH": sys.executable}
    return outs, env


def test_test07_and_test09_run_on_their_sets_and_the_rounds_scripts_pass_them(tmp_path):
    outs, env = run(tmp_path, 1300, ("TEST07", "TEST09"))
    assert [(o.mode, o.verdict != "FAILED") for o in outs] == [("TEST07", True), ("TEST09", True)], \
        [o.reasons for o in outs]
    base = tmp_path / "results" / "gpt-oss-120b" / "Offline"
    # each ran with its own audit.config, on its own set
    assert "test07_accuracy_threshold" in (base / "TEST07" / "audit.config").read_text()
    assert "test09_min_output_tokens" in (base / "TEST09" / "audit.config").read_text()
    # a shortened test loads no more samples than it issues (each once): TEST09 2 of the 3 performance rows
    assert "performance_sample_count_override = 2" in (base / "TEST09" / "user.conf").read_text()
    import json
    assert len({e["qsl_idx"] for e in json.loads((base / "TEST09" / "mlperf_log_accuracy.json").read_text())}) == 2
    verdicts = verify_all(env)
    assert [(v.test, v.status) for v in verdicts] == [("TEST07", "PASS"), ("TEST09", "PASS")], verdicts
    text = (base / "TEST07" / "verify_accuracy.txt").read_text()
    assert "'exact_match': 75.000" in text and "TEST PASS" in text
    assert (base / "TEST07" / "accuracy" / "mlperf_log_accuracy.json").is_file()
    assert (base / "TEST07" / "performance" / "run_1" / "mlperf_log_detail.txt").is_file()
    assert "TEST PASS" in (base / "TEST09" / "verify_output_len.txt").read_text()


def test_answers_too_short_fail_test09_by_the_rounds_script(tmp_path):
    outs, env = run(tmp_path, 10, ("TEST09",))
    assert all(o.verdict != "FAILED" for o in outs), [o.reasons for o in outs]
    base = tmp_path / "results" / "gpt-oss-120b" / "Offline"
    assert not verify_test09(SRC, "gpt-oss-120b", base / "TEST09", base).passed
    with pytest.raises(ComplianceRunError, match=r"TEST07 Offline: .*TEST07/mlperf_log_accuracy.json is missing: its "
                                                 r"LoadGen run did not finish"):
        verify_all(env)                  # a test that did not run is named, never passed over
    assert "TEST FAIL" in (tmp_path / "results" / "gpt-oss-120b" / "Offline" / "TEST09" / "verify_output_len.txt").read_text()
