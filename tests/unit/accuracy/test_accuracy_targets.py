import json

import pytest

from mlperf_llm.accuracy.targets import TargetError, embedded_targets, judge, mlperf_targets


def test_llama2_99_lines_as_seed_003():
    # seed 003's measured values and the lines its README prints for them
    verdict = judge({"ROUGE1": 41.6468, "ROUGE2": 19.5564, "ROUGEL": 26.4202, "TOKENS_PER_SAMPLE": 296.5},
                    mlperf_targets("llama2-70b-99"))
    assert verdict.lines(markdown=True) == [
        "`ROUGE1`: `41.6468`, Required accuracy for closed division `>= 43.98689`",
        "`ROUGE2`: `19.5564`, Required accuracy for closed division `>= 21.81485`",
        "`ROUGEL`: `26.4202`, Required accuracy for closed division `>= 28.33004`",
        "`TOKENS_PER_SAMPLE`: `296.5`, Required accuracy for closed division `>= 265.005` and `<= 323.895`",
    ]
    assert not verdict.passed
    assert [m.passed for m in verdict.metrics] == [False, False, False, True]


def test_llama2_99_9_and_the_neural_magic_v41_result():
    values = {"ROUGE1": 44.33, "ROUGE2": 22.02, "ROUGEL": 28.60, "TOKENS_PER_SAMPLE": 300.5}
    assert judge(values, mlperf_targets("llama2-70b-99")).passed
    v999 = judge(values, mlperf_targets("llama2-70b-99.9"))
    assert [m.passed for m in v999.metrics] == [False, True, True, True]  # 44.33 < 44.3868
    assert v999.lines()[0] == "ROUGE1: 44.33, Required accuracy for closed division >= 44.38677"


def test_tokens_per_sample_bounds():
    t = mlperf_targets("llama2-70b-99")
    ok = {"ROUGE1": 50.0, "ROUGE2": 30.0, "ROUGEL": 30.0}
    assert not judge(dict(ok, TOKENS_PER_SAMPLE=324.0), t).passed
    assert not judge(dict(ok, TOKENS_PER_SAMPLE=265.0), t).passed
    assert judge(dict(ok, TOKENS_PER_SAMPLE=265.005), t).passed


def test_embedded_targets_scale_the_embedded_reference(tmp_path):
    ref = tmp_path / "reference.json"
    ref.write_text(json.dumps({"metrics": {"rouge1": 30.0, "rouge2": 10.0, "rougeL": 20.0,
                                           "rougeLsum": 25.0, "tokens_per_sample": 100.0}}))
    t = embedded_targets("llama2-70b-99", str(ref))
    assert t.minimum == pytest.approx({"ROUGE1": 29.7, "ROUGE2": 9.9, "ROUGEL": 19.8, "TOKENS_PER_SAMPLE": 90.0})
    assert t.length_metric == "TOKENS_PER_SAMPLE" and t.length_max == pytest.approx(110.0)
    assert "embedded data set reference x0.99" in t.label
    verdict = judge({"ROUGE1": 29.8, "ROUGE2": 9.8, "ROUGEL": 19.9, "TOKENS_PER_SAMPLE": 95.0}, t)
    assert [m.passed for m in verdict.metrics] == [True, False, True, True]


def test_bad_inputs(tmp_path):
    with pytest.raises(TargetError, match="_embedded"):
        embedded_targets("llama2-70b-99", str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"metrics": {"rouge1": 1}}))
    with pytest.raises(TargetError, match="rouge2"):
        embedded_targets("llama2-70b-99", str(bad))
    with pytest.raises(TargetError, match="is not a benchmark this tool knows"):
        mlperf_targets("gptj-99")
