"""The pipeline on the golden log equals the reference way computed here with rouge_score."""
import numpy as np
import pytest
from rouge_score import rouge_scorer

from mlperf_llm.accuracy.evaluate import EvaluationError, evaluate, load_tokenizer
from mlperf_llm.accuracy.log import first_per_sample
from mlperf_llm.accuracy.splitter import get_splitter


def reference_way(golden):
    """evaluate-accuracy.py's steps with rouge_score, independent of mlperf_llm.accuracy.rouge."""
    tokenizer = load_tokenizer(golden["tokenizer"])
    split = get_splitter()
    entries = first_per_sample(golden["log"])
    texts = tokenizer.batch_decode([e.token_ids for e in entries], skip_special_tokens=True)
    preds = ["\n".join(split.split(t.strip())) for t in texts]
    targets = ["\n".join(split.split(golden["targets"][e.qsl_idx].strip())) for e in entries]
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=True)
    scores = [scorer.score(t, p) for t, p in zip(targets, preds)]
    out = {k: round(np.mean([s[k].fmeasure for s in scores]) * 100, 4)
           for k in ("rouge1", "rouge2", "rougeL", "rougeLsum")}
    n_tokens = sum(len(e.token_ids) for e in entries)
    out.update(gen_len=np.sum([len(p) for p in preds]), gen_num=len(preds), gen_tok_len=n_tokens,
               tokens_per_sample=round(n_tokens / len(preds), 1))
    return out


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
