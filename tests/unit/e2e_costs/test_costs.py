"""The e2e suite's cost ledger and work-derived limits (tests/e2e/costs.py)."""
import json

import pytest
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "e2e"))
from costs import Ledger, Pace, Work, work_in  # noqa: E402


def _status(folder: Path, completed: int, tokens: int) -> None:
    folder.mkdir(parents=True)
    (folder / "harness_status.json").write_text(json.dumps({"completed": completed, "generated_tokens": tokens}))


def test_work_in_sums_every_test_and_counts_server_starts(tmp_path):
    _status(tmp_path / "m" / "Offline" / "performance" / "run_1", 32, 1500)
    _status(tmp_path / "m" / "Server" / "accuracy", 32, 1400)
    _status(tmp_path / "latency_search" / "Server" / "target_qps-2" / "performance", 32, 1450)
    out = "vLLM server ready at http://127.0.0.1:1 after 20 s\n...\nvLLM server ready at http://127.0.0.1:2 after 9 s\n"
    w = work_in(tmp_path, out, cm_runs=1, seconds=12.5)
    assert (w.server_starts, w.queries, w.tokens, w.cm_runs, w.seconds) == (2, 96, 4350, 1, 12.5)
    assert work_in(tmp_path / "missing") == Work()


def test_ledger_adds_per_row_and_totals():
    ledger = Ledger()
    ledger.charge("fixture readme_run", Work(server_starts=1, queries=192, tokens=9000, cm_runs=1, seconds=100))
    ledger.charge("test_x", Work(queries=8, seconds=5))
    ledger.charge("test_x", Work(queries=8, seconds=5))
    lines = ledger.lines()
    assert lines[0].split()[:4] == ["test", "or", "shared", "fixture"]
    assert lines[2].split() == ["test_x", "0", "16", "0", "0", "10"]
    assert lines[-1].split() == ["total", "1", "208", "9000", "1", "110"]
    assert Ledger().lines() == []


def test_the_hosts_pace_is_printed_under_the_table_once_measured():
    ledger = Ledger()
    ledger.charge("fixture pace", Work(queries=2, tokens=256))
    assert ledger.lines()[-1].startswith("total")
    ledger.pace = Pace(server_start_s=31.04, query_s=1.416)
    assert ledger.lines()[-1] == ("pace of this host (fixture pace): a vLLM server start 31.0 s, "
                                  "one greedy 128-token answer 1.42 s")


def test_a_workers_ledger_reaches_the_controller_whole_and_in_order():
    """Under pytest-xdist the e2e worker hands its rows over as JSON (config.workeroutput) and the
    controller, whose ledger pytest prints, charges them (tests/conftest.py)."""
    worker = Ledger()
    worker.charge("fixture readme_run", Work(server_starts=1, queries=128, tokens=8427, cm_runs=1, seconds=228.4))
    worker.charge("test_x", Work(queries=8, tokens=128))
    controller = Ledger()
    controller.add_json(worker.to_json())
    assert controller.rows == worker.rows and list(controller.rows) == ["fixture readme_run", "test_x"]
    assert controller.pace is None and controller.lines() == worker.lines()
    worker.pace = Pace(server_start_s=28.5, query_s=2.25)
    controller = Ledger()
    controller.add_json(worker.to_json())
    assert controller.pace == worker.pace and controller.lines() == worker.lines()


def test_limits_grow_with_the_work_and_the_host():
    fast, slow = Pace(server_start_s=20, query_s=2), Pace(server_start_s=60, query_s=10)
    assert fast.limit_s(100) < fast.limit_s(200) < slow.limit_s(200)
    assert fast.limit_s(0, 0) == Pace.FLOOR_S
    # a run may take its expected work several times over before it is called stuck
    assert slow.limit_s(36) > 3 * (36 * 10 + 60)


def test_a_burst_issues_its_queries_within_a_quarter_of_one_answer_at_any_pace():
    # the slow kind of host and a fast one: the same share of an answer, other loads
    for query_s in (13.0, 3.2):
        qps = Pace(server_start_s=40.0, query_s=query_s).burst_qps(4)
        assert 4 / qps == pytest.approx(0.25 * query_s, rel=0.01)
