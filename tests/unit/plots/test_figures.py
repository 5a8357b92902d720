"""The results page's plots (mlperf_llm/plots): the numbers they show, from real query timings of the
embedded default (a Server test of 20 queries, an Offline test of 12) and a real load sweep's table."""
import json
import re
import shutil
from pathlib import Path

import pytest

from mlperf_llm.harness.results import TIMINGS_FILE
from mlperf_llm.harness.sweep import SWEEP_JSON
from mlperf_llm.plots import figures, timings

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "plots"


def _test_dir(tmp_path, name: str) -> str:
    d = tmp_path / name
    d.mkdir()
    shutil.copy(FIX / f"query_timings_{name}_embedded.json", d / TIMINGS_FILE)
    return str(d)


def test_ttft_and_tpot_are_loadgens_from_each_querys_times(tmp_path):
    rows = json.loads((FIX / "query_timings_server_embedded.json").read_text())["queries"]
    t = timings.load(_test_dir(tmp_path, "server"))
    assert t.queries == len(rows) == 20 and len(t.ttft_ms) == 20
    a, f, c, n = rows[0]
    assert t.ttft_ms[0] == pytest.approx((f - a) * 1e3) and t.tpot_ms[0] == pytest.approx((c - f) * 1e3 / (n - 1))
    # the tokens spread over the windows add up to every token the run generated
    width = t.rate_t_s[1] - t.rate_t_s[0]
    assert sum(r * width for r in t.rate_tokens_per_s) == pytest.approx(sum(r[3] for r in rows), rel=0.01)


def test_an_offline_test_has_no_token_latencies_but_its_tokens_per_second(tmp_path):
    t = timings.load(_test_dir(tmp_path, "offline"))
    assert t.queries == 12 and t.ttft_ms == () and t.tpot_ms == ()
    figs = figures.test_figures("llama2-70b-99.9", "Offline", str(tmp_path / "offline"), None, None)
    assert [f.title for f in figs] == ["llama2-70b-99.9 Offline: output tokens/s over the run (12 queries)"]


def test_a_server_tests_figures_mark_its_p99_and_the_benchmarks_bound(tmp_path):
    figs = figures.test_figures("llama2-70b-99.9", "Server", _test_dir(tmp_path, "server"), 242.0, 62.0)
    assert [f.title.split(": ")[1] for f in figs] == ["time to first token (20 queries)",
                                                      "time per output token (20 queries)",
                                                      "output tokens/s over the run (20 queries)"]
    ttft, tpot, _ = (f.svg for f in figs)
    assert ttft.startswith("<svg") and "p99 242 ms" in ttft and "bound 2000 ms" in ttft
    assert "p99 62 ms" in tpot and "bound 200 ms" in tpot           # llama2-70b's Server bounds
    assert figs[0].data_uri.startswith("data:image/svg+xml;base64,")
    # drawn the same way twice: the page of the same results does not change
    again = figures.test_figures("llama2-70b-99.9", "Server", str(tmp_path / "server"), 242.0, 62.0)
    assert [f.svg for f in again] == [f.svg for f in figs]


def test_no_timings_no_figures_and_a_broken_file_is_named(tmp_path):
    assert figures.test_figures("llama2-70b-99.9", "Server", str(tmp_path), None, None) == []
    (tmp_path / TIMINGS_FILE).write_text("{")
    with pytest.raises(timings.TimingsError, match=re.escape(str(tmp_path / TIMINGS_FILE)) + ".*fix: rerun"):
        timings.load(str(tmp_path))


def test_the_sweep_gives_its_curve_and_its_table(tmp_path):
    assert figures.sweep(str(tmp_path)) == ([], None)
    shutil.copy(FIX / "sweep_embedded.json", tmp_path / SWEEP_JSON)
    figs, table = figures.sweep(str(tmp_path))
    assert [f.title for f in figs] == ["Server load sweep: p99 latencies against the load achieved"]
    assert "p99 TTFT" in figs[0].svg and "bound 2000 ms" in figs[0].svg and "bound 200 ms" in figs[0].svg
    assert table.header[4] == "TTFT p50 / p90 / p99 ms (bound 2000)"
    assert table.rows[2] == ("2.46", "50", "1.94", "152.7", "148 / 243 / 382", "55 / 63 / 91", "yes")


@pytest.mark.parametrize("values", [[1315.88, 1315.88 + 4.6e-13], [1315.88, 1315.88], [42.0]])
def test_latencies_apart_by_float_noise_alone_are_drawn_as_equal_ones(values):
    """Two SingleStream queries whose TPOT differ in the 13th digit: numpy finds no finite bins for
    that range (it failed a llama3.1-8b-edge run's submission step); drawn on a 1 ms range instead."""
    from mlperf_llm.plots import draw
    svg = draw.distribution(values, "SingleStream: TPOT", "ms", None, None)
    assert svg.startswith("<svg") and "SingleStream: TPOT" in svg

