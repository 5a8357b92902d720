"""The pipeline on the golden log equals the reference way (rouge_score, in reference_way.py)."""
import pytest

from mlperf_llm.accuracy.evaluate import EvaluationError, evaluate, load_tokenizer
from mlperf_llm.accuracy.log import first_per_sample
from reference_way import reference_way


def test_golden_log_equals_reference_way(golden):
    # one worker: in this process (the pool of worker processes: tests/integration/accuracy)
    result = evaluate(golden["log"], golden["dataset"], golden["tokenizer"], workers=1)
    assert result.reference_dict() == reference_way(golden)
    assert result.gen_num == 48                       # repeated qsl_idx ignored
    assert "nltk" in result.sentence_splitter or "punkt" in result.sentence_splitter


def test_golden_log_matches_recorded_numbers(golden):
    result = evaluate(golden["log"], golden["dataset"], golden["tokenizer"], workers=1)
    expected = {k: v for k, v in golden["expected"].items() if k != "sentence_splitter"}
    assert result.reference_dict() == expected


def test_log_from_another_data_set_is_refused(golden, tmp_path):
    import pandas as pd
    small = tmp_path / "small.pkl"
    pd.DataFrame({"output": golden["targets"][:10]}).to_pickle(small)
    with pytest.raises(EvaluationError, match="another data set"):
        evaluate(golden["log"], str(small), golden["tokenizer"], workers=1)


def test_data_set_without_output_column(golden, tmp_path):
    import pandas as pd
    bad = tmp_path / "bad.pkl"
    pd.DataFrame({"question": ["q"]}).to_pickle(bad)
    with pytest.raises(EvaluationError, match="'output'"):
        evaluate(golden["log"], str(bad), golden["tokenizer"], workers=1)


def test_score_texts_equals_the_pipeline(golden):
    from mlperf_llm.accuracy.evaluate import score_texts
    tokenizer = load_tokenizer(golden["tokenizer"])
    entries = first_per_sample(golden["log"])
    texts = tokenizer.batch_decode([e.token_ids.tolist() for e in entries], skip_special_tokens=True)
    got = score_texts([golden["targets"][e.qsl_idx] for e in entries], texts, workers=1)
    full = evaluate(golden["log"], golden["dataset"], golden["tokenizer"], workers=1).reference_dict()
    assert {k: got[k] for k in ("rouge1", "rouge2", "rougeL", "rougeLsum", "gen_len")} == \
        {k: full[k] for k in ("rouge1", "rouge2", "rougeL", "rougeLsum", "gen_len")}
