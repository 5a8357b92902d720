"""The load sweep's inputs and table (harness/sweep.py), on a real Server summary (test mode, 32 queries)."""
from pathlib import Path

import pytest

from mlperf_llm.harness import sweep

SUMMARY = (Path(__file__).resolve().parents[2] / "fixtures" / "loadgen" / "server_summary_test_mode.txt").read_text()


def test_loads_are_auto_or_positive_numbers():
    assert sweep.parse_loads("auto") == "auto" and sweep.parse_loads(" AUTO ") == "auto"
    assert sweep.parse_loads("2,0.5,1,1") == (0.5, 1.0, 2.0)
    for bad in ("", "fast", "1,-2", "0"):
        with pytest.raises(sweep.SweepError, match="give auto, or loads in queries/s"):
            sweep.parse_loads(bad)


def test_auto_spans_a_quarter_to_more_than_the_offline_rate():
    assert sweep.auto_loads(3.08) == (0.77, 1.54, 2.31, 3.08, 3.85)


def test_a_row_reads_loadgens_percentiles_and_verdict():
    row = sweep.row_from_summary(2.2, 32, SUMMARY, "/logs")
    assert row.achieved_qps == 1.90 and row.tokens_per_s == 172.35
    assert [round(v) for v in row.ttft_ms] == [138, 187, 254]
    assert [round(v) for v in row.tpot_ms] == [50, 55, 65]
    assert row.bounds_met is True


def test_the_table_has_a_line_per_load_and_the_bounds_in_its_header():
    rows = [sweep.row_from_summary(2.2, 32, SUMMARY, "/a"), sweep.row_from_summary(4.4, 88, "", "/b")]
    lines = sweep.table(rows, (2000, 200))
    assert "(bound 2000)" in lines[0] and "(bound 200)" in lines[0]
    assert lines[2] == "| 2.2 | 32 | 1.90 | 172.3 | 138 / 187 / 254 | 50 / 55 / 65 | yes |"
    assert lines[3] == "| 4.4 | 88 | - | - | - / - / - | - / - / - | - |"
