"""Issue 42 through the real harness and LoadGen on the stand-in server: a run sized to its host
records each test's size (test_sizes.json); the same tests given those sizes (--test_sizes, what a
replay passes) on a host three times slower run at exactly those sizes and score exactly the same
samples, where sizing on that host would have chosen fewer."""
import json
from dataclasses import replace
from pathlib import Path

from mlperf_llm.accuracy.test06_config import audit_config
from mlperf_llm.harness import sizing, testsizes
from mlperf_llm.harness.driver import HarnessRequest, run_all
from mlperf_llm.rounds import round_for
from standin import StandinConfig, StandinProcess
from standin.dataset import write_dataset

ROWS = 24
FAST_MS, SLOW_MS = 40, 120        # a token's time on the recording host and on the replaying one


def _accuracy_ids(path: Path) -> set[int]:
    return {rec["qsl_idx"] for rec in json.loads(path.read_text())}


def _run(req: HarnessRequest, tpot_ms: int, tmp_path: Path, name: str):
    """The benchmark's tests, then TEST06 sized as the TEST06 step sizes it, on a stand-in of this speed."""
    results = tmp_path / name
    req = replace(req, results_dir=str(results))
    with StandinProcess(StandinConfig(output_tokens=5, tpot_ms=tpot_ms, max_num_seqs=1)) as sp:
        req = replace(req, api_servers=(sp.url,))
        outs = run_all(req)
        given = {k.split("/")[0]: n for k, n in req.test_sizes.items() if k.endswith("/TEST06")}
        counts = given or sizing.test06_counts(req.results_dir, ["Offline"], {})
        audit, _ = audit_config("", str(tmp_path / f"audit-{name}"), round_for("", "llama2-70b-99"), None, counts)
        outs += run_all(replace(req, modes=("TEST06",), audit_conf=audit))
    return results, outs


def test_a_sized_runs_sizes_are_replayed_on_a_slower_host_and_score_the_same_samples(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sizing, "PER_TEST_S", 3.0)       # each later test ~3 s here (15 s in a run)
    dataset = write_dataset(str(tmp_path / "ds.pkl"), ROWS)
    req = HarnessRequest(model="llama2-70b-99", results_dir="", dataset_path=dataset, api_servers=(),
                         api_model_name="standin-model", test_query_count=ROWS, scenarios=("Offline",),
                         size_to_host=True, progress=False)
    original, outs = _run(req, FAST_MS, tmp_path, "original")
    assert all(o.verdict != "FAILED" for o in outs), [(o.mode, o.reasons) for o in outs]
    sizes = testsizes.read(str(original))
    assert set(sizes) == {"Offline/performance", "Offline/accuracy", "Offline/TEST06"}, sizes
    assert sizes["Offline/performance"] == sizing.FIRST_QUERIES
    assert sizing.MIN_QUERIES < sizes["Offline/accuracy"] < ROWS, sizes       # sized: neither floor nor cap
    capsys.readouterr()

    # the replay: the sizes given back, as reproduce gives --test_sizes; this host is 3x slower
    replay, routs = _run(replace(req, test_sizes=sizes), SLOW_MS, tmp_path, "replay")
    out = capsys.readouterr().out
    assert all(o.verdict != "FAILED" for o in routs), [(o.mode, o.reasons) for o in routs]
    assert testsizes.read(str(replay)) == sizes
    assert "test run sized to this host" not in out and not (replay / sizing.SIZING_FILE).exists()
    n = sizes["Offline/accuracy"]
    assert f"Offline accuracy: {n} queries (given by --test_sizes" in out, out
    acc = {r: next(o for o in outs_ if o.mode == "accuracy") for r, outs_ in (("original", outs), ("replay", routs))}
    assert _accuracy_ids(Path(acc["replay"].directory) / "mlperf_log_accuracy.json") == \
        _accuracy_ids(Path(acc["original"].directory) / "mlperf_log_accuracy.json") == set(range(n))
    perf = next(o for o in routs if o.mode == "performance")
    assert f"Offline.min_query_count = {sizes['Offline/performance']}\n" in (Path(perf.directory) / "user.conf").read_text()
    # the pace did differ: sized from what the replaying host measured, the accuracy test would have
    # scored fewer samples (what the replay did before issue 42)
    slow = sizing.measured_from(perf.summary, sizes["Offline/performance"], 0.0, perf.directory)
    assert sizing.size("Offline", "accuracy", None, ROWS, slow).queries < n
