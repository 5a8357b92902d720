import pytest

from mlperf_llm.harness.rounds import (RoundError, get_round, loadgen_check, loadgen_model_and_dirs)
from mlperf_llm.harness.userconf import UserConfError, UserConfSpec, pads_whatever_user_conf_says, pick_targets


def test_test_mode_is_short_and_keeps_targets():
    text = UserConfSpec("llama2-70b", "Offline", "test", 12.5, 30, 60, dataset_count=40).text()
    assert "llama2-70b.Offline.target_qps = 12.5" in text
    assert "llama2-70b.Offline.min_query_count = 30" in text
    assert "llama2-70b.Offline.min_duration = 0" in text
    assert "llama2-70b.Offline.max_duration = 60000" in text
    assert "llama2-70b.*.performance_sample_count_override = 40" in text
    assert "llama2-70b.Offline.sample_concatenate_permutation = 0" in text   # exactly 30 queries, not 40


@pytest.mark.parametrize("version, pads", [("4.1.30", True), ("4.1.12", True), ("4.1", False),
                                           ("5.0.20", False), ("6.0.17", False), ("", False)])
def test_only_the_41_wheels_are_known_to_pad_whatever_user_conf_says(version, pads):
    assert pads_whatever_user_conf_says(version) is pads


def test_a_test_run_on_a_padding_loadgen_loads_as_many_samples_as_it_issues():
    # 4 queries on 211 rows: the 4.1 wheels would issue 211; with 4 samples loaded they issue 4
    text = UserConfSpec("llama2-70b", "Server", "test", 9.2, 4, dataset_count=211, loadgen_version="4.1.30").text()
    assert "llama2-70b.*.performance_sample_count_override = 4" in text
    assert "llama2-70b.Server.min_query_count = 4" in text
    more = UserConfSpec("llama2-70b", "Offline", "test", None, 600, dataset_count=211, loadgen_version="4.1.30")
    assert more.performance_sample_count() == 211                        # never more than the data set
    other = UserConfSpec("llama2-70b", "Offline", "test", None, 4, dataset_count=211, loadgen_version="6.0.17")
    assert "performance_sample_count_override = 211" in other.text()     # equal issue is turned off instead
    valid = UserConfSpec("llama2-70b", "Offline", "valid", 10.0, None, dataset_count=211, loadgen_version="4.1.30")
    assert "performance_sample_count_override = 211" in valid.text()     # a valid run keeps its data set


def test_valid_mode_leaves_the_minimums_alone():
    text = UserConfSpec("llama2-70b-interactive", "Server", "valid", 3.0, 30, None).text()
    assert "llama2-70b-interactive.Server.target_qps = 3" in text
    assert "min_query_count" not in text and "min_duration" not in text
    assert "performance_sample_count_override" not in text  # the full data set
    assert "sample_concatenate_permutation" not in text      # equal issue stays as mlperf.conf has it


def test_a_singlestream_test_run_is_short_and_sets_the_target_latency_it_was_given():
    spec = UserConfSpec("llama3_1-8b-edge", "SingleStream", "test", None, 8, dataset_count=64,
                        loadgen_version="6.0.17", target_latency_ms=250, full_sample_count=5000)
    assert spec.lines()[1:] == ["llama3_1-8b-edge.SingleStream.target_latency = 250",
                                "llama3_1-8b-edge.*.performance_sample_count_override = 64",
                                "llama3_1-8b-edge.SingleStream.min_query_count = 8",
                                "llama3_1-8b-edge.SingleStream.min_duration = 0",
                                "llama3_1-8b-edge.SingleStream.sample_concatenate_permutation = 0"]
    # LoadGen's 10 ms (mlperf.conf) stays when none is given: in a test run it plans nothing
    assert "target_latency" not in UserConfSpec("llama3_1-8b-edge", "SingleStream", "test", None, 8).text()


def test_the_benchmarks_own_performance_sample_count_is_the_full_set():
    # llama3.1-8b-edge's mlperf.conf loads 5000 samples: a 5000-row set needs no override, 4999 rows do
    full = UserConfSpec("llama3_1-8b-edge", "SingleStream", "valid", None, dataset_count=5000,
                        target_latency_ms=900, full_sample_count=5000)
    assert full.lines()[1:] == ["llama3_1-8b-edge.SingleStream.target_latency = 900"]
    fewer = UserConfSpec("llama3_1-8b-edge", "Offline", "valid", 2.0, dataset_count=4999, full_sample_count=5000)
    assert "llama3_1-8b-edge.*.performance_sample_count_override = 4999" in fewer.text()


@pytest.mark.parametrize("kwargs, word", [({"execution_mode": "fast"}, "execution_mode"),
                                          ({"target_qps": 0}, "target qps"),
                                          ({"target_latency_ms": -5}, "target latency"),
                                          ({"test_query_count": 0}, "test_query_count"),
                                          ({"max_test_duration_s": -1}, "max_test_duration")])
def test_bad_user_conf_inputs_are_named(kwargs, word):
    with pytest.raises(UserConfError, match=word):
        UserConfSpec("llama2-70b", "Offline", **kwargs)


def test_find_performance_targets_round_down():
    t = pick_targets(123.456)
    assert t["Offline"] == pytest.approx(123.0)
    assert t["Server"] == pytest.approx(86.4)
    assert t["Interactive"] < t["Server"] < t["Offline"]
    with pytest.raises(UserConfError, match="nothing completed"):
        pick_targets(0.0)


def test_rounds_and_pins():
    assert get_round("v5.1.1").name == "5.1"
    assert get_round("5.0").qsl_rng_seed == 6023615788873153749
    with pytest.raises(RoundError, match="_r5.1, _r6.0, _r6.1"):
        get_round("7.0")
    assert loadgen_check(get_round("5.1"), "5.1.2") is None
    msg = loadgen_check(get_round("5.1"), "6.0.17")
    assert "6.0.17" in msg and "pip install mlcommons-loadgen==5.1.2" in msg
    assert "not installed" in loadgen_check(get_round("4.1"), None)


def test_interactive_layout_follows_the_round():
    assert loadgen_model_and_dirs("llama2-70b-99", "Offline", get_round("5.1")) == (
        "llama2-70b", "Offline", "llama2-70b-99", "Offline")
    assert loadgen_model_and_dirs("llama2-70b-99", "Interactive", get_round("5.1")) == (
        "llama2-70b-interactive", "Server", "llama2-70b-99", "Interactive")
    assert loadgen_model_and_dirs("llama2-70b-99.9", "Interactive", get_round("5.0")) == (
        "llama2-70b-interactive", "Server", "llama2-70b-interactive-99.9", "Server")
    with pytest.raises(RoundError, match="Interactive does not exist for llama2-70b-99 in round 4.1"):
        loadgen_model_and_dirs("llama2-70b-99", "Interactive", get_round("4.1"))
    with pytest.raises(RoundError, match="model 'gpt-j'"):
        loadgen_model_and_dirs("gpt-j", "Offline", get_round("5.1"))
    assert loadgen_model_and_dirs("llama2-70b-99.9", "Interactive", get_round("6.1")) == (
        "llama2-70b-interactive", "Server", "llama2-70b-99.9", "Interactive")
    with pytest.raises(RoundError, match="v6.1 has no llama2-70b-99 .*_r6.0"):
        loadgen_model_and_dirs("llama2-70b-99", "Offline", get_round("6.1"))


def test_pins_lie_in_the_measured_wheel_ranges():
    from mlperf_llm.rounds import ROUNDS
    for rnd in ROUNDS.values():
        assert loadgen_check(rnd, rnd.loadgen_pin) is None, rnd
    # 5.0.25 already carries 5.1's seeds: refused for 5.0 before any run
    assert "5.0.9 .. 5.0.21" in loadgen_check(get_round("5.0"), "5.0.25")


def test_targets_are_plain_three_digit_floats():
    t = pick_targets(231.587)
    assert t == {"Offline": 231.0, "Server": 162.0, "Interactive": 81.0}
    assert all(isinstance(v, float) for v in t.values())
    assert pick_targets(0.123456)["Offline"] == 0.123
    assert pick_targets(98765.0)["Offline"] == 98700.0


def test_an_accuracy_test_of_fewer_rows_than_mlperf_confs_override_says_its_own_count():
    text = UserConfSpec("gpt-oss-120b", "Offline", "test", None, 8, dataset_count=8, full_sample_count=6396,
                        accuracy_sample_count=8).text()
    assert "gpt-oss-120b.*.accuracy_sample_count_override = 8" in text
    assert "accuracy_sample_count_override" not in UserConfSpec("llama3_1-8b", "Offline", "test").text()
