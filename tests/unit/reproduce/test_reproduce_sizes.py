"""Issue 42: a replay runs each test at the size the original ran it, and the comparison tells
which differing inputs can change accuracy (an accuracy test's sample count can; a performance
test's length cannot)."""
import dataclasses

import pytest

from mlperf_llm.reproduce import compare, record, replay
from recfix import make_record

SIZES = {"Offline/performance": 12, "Offline/accuracy": 9, "Server/performance": 3, "Server/accuracy": 3}
USER_CONF = {   # as the README's sized run wrote them (v6.1, llama2-70b-99.9)
    "llama2-70b-99.9/Offline/accuracy": ["llama2-70b.*.performance_sample_count_override = 9",
                                         "llama2-70b.Offline.min_query_count = 9", "llama2-70b.Offline.min_duration = 0"],
    "llama2-70b-99.9/Offline/performance/run_1": ["llama2-70b.*.performance_sample_count_override = 211",
                                                  "llama2-70b.Offline.min_query_count = 12"],
    "llama2-70b-99.9/Server/accuracy": ["llama2-70b.Server.target_qps = 0.501",
                                        "llama2-70b.*.performance_sample_count_override = 3",
                                        "llama2-70b.Server.min_query_count = 3"],
    "llama2-70b-99.9/Server/performance/run_1": ["llama2-70b.Server.target_qps = 0.501",
                                                 "llama2-70b.*.performance_sample_count_override = 211",
                                                 "llama2-70b.Server.min_query_count = 3"],
}


def opts(tmp_path, **kw):
    return replay.Options(source="x", results_dir=str(tmp_path / "rep"), work_dir=str(tmp_path / "w"), **kw)


def test_the_record_keeps_the_sizes_the_harness_wrote(tmp_path):
    from mlperf_llm.harness import testsizes
    results = tmp_path / "results"
    results.mkdir()
    testsizes.write(str(results), {**SIZES, "Offline/TEST06": 5})
    rec = make_record(tmp_path, results_dir=str(results))
    assert rec.sizes == {**SIZES, "Offline/TEST06": 5}
    assert record.recorded_sizes(rec) == ({**SIZES, "Offline/TEST06": 5}, "the record's sizes")
    assert record.from_dict(__import__("json").loads(rec.to_json())).sizes == rec.sizes


def test_a_record_without_sizes_gives_them_from_its_user_conf_lines(tmp_path):
    rec = dataclasses.replace(make_record(tmp_path), sizes={}, user_conf=USER_CONF)
    sizes, where = record.recorded_sizes(rec)
    assert sizes == SIZES and "user.conf" in where
    valid = {k: [ln for ln in v if "min_query_count" not in ln] for k, v in USER_CONF.items()}   # a valid run's
    assert record.recorded_sizes(dataclasses.replace(rec, user_conf=valid)) == ({}, "")


def test_an_edited_sizes_section_is_refused_with_the_reason(tmp_path):
    rec = dataclasses.replace(make_record(tmp_path), sizes={"Offline/accuracy": "all"})
    with pytest.raises(record.RecordError, match="sizes section"):
        record.recorded_sizes(rec)


def test_the_replay_gives_each_tests_size_and_says_so(tmp_path):
    rec = dataclasses.replace(make_record(tmp_path), sizes=SIZES)
    p = replay.plan_replay(rec, replay.Host(), opts(tmp_path), exists=lambda p: False)
    assert p.request["test_sizes"] == "Offline/performance=12,Offline/accuracy=9,Server/performance=3,Server/accuracy=3"
    (line,) = [f for f in p.fixed if f.startswith("--test_sizes=")]
    assert "from the record's sizes" in line and "each accuracy test scores the same samples" in line
    assert "nothing is sized again" in line


def test_a_replay_asked_to_size_anew_says_accuracy_then_cannot_match(tmp_path):
    rec = dataclasses.replace(make_record(tmp_path), sizes=SIZES)
    p = replay.plan_replay(rec, replay.Host(), opts(tmp_path, size_anew=True), exists=lambda p: False)
    assert "test_sizes" not in p.request and not [f for f in p.fixed if "test_sizes" in f]
    (note,) = [s for s in p.substitutions if s.startswith("--size_anew=yes")]
    assert "accuracy is not expected to match" in note and "Offline/accuracy=9" in note


# what each differing input changes: (kind of difference, folder or test, recorded, reproduced) -> affects accuracy
EFFECTS = [
    ("size", "Offline/accuracy", 9, 10, True),
    ("size", "Server/accuracy", 3, 4, True),
    ("size", "Offline/performance", 12, 16, False),
    ("size", "Server/TEST06", 4, 100, False),
    ("user.conf", "m/Offline/accuracy", ["m.*.performance_sample_count_override = 8"],
     ["m.*.performance_sample_count_override = 10"], True),
    ("user.conf", "m/Offline/accuracy", ["m.Offline.min_query_count = 8"], ["m.Offline.min_query_count = 10"], True),
    ("user.conf", "m/Server/accuracy", ["m.Server.target_qps = 1", "m.Server.min_query_count = 3"],
     ["m.Server.target_qps = 2", "m.Server.min_query_count = 3"], False),
    ("user.conf", "m/Offline/performance/run_1", ["m.*.performance_sample_count_override = 8"],
     ["m.*.performance_sample_count_override = 10"], False),
    ("user.conf", "m/Server/TEST06", ["m.Server.min_query_count = 4"], ["m.Server.min_query_count = 100"], False),
]


@pytest.mark.parametrize("kind, where, a, b, affects", EFFECTS)
def test_each_differing_input_is_classified_by_what_it_changes(kind, where, a, b, affects):
    why, acc = compare.size_effect(where) if kind == "size" else compare.user_conf_effect(where, a, b)
    assert acc is affects, why
    assert ("not expected to match" in why) is affects


def test_a_replay_at_the_recorded_sizes_expects_exact_accuracy_and_other_sizes_do_not(tmp_path):
    rec = dataclasses.replace(make_record(tmp_path), sizes=SIZES, user_conf=USER_CONF)
    here = dataclasses.replace(rec, request=dict(rec.request, inputs=dict(
        rec.request["inputs"], test_sizes="Offline/performance=12,Offline/accuracy=9,Server/performance=3,Server/accuracy=3")))
    c = compare.compare(rec, here, [], [])
    assert c.differences == [] and c.accuracy_expected_exact
    # the case: the replay sized its accuracy test to 10 samples where the original scored 8
    conf = dict(USER_CONF, **{"llama2-70b-99.9/Offline/accuracy": [
        "llama2-70b.*.performance_sample_count_override = 10", "llama2-70b.Offline.min_query_count = 10",
        "llama2-70b.Offline.min_duration = 0"]})
    other = dataclasses.replace(rec, sizes=dict(SIZES, **{"Offline/accuracy": 10}), user_conf=conf)
    c = compare.compare(rec, other, [], [])
    named = {d.name: d for d in c.differences}
    assert set(named) == {"test size Offline/accuracy", "user.conf llama2-70b-99.9/Offline/accuracy"}
    assert all(d.affects_accuracy for d in named.values()) and not c.accuracy_expected_exact
    assert (named["test size Offline/accuracy"].recorded, named["test size Offline/accuracy"].reproduced) == (9, 10)
    longer = dataclasses.replace(rec, sizes=dict(SIZES, **{"Offline/performance": 24}))
    c = compare.compare(rec, longer, [], [])
    assert [d.name for d in c.differences] == ["test size Offline/performance"] and c.accuracy_expected_exact
