"""llama3.1-8b's accuracy targets: the checker's own numbers (read from each round's checker), GEN_LEN
scaled to the rows an accuracy test scored, and the verdict's lines."""
import json

import pytest

from mlperf_llm.accuracy.targets import SCALE, TargetError, embedded_targets, judge, mlperf_targets
from mlperf_llm.benchmarks import get_benchmark

from inference_sources import checker_tables

PASSING = {"ROUGE1": 38.8, "ROUGE2": 15.95, "ROUGEL": 24.5, "ROUGELSUM": 35.8, "GEN_LEN": 8164530}


@pytest.mark.parametrize("round_name", ["5.1", "6.0", "6.1"])
@pytest.mark.parametrize("model", ["llama3.1-8b", "llama3.1-8b-edge"])
def test_bounds_are_the_checkers(round_name, model):
    config = checker_tables(round_name)["MODEL_CONFIG"][f"v{round_name}"]
    lower = config["accuracy-target"][model]
    upper = config["accuracy-upper-limit"][model]
    t = mlperf_targets(model)
    assert tuple(x for m in t.reference for x in (m, t.minimum[m])) == lower    # same floats, same order
    assert (t.length_metric, t.length_max) == upper
    assert t.note == "" and t.label == "Required accuracy for closed division"


def test_gen_len_scales_to_the_rows_scored():
    t = mlperf_targets("llama3.1-8b", rows_scored=100)
    whole = mlperf_targets("llama3.1-8b")
    assert t.reference["GEN_LEN"] == 8167644 * 100 / 13368 == pytest.approx(61098.47)
    assert (t.minimum["GEN_LEN"], t.length_max) == (t.reference["GEN_LEN"] * 0.9, t.reference["GEN_LEN"] * 1.1)
    assert {m: t.minimum[m] for m in t.quality} == {m: whole.minimum[m] for m in whole.quality}
    assert t.note == "GEN_LEN reference 8167644 is for all 13368 rows; this test scored 100: x 100/13368 = 61098.47397"
    edge = mlperf_targets("llama3.1-8b-edge", rows_scored=500)
    assert edge.reference["GEN_LEN"] == pytest.approx(3051113 / 10)
    assert mlperf_targets("llama3.1-8b", rows_scored=13368) == whole


def test_tokens_per_sample_is_a_mean_and_does_not_scale():
    assert mlperf_targets("llama2-70b-99", rows_scored=100) == mlperf_targets("llama2-70b-99")


@pytest.mark.parametrize("rows", [0, -1, 13369])
def test_rows_outside_the_data_set_are_refused(rows):
    with pytest.raises(TargetError, match=f"scored {rows} rows, its reference covers 13368"):
        mlperf_targets("llama3.1-8b", rows_scored=rows)


def test_verdict_lines_say_how_gen_len_was_scaled():
    verdict = judge(dict(PASSING, GEN_LEN=60000), mlperf_targets("llama3.1-8b", rows_scored=100))
    assert verdict.passed
    assert verdict.lines(markdown=True) == [
        "`ROUGE1`: `38.8`, Required accuracy for closed division `>= 38.39141`",
        "`ROUGE2`: `15.95`, Required accuracy for closed division `>= 15.74843`",
        "`ROUGEL`: `24.5`, Required accuracy for closed division `>= 24.25074`",
        "`ROUGELSUM`: `35.8`, Required accuracy for closed division `>= 35.43507`",
        "`GEN_LEN`: `60000`, Required accuracy for closed division `>= 54988.62657` and `<= 67208.32136` "
        "(GEN_LEN reference 8167644 is for all 13368 rows; this test scored 100: x 100/13368 = 61098.47397)",
    ]
    assert verdict.as_dict()["note"].startswith("GEN_LEN reference 8167644")


def test_each_bound_decides():
    t = mlperf_targets("llama3.1-8b")
    assert judge(PASSING, t).passed
    assert [m.passed for m in judge(dict(PASSING, ROUGELSUM=35.43), t).metrics] == [True, True, True, False, True]
    assert not judge(dict(PASSING, GEN_LEN=8984409), t).passed          # > 8167644 x 1.1
    assert not judge(dict(PASSING, GEN_LEN=7350879), t).passed          # < 8167644 x 0.9
    assert judge(dict(PASSING, GEN_LEN=7350880), t).passed


def test_llama2_values_cannot_be_judged_against_llama3_targets():
    with pytest.raises(TargetError, match="no value for ROUGELSUM, GEN_LEN"):
        judge({"ROUGE1": 44.0, "ROUGE2": 22.0, "ROUGEL": 28.0, "TOKENS_PER_SAMPLE": 290.0},
              mlperf_targets("llama3.1-8b"))


def test_embedded_reference_scales_gen_len_by_its_own_rows(tmp_path):
    ref = tmp_path / "reference.json"
    ref.write_text(json.dumps({"samples": 40, "metrics": {"rouge1": 30.0, "rouge2": 10.0, "rougeL": 20.0,
                                                          "rougeLsum": 25.0, "gen_len": 12000}}))
    t = embedded_targets("llama3.1-8b", str(ref), rows_scored=10)
    assert t.reference == {"ROUGE1": 30.0, "ROUGE2": 10.0, "ROUGEL": 20.0, "ROUGELSUM": 25.0, "GEN_LEN": 3000.0}
    assert t.minimum["ROUGELSUM"] == 25.0 * 0.99 and t.length_max == pytest.approx(3300.0)
    assert "embedded data set reference x0.99" in t.label and "scored 10: x 10/40" in t.note
    no_rows = tmp_path / "old.json"
    no_rows.write_text(json.dumps({"metrics": json.loads(ref.read_text())["metrics"]}))
    with pytest.raises(TargetError, match="'samples'"):
        embedded_targets("llama3.1-8b", str(no_rows), rows_scored=10)
    with pytest.raises(TargetError, match=get_benchmark("llama3.1-8b").dataset_tags):
        embedded_targets("llama3.1-8b", str(tmp_path / "missing.json"))


def test_the_openorca_pipeline_models_are_llama2s():
    assert SCALE == {"llama2-70b-99": 0.99, "llama2-70b-interactive-99": 0.99,
                     "llama2-70b-99.9": 0.999, "llama2-70b-interactive-99.9": 0.999}
