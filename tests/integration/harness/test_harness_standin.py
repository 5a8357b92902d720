"""The whole harness (driver -> one subprocess per LoadGen test) against stand-in servers."""

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from mlperf_llm.harness.userconf import pick_targets
from mlperf_llm.harness.driver import HarnessRequest, run_all
from mlperf_llm.harness.results import HarnessStatus
from mlperf_llm.harness.qsl import load_dataset
from standin import StandinConfig, StandinProcess, generated_ids
from standin.dataset import write_dataset

ROWS = 24


@pytest.fixture
def dataset(tmp_path):
    return write_dataset(str(tmp_path / "ds.pkl"), ROWS)


def _req(tmp_path, dataset, urls, **kw):
    base = dict(model="llama2-70b-99", results_dir=str(tmp_path / "results"), dataset_path=dataset, api_servers=tuple(urls),
                api_model_name="standin-model", test_query_count=ROWS, progress=False)
    base.update(kw)
    return HarnessRequest(**base)


def _accuracy_ids(path: Path) -> dict[int, list[int]]:
    out = {}
    for rec in json.loads(path.read_text()):
        data = bytes.fromhex(rec["data"])
        out.setdefault(rec["qsl_idx"], list(memoryview(data).cast("i")))
    return out


def test_offline_performance_and_accuracy(tmp_path, dataset):
    cfg = StandinConfig(output_tokens=9)
    with StandinProcess(cfg) as sp:
        outs = run_all(_req(tmp_path, dataset, [sp.url], scenarios=("Offline",)))
    perf, acc = outs
    assert (perf.verdict, acc.verdict) == ("VALID", "VALID"), [o.reasons for o in outs]
    run1 = tmp_path / "results" / "llama2-70b-99" / "Offline" / "performance" / "run_1"
    assert perf.directory == str(run1)
    for name in ("mlperf_log_summary.txt", "mlperf_log_detail.txt", "user.conf", "harness.log"):
        assert (run1 / name).is_file(), name
    assert not (run1 / "audit.config").exists()
    # accuracy: every sample once, the ids the server generated as int32, n_tokens counted
    ds = load_dataset(dataset)
    got = _accuracy_ids(Path(acc.directory) / "mlperf_log_accuracy.json")
    assert sorted(got) == list(range(ROWS))
    for idx, ids in got.items():
        assert ids == generated_ids(cfg, ds.tok_input[idx], 1024)[0]
    status = HarnessStatus.read(Path(acc.directory))
    assert status.ok and status.completed == ROWS and status.generated_tokens == 9 * ROWS


def test_server_reports_the_first_token_early(tmp_path, dataset):
    # 5 tokens: first after 60 ms, then one every 200 ms -> TTFT ~60 ms, whole answer ~860 ms;
    # the gap leaves room for a busy machine while a first token reported only at the end
    # (TTFT ~860 ms) still fails
    with StandinProcess(StandinConfig(output_tokens=5, ttft_ms=60, tpot_ms=200)) as sp:
        perf, = run_all(_req(tmp_path, dataset, [sp.url], scenarios=("Server",), modes=("performance",),
                             server_target_qps=20))
    s = perf.summary
    assert perf.verdict in ("VALID", "INVALID") and perf.returncode == 0
    assert 55e6 <= s["ttft_p99_ns"] < 600e6, s
    assert 150e6 <= s["tpot_p99_ns"] < 800e6, s
    detail = (Path(perf.directory) / "mlperf_log_detail.txt").read_text()
    assert '"is_error": true' not in detail


def test_interactive_latency_bound_makes_the_run_invalid(tmp_path, dataset):
    # Interactive allows 450 ms TTFT; a 600 ms first token can never be VALID
    with StandinProcess(StandinConfig(output_tokens=3, ttft_ms=600)) as sp:
        perf, = run_all(_req(tmp_path, dataset, [sp.url], scenarios=("Interactive",), modes=("performance",),
                             interactive_target_qps=20))
    assert perf.verdict == "INVALID" and "LoadGen result is INVALID" in perf.reasons[0]
    assert perf.summary["ttft_p99_ns"] >= 600e6
    summary = (Path(perf.directory) / "mlperf_log_summary.txt").read_text()
    assert "Performance constraints satisfied : NO" in summary
    assert Path(perf.directory).parts[-3:] == ("Interactive", "performance", "run_1")


def test_several_endpoints_share_an_offline_run(tmp_path, dataset):
    with StandinProcess() as a, StandinProcess() as b:
        perf, = run_all(_req(tmp_path, dataset, [a.url, b.url], modes=("performance",), num_workers=2))
    status = HarnessStatus.read(Path(perf.directory))
    assert perf.verdict == "VALID" and set(status.endpoints) == {a.url, b.url}
    assert min(status.endpoints.values()) >= ROWS // 4


def test_unreachable_server_stops_before_loadgen(tmp_path, dataset):
    # the accuracy test that would follow is not attempted
    perf, = run_all(_req(tmp_path, dataset, ["http://127.0.0.1:9"], scenarios=("Offline", "Server")))
    assert perf.verdict == "FAILED" and perf.returncode == 2
    assert "unreachable" in perf.reasons[0] and "fix:" in perf.reasons[0]
    assert ".failed-" in perf.directory
    assert not (Path(perf.directory) / "mlperf_log_summary.txt").exists()   # LoadGen never started
    assert not (tmp_path / "results" / "llama2-70b-99" / "Offline" / "performance" / "run_1").exists()


def test_wrong_model_name_stops_before_loadgen(tmp_path, dataset):
    with StandinProcess(StandinConfig(model_name="the-real-one")) as sp:
        perf, = run_all(_req(tmp_path, dataset, [sp.url], modes=("performance",)))
    assert perf.verdict == "FAILED" and perf.returncode == 2
    assert "does not serve model 'standin-model'" in perf.reasons[0] and "the-real-one" in perf.reasons[0]
    assert not (Path(perf.directory) / "mlperf_log_detail.txt").exists()


def test_tokenizer_mismatch_is_refused(tmp_path):
    bad = write_dataset(str(tmp_path / "other-tokenizer.pkl"), ROWS, offset=7)
    with StandinProcess() as sp:
        perf, = run_all(_req(tmp_path, bad, [sp.url], modes=("performance",)))
    assert perf.verdict == "FAILED" and perf.returncode == 2
    assert "does not match the model's tokenizer" in perf.reasons[0]


@pytest.mark.parametrize("scenario", ["Offline", "Server"])
def test_server_dying_mid_run_fails_the_run_and_keeps_logs(tmp_path, dataset, scenario):
    with StandinProcess(StandinConfig(output_tokens=6, tpot_ms=5, die_after=8)) as sp:
        perf, = run_all(_req(tmp_path, dataset, [sp.url], scenarios=(scenario,), modes=("performance",),
                             server_target_qps=40))
        assert not sp.alive()
    assert perf.verdict == "FAILED" and perf.returncode == 3, perf
    d = Path(perf.directory)
    assert d.name.startswith("run_1.failed-")
    assert (d / "mlperf_log_detail.txt").exists() and (d / "harness.log").exists()
    status = HarnessStatus.read(d)
    assert not status.ok and status.failed_samples >= 1
    # one error for the server (one this run did not start), not one per sample
    assert len(status.errors) == 1 and perf.reasons == status.errors, status.errors
    assert status.errors[0].startswith(f"{sp.url} stopped answering during the {scenario} performance test (")
    assert "is the server still running?" in status.errors[0]
    assert not (d.parent / "run_1").exists()
    outcomes = json.loads((tmp_path / "results" / "harness_outcomes.json").read_text())
    assert [o["verdict"] for o in outcomes] == ["FAILED"]


def test_find_performance_sets_targets_from_a_short_run(tmp_path, dataset):
    with StandinProcess() as sp:
        perf, = run_all(_req(tmp_path, dataset, [sp.url], modes=("performance",), find_performance=True))
    found = json.loads((tmp_path / "results" / "find_performance.json").read_text())
    assert found["targets"]["Offline"] > 0 and found["targets"]["Server"] < found["targets"]["Offline"]
    conf = (Path(perf.directory) / "user.conf").read_text()
    assert f"llama2-70b.Offline.target_qps = {found['targets']['Offline']:g}" in conf


def test_server_target_comes_from_the_offline_test_of_the_same_run_unless_given(tmp_path, dataset, capsys):
    with StandinProcess(StandinConfig(output_tokens=4)) as sp:
        off, srv = run_all(_req(tmp_path, dataset, [sp.url], scenarios=("Offline", "Server"),
                                modes=("performance",)))
        rate = float(off.summary["samples_per_second"])
        assert off.offline_rate() == (rate, "Offline performance test")
        expected = pick_targets(rate)["Server"]
        assert f"llama2-70b.Server.target_qps = {expected:g}" in (Path(srv.directory) / "user.conf").read_text()
        used = json.loads((tmp_path / "results" / "targets.json").read_text())
        assert used["Server"]["target_qps"] == expected and "Offline performance test" in used["Server"]["source"]
        assert used["Offline"] == {"target_qps": None, "source": "LoadGen default (mlperf.conf)"}
        assert f"Server target_qps {expected:g}" in capsys.readouterr().out
        # a target the user gave is kept
        _, srv2 = run_all(_req(tmp_path / "b", dataset, [sp.url], scenarios=("Offline", "Server"),
                               modes=("performance",), server_target_qps=3.5))
    assert "llama2-70b.Server.target_qps = 3.5" in (Path(srv2.directory) / "user.conf").read_text()
    assert json.loads((tmp_path / "b" / "results" / "targets.json").read_text())["Server"]["source"] == "given"


AUDIT = ("*.*.mode = 2\n*.*.accuracy_log_rng_seed = 720381539243781796\n*.*.accuracy_log_sampling_target = {n}\n"
         "*.*.min_query_count = {n}\n*.*.min_duration = 0\n*.*.sample_concatenate_permutation = 0\n")


def test_audit_config_only_reaches_the_compliance_test(tmp_path, dataset, monkeypatch):
    # an audit.config lying in the caller's cwd must not change a normal run; TEST06 gets its own copy
    (tmp_path / "audit.config").write_text(AUDIT.format(n=ROWS))
    monkeypatch.chdir(tmp_path)
    with StandinProcess(StandinConfig(output_tokens=4)) as sp:
        perf, t06 = run_all(_req(tmp_path, dataset, [sp.url], modes=("performance", "TEST06"),
                                 audit_conf=str(tmp_path / "audit.config")))
    assert (perf.verdict, t06.verdict) == ("VALID", "VALID")
    assert json.loads((Path(perf.directory) / "mlperf_log_accuracy.json").read_text() or "[]") == []
    assert not (Path(perf.directory) / "audit.config").exists()
    d = Path(t06.directory)
    assert d.parts[-2:] == ("Offline", "TEST06") and (d / "audit.config").read_text() == AUDIT.format(n=ROWS)
    assert len(_accuracy_ids(d / "mlperf_log_accuracy.json")) == ROWS   # the audit's accuracy logging applied


def test_a_failed_run_that_loadgen_would_keep_going_is_aborted(tmp_path, dataset):
    # Server with a 60 s minimum: after the server dies LoadGen would go on issuing for a minute;
    # the harness stops it abort_grace_s after the first failure, status written, exit 3
    import subprocess
    import sys
    import time
    from mlperf_llm.harness.testrun import AUTOMATION_DIR
    conf = tmp_path / "user.conf"
    conf.write_text("llama2-70b.Server.target_qps = 5\nllama2-70b.Server.min_duration = 60000\n"
                    f"llama2-70b.*.performance_sample_count_override = {ROWS}\n")
    out = tmp_path / "out"
    with StandinProcess(StandinConfig(output_tokens=3, die_after=3)) as sp:
        t0 = time.monotonic()
        p = subprocess.run([sys.executable, "-m", "mlperf_llm.harness.run", "--model=llama2-70b-99", "--scenario=Server",
                            f"--dataset-path={dataset}", f"--output-dir={out}", f"--user-conf={conf}",
                            f"--api-servers={sp.url}", "--api-model-name=standin-model", "--abort-grace-s=2",
                            "--no-progress"], capture_output=True, text=True, timeout=50,
                           env={**__import__("os").environ, "PYTHONPATH": AUTOMATION_DIR})
        took = time.monotonic() - t0
    assert p.returncode == 3, p.stderr[-500:]
    assert took < 30
    status = HarnessStatus.read(out)
    assert not status.ok and any("aborted" in e for e in status.errors)
    assert (out / "mlperf_log_detail.txt").exists()


def test_find_performance_searches_the_server_target_and_the_next_run_takes_it(tmp_path, dataset, monkeypatch,
                                                                              capsys):
    """The stand-in generates for one request at a time (the others wait), so its TTFT grows with the
    load: the search brackets the highest target whose p99s meet llama2-70b's Server bounds (TTFT
    2 s, TPOT 200 ms); short probes keep it quick."""
    from mlperf_llm.harness import search
    monkeypatch.setattr(search, "PROBE_SECONDS", 2.0)
    monkeypatch.setattr(search, "MIN_PROBE_QUERIES", 8)
    with StandinProcess(StandinConfig(output_tokens=4, ttft_ms=40, tpot_ms=40, max_num_seqs=1)) as sp:
        run_all(_req(tmp_path, dataset, [sp.url], scenarios=("Server",), modes=("performance",),
                     find_performance=True, search_budget_s=240.0, test_query_count=8))
        said = capsys.readouterr().out
        found = json.loads((tmp_path / "results" / "searched_targets.json").read_text())
        server = found["searches"]["Server"]
        target = server["found_qps"]
        assert found["model"] == "llama2-70b-99" and found["endpoints"] == 1
        assert server["probes"] and target and target <= server["ceiling_qps"]
        assert all(p["target_qps"] <= target for p in server["probes"] if p["passed"])
        assert all(p["target_qps"] > target for p in server["probes"] if not p["passed"])
        for i, p in enumerate(server["probes"], 1):
            assert f"probe {i}: {p['target_qps']:g} QPS" in said
        assert f"Server target: {target:g} QPS after {len(server['probes'])} probe(s)" in said
        assert "the next run into" in said
        # the next run into the same folder, without a target: it takes the searched one and says so
        srv, = run_all(_req(tmp_path, dataset, [sp.url], scenarios=("Server",), modes=("performance",)))
    said = capsys.readouterr().out
    assert f"llama2-70b.Server.target_qps = {target:g}" in (Path(srv.directory) / "user.conf").read_text()
    assert f"Server target_qps {target:g}: searched by _find-performance on " in said
    used = json.loads((tmp_path / "results" / "targets.json").read_text())
    assert used["Server"]["target_qps"] == target and "searched by _find-performance" in used["Server"]["source"]


def test_a_sweep_runs_one_server_test_per_load_and_writes_one_table(tmp_path, dataset, monkeypatch, capsys):
    from mlperf_llm.harness import search
    monkeypatch.setattr(search, "PROBE_SECONDS", 2.0)
    monkeypatch.setattr(search, "MIN_PROBE_QUERIES", 8)
    with StandinProcess(StandinConfig(output_tokens=4, ttft_ms=20, tpot_ms=20)) as sp:
        run_all(_req(tmp_path, dataset, [sp.url], scenarios=("Server",), modes=("performance",), sweep="2,4",
                     server_target_qps=4.0, test_query_count=8))
    said = capsys.readouterr().out
    found = json.loads((tmp_path / "results" / "sweep.json").read_text())
    assert [r["target_qps"] for r in found["rows"]] == [2.0, 4.0] and found["offline_qps"] > 0
    assert all(r["achieved_qps"] and r["ttft_ms"][2] and r["tpot_ms"][2] for r in found["rows"])
    table = (tmp_path / "results" / "sweep.md").read_text()
    assert table.count("\n| 2 |") == 1 and table.count("\n| 4 |") == 1
    assert "Server load sweep at 2, 4 QPS" in said and "| 4 | 8 |" in said
    for load in ("2", "4"):
        assert (tmp_path / "results" / "sweep" / "Server" / f"qps-{load}").is_dir()


def test_a_test_run_sized_to_the_host_measures_first_and_prints_each_tests_expected_duration(
        tmp_path, dataset, monkeypatch, capsys):
    # one answer at a time, 0.25 s each: 4 samples/s; each later test gets ~3 s here (15 s in a run)
    from mlperf_llm.accuracy.test06_config import audit_config
    from mlperf_llm.harness import sizing
    from mlperf_llm.rounds import round_for
    monkeypatch.setattr(sizing, "PER_TEST_S", 3.0)
    req = _req(tmp_path, dataset, [], scenarios=("Offline", "Server"), size_to_host=True)
    with StandinProcess(StandinConfig(output_tokens=5, tpot_ms=50, max_num_seqs=1)) as sp:
        req = replace(req, api_servers=(sp.url,))
        outs = run_all(req)
        m = sizing.Measured.load(req.results_dir)
        server_qps = json.loads((tmp_path / "results" / "targets.json").read_text())["Server"]["target_qps"]
        counts = sizing.test06_counts(req.results_dir, ["Offline"], {})
        audit, _ = audit_config("", str(tmp_path / "audit"), round_for("", "llama2-70b-99"), None, counts)
        t06, = run_all(replace(req, modes=("TEST06",), scenarios=("Offline",), audit_conf=audit))
    out = capsys.readouterr().out
    assert [(o.scenario, o.mode) for o in outs] == [("Offline", "performance"), ("Offline", "accuracy"),
                                                    ("Server", "performance"), ("Server", "accuracy")]
    assert all(o.verdict != "FAILED" for o in outs + [t06]), [(o.scenario, o.mode, o.reasons) for o in outs]
    assert m.queries == sizing.FIRST_QUERIES and 0 < m.samples_per_second <= 5.1, m   # one 0.2 s answer at a time
    assert "Offline performance: 12 queries (measures this host" in out
    assert "test run sized to this host:" in out
    want = {("Offline", "accuracy"): sizing.size("Offline", "accuracy", None, ROWS, m).queries,
            ("Server", "performance"): sizing.size("Server", "performance", server_qps, ROWS, m).queries,
            ("Server", "accuracy"): sizing.size("Server", "accuracy", server_qps, ROWS, m).queries,
            ("Offline", "TEST06"): counts["Offline"]}
    assert 3 <= min(want.values()) and max(want.values()) < ROWS      # sized: neither the cap nor nothing
    for o in outs[1:] + [t06]:
        n = want[(o.scenario, o.mode)]
        assert f"{o.scenario} {o.mode}: {n} queries, expected ~" in out
        assert re.search(rf"{o.scenario} {o.mode}: {n} queries in \d+ s \(expected ~\d+ s\)", out)
        if o.mode == "performance":
            assert o.summary["queries"] == n
        else:
            assert len(_accuracy_ids(Path(o.directory) / "mlperf_log_accuracy.json")) == n


def test_a_server_that_requires_a_key_is_benchmarked_with_it_and_the_key_is_in_no_file(tmp_path, dataset):
    """A server started with --api_key (vLLM's VLLM_API_KEY) answers 401 under /v1 without it: the
    test process gets the key in its environment and sends it; no file of the test holds it. Without
    the key, the test fails naming --api_key."""
    key = "s3cret-key-9f2c"
    with StandinProcess(StandinConfig(output_tokens=4, api_key=key)) as sp:
        perf, acc = run_all(_req(tmp_path, dataset, [sp.url], scenarios=("Offline",), api_key=key))
        assert (perf.verdict, acc.verdict) == ("VALID", "VALID"), [o.reasons for o in (perf, acc)]
        assert key not in repr(_req(tmp_path, dataset, [sp.url], api_key=key))
        for f in (tmp_path / "results").rglob("*"):
            assert not f.is_file() or key.encode() not in f.read_bytes(), f
        refused, = run_all(_req(tmp_path / "nokey", dataset, [sp.url], scenarios=("Offline",), modes=("performance",)))
    assert refused.verdict == "FAILED"
    log = (Path(refused.directory) / "harness.log").read_text()
    assert "401" in log and "--api_key=KEY" in log, log[-2000:]


def test_a_standin_started_and_then_entered_is_one_process_and_stops_with_the_block():
    """`with StandinProcess().start() as sp` entered a started stand-in and started a second process over
    the first, which outlived the block (one left by every CI run, from the SquashFS test)."""
    sp = StandinProcess().start()
    first = sp.proc.pid
    with sp:
        assert sp.proc.pid == first
    assert sp.proc.poll() is not None
