"""A test run sized to the host (harness/sizing.py): the counts and expected durations of the six
tests of the README's command with --compliance=yes, from a real first Offline test of the embedded
default (12 queries on a 2-core AVX-512 host, 2026-11-26) and from the same host made slower."""
from dataclasses import replace
from pathlib import Path

import pytest

from mlperf_llm.accuracy.test06_config import audit_config, query_count_of
from mlperf_llm.harness import sizing
from mlperf_llm.harness.request import HarnessRequest
from mlperf_llm.harness.testsizing import size_test as _size_test, start_sizing as _start_sizing
from mlperf_llm.harness.results import parse_summary
from mlperf_llm.harness.userconf import pick_targets
from mlperf_llm.rounds import round_for

SUMMARY = (Path(__file__).resolve().parents[2] / "fixtures" / "loadgen" / "offline_summary_embedded_12q.txt").read_text()
CAP = 32          # the embedded run's --test_query_count default
SIX = [("Offline", "accuracy"), ("Server", "performance"), ("Server", "accuracy"),
       ("Offline", "TEST06"), ("Server", "TEST06")]        # after the measuring Offline performance test


def _measured(slower: float = 1.0) -> sizing.Measured:
    s = parse_summary(SUMMARY).to_dict()
    m = sizing.measured_from(s, 12, 6.3, "run_1")
    return sizing.Measured(m.samples_per_second / slower, m.tail_s * slower, 12, m.seconds * slower)


def _plan(m: sizing.Measured):
    """Each test's Sized, the first included, as the driver and the TEST06 step size them."""
    server = pick_targets(m.samples_per_second)["Server"]
    first = sizing.Sized(12, sizing.expected_seconds("Offline", 12, None, m), "first")
    later = [sizing.size(s, mode, server if s == "Server" else None,
                         sizing.TEST06_CAP if mode == "TEST06" else CAP, m) for s, mode in SIX]
    return [first] + later


def _unsized(m: sizing.Measured) -> float:
    server = pick_targets(m.samples_per_second)["Server"]
    return sum(sizing.expected_seconds(s, n, server if s == "Server" else None, m)
               for (s, _), n in zip([("Offline", "performance")] + SIX, [CAP] * 4 + [100] * 2))


def test_the_measurement_comes_from_the_first_offline_tests_summary():
    m = _measured()
    assert m.samples_per_second == pytest.approx(2.14514)
    assert m.tail_s == pytest.approx(3.549618847)         # its mean latency
    with pytest.raises(sizing.SizingError, match="completed no samples"):
        sizing.measured_from({"samples_per_second": 0}, 12, 1.0, "d")


def test_on_this_host_the_counts_stay_near_the_caps_and_six_tests_take_under_two_minutes():
    plan = _plan(_measured())
    counts = [p.queries for p in plan]
    assert counts[1] == 28 and counts[4] == 28       # Offline: what 2.1 samples/s answers in ~13.5 s
    assert counts[2] == counts[3] == counts[5] == 14    # Server at 1.5 QPS for ~10 s: ~15 s less the 3.5 s tail
    total = sum(p.expected_s for p in plan)
    assert total < 100 and _unsized(_measured()) > 1.5 * total


def test_on_the_slow_host_of_the_issue_six_tests_take_under_two_minutes():
    # the issue's slow 2-core host (no AVX-512) decodes the embedded model at ~1.1 samples/s:
    # about 3x slower than this one, answers 3x longer
    m = _measured(3.0)
    plan = _plan(m)
    total = sum(p.expected_s for p in plan)
    assert total < 120, [(p.queries, round(p.expected_s)) for p in plan]
    assert _unsized(m) > 3 * 60        # unsized, the same tests would take over three minutes


def test_six_times_slower_every_test_shrinks_to_its_minimum_and_the_floor_is_one_answer_each():
    m = _measured(6.0)
    plan = _plan(m)
    server = [p.queries for (s, _), p in zip(SIX, plan[1:]) if s == "Server"]
    offline = [p.queries for (s, _), p in zip(SIX, plan[1:]) if s == "Offline"]
    assert server == [sizing.MIN_QUERIES] * 3 and offline == [4, 4]   # what 0.36 samples/s answers in ~13.5 s
    total = sum(p.expected_s for p in plan)
    floor = 6 * (sizing.START_S + m.tail_s)       # no test is shorter than one answer (21 s here)
    assert floor > 120                             # two minutes cannot be met at 6x: said in the docstring
    assert total < 1.4 * floor and _unsized(m) > 3 * total


def test_a_server_test_is_expected_to_end_one_answer_after_its_last_query():
    m = sizing.Measured(2.0, 3.0, 12, 6.0)
    assert sizing.expected_seconds("Server", 10, 1.0, m) == pytest.approx(sizing.START_S + 10 + 3)
    assert sizing.expected_seconds("Offline", 10, None, m) == pytest.approx(sizing.START_S + 5)
    assert sizing.expected_seconds("Offline", 2, None, m) == pytest.approx(sizing.START_S + 3)  # one answer at least
    s = sizing.size("Server", "performance", 1.0, 32, m)
    assert s.queries == int(sizing.PER_TEST_S - sizing.START_S - 3.0) and "at 1 QPS" in s.why
    assert sizing.size("Offline", "accuracy", None, 5, m).queries == 5
    assert "the most a test run of it issues" in sizing.size("Offline", "accuracy", None, 5, m).why
    assert "at least 3" in sizing.size("Server", "performance", 0.01, 32, m).why


def test_the_record_round_trips_and_a_broken_one_is_named_with_the_fix(tmp_path):
    m = sizing.Measured(2.0, 3.0, 12, 6.0, "d")
    assert sizing.Measured.load(str(tmp_path)) is None
    m.save(str(tmp_path))
    assert sizing.Measured.load(str(tmp_path)) == m
    (tmp_path / sizing.SIZING_FILE).write_text("{")
    with pytest.raises(sizing.SizingError, match="fix: delete it"):
        sizing.Measured.load(str(tmp_path))


def test_test06_is_sized_per_scenario_in_its_audit_config(tmp_path):
    m = sizing.Measured(2.0, 3.0, 12, 6.0, "d")
    m.save(str(tmp_path))
    counts = sizing.test06_counts(str(tmp_path), ["Offline", "Server"], {"Server": 1.0})
    assert counts == {"Offline": 27, "Server": 10}
    path, origin = audit_config("", str(tmp_path / "audit"), round_for("", "llama2-70b-99"), None, counts)
    assert query_count_of(path, "Offline") == 27 and query_count_of(path, "Server") == 10
    assert query_count_of(path, "Interactive") == 100            # the official *.*. count stays for the rest
    assert "sized to this host: Offline 27 queries, Server 10 queries" in origin
    assert sizing.test06_counts(str(tmp_path / "none"), ["Offline"], {}) is None


def _req(tmp_path, **kw):
    base = dict(model="llama2-70b-99", results_dir=str(tmp_path), dataset_path="ds.pkl", api_servers=("http://x",),
                size_to_host=True, test_query_count=32)
    base.update(kw)
    return HarnessRequest(**base)


def test_a_sized_run_measures_again_and_one_without_offline_says_it_is_not_sized(tmp_path, capsys):
    sizing.Measured(2.0, 3.0, 12, 6.0).save(str(tmp_path))
    assert _start_sizing(_req(tmp_path, scenarios=("Server",))) is None
    assert not (tmp_path / sizing.SIZING_FILE).exists()             # an earlier run's measurement is not used
    assert "not sized to this host: its tests (Server; performance, accuracy) hold no Offline performance test" \
        in capsys.readouterr().out
    sizing.Measured(2.0, 3.0, 12, 6.0).save(str(tmp_path))
    assert _start_sizing(_req(tmp_path, modes=("TEST06",))) == sizing.Measured(2.0, 3.0, 12, 6.0)  # its TEST06 sizes from it
    assert _start_sizing(_req(tmp_path, execution_mode="valid")) is None
    assert (tmp_path / sizing.SIZING_FILE).exists()


def test_the_first_offline_test_measures_and_only_a_sized_test_run_is_resized(tmp_path):
    req = _req(tmp_path, scenarios=("Offline", "Server"))
    first, sized = _size_test(req, "Offline", "performance", 211, None)
    assert first.test_query_count == sizing.FIRST_QUERIES and sized.expected_s is None
    assert _size_test(req, "Server", "performance", 211, None) == (req, None)    # nothing measured yet
    m = sizing.Measured(2.0, 3.0, 12, 6.0)
    later, sized = _size_test(replace(req, server_target_qps=1.0), "Server", "accuracy", 211, m)
    assert later.test_query_count == sized.queries == 10
    for other in (replace(req, size_to_host=False), replace(req, execution_mode="valid")):
        assert _size_test(other, "Offline", "performance", 211, m) == (other, None)
    acc = replace(req, accuracy_sample_count=5)
    assert _size_test(acc, "Offline", "accuracy", 211, m) == (acc, None)        # its own count, as asked
