"""llama3.1-8b's summarisation scores: the reference evaluation.py's numbers, computed its way with
rouge_score itself (no fakes), equal to mlperf_llm.accuracy.summarization's."""
import numpy as np
import pytest
from rouge_score import rouge_scorer

from mlperf_llm.accuracy.evaluate import EvaluationError
from mlperf_llm.accuracy.splitter import get_splitter
from mlperf_llm.accuracy.summarization import SummaryScores, score_summaries

from news_summaries import HIGHLIGHTS, PREDICTIONS

TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")


def reference_way(predictions, references, split):
    """language/llama3.1-8b/evaluation.py's steps, written out with rouge_score and numpy."""
    preds = ["\n".join(split(p.strip())) for p in predictions]
    refs = ["\n".join(split(r.strip())) for r in references]
    scorer = rouge_scorer.RougeScorer(list(TYPES), use_stemmer=True)
    per_pair = [scorer.score(r, p) for r, p in zip(refs, preds)]
    out = {k: f"{round(np.mean([s[k].fmeasure for s in per_pair]) * 100, 4)}" for k in TYPES}
    out["gen_len"] = np.sum([len(p) for p in preds])
    out["gen_num"] = len(preds)
    return out


def test_news_summaries_score_as_the_reference():
    splitter = get_splitter()
    ours = score_summaries(predictions=PREDICTIONS, references=HIGHLIGHTS, splitter=splitter, workers=1)
    assert ours.reference_dict() == reference_way(PREDICTIONS, HIGHLIGHTS, splitter.split)
    # the measured numbers, so a change in any step shows
    assert ours.reference_dict() == {"rouge1": "61.8829", "rouge2": "42.3958", "rougeL": "52.6521",
                                     "rougeLsum": "55.5798", "gen_len": 1235, "gen_num": 8}
    assert ours.sentence_splitter.startswith(splitter.name)


def test_gen_len_counts_characters_after_strip_split_and_newline_join():
    # "  One.  Two.  " -> "One.\nTwo." (9 characters); "" -> 0; the raw lengths would be 14 and 0
    scores = score_summaries(predictions=["  One.  Two.  ", ""], references=["One. Two.", "Three."], workers=1)
    assert (scores.gen_len, scores.gen_num) == (9, 2)
    assert isinstance(scores.gen_len, int) and scores.rouge1 == 50.0


def test_reference_dict_has_plain_numbers_and_checker_values_the_checker_names():
    s = SummaryScores(rouge1=38.7792, rouge2=15.9075, rougeL=24.4957, rougeLsum=35.793, gen_len=8167644,
                      gen_num=13368, sentence_splitter="x")
    assert repr(s.reference_dict()) == ("{'rouge1': '38.7792', 'rouge2': '15.9075', 'rougeL': '24.4957', "
                                        "'rougeLsum': '35.793', 'gen_len': 8167644, 'gen_num': 13368}")
    assert s.checker_values() == {"ROUGE1": 38.7792, "ROUGE2": 15.9075, "ROUGEL": 24.4957,
                                  "ROUGELSUM": 35.793, "GEN_LEN": 8167644}


def test_bad_inputs_name_the_fix():
    with pytest.raises(EvaluationError, match="2 predictions but 1 reference"):
        score_summaries(predictions=["a", "b"], references=["a"], workers=1)
    with pytest.raises(EvaluationError, match="no predictions"):
        score_summaries(predictions=[], references=[], workers=1)
