"""Test-mode accuracy over the first N samples of the embedded data set is judged against the
reference answers of those same N samples, scored the same way."""
import json

import pytest

from mlperf_llm.accuracy.evaluate import score_texts
from mlperf_llm.accuracy.log import encode_ids
from mlperf_llm.accuracy.process import AccuracyRequest, _embedded_subset
from mlperf_llm.accuracy.splitter import get_splitter
from mlperf_llm.accuracy.targets import embedded_subset_targets, judge
from mlperf_llm.datasets.embedded import REFERENCE_ANSWERS_FILE, REFERENCE_FILE, load_samples


@pytest.fixture
def embedded(tmp_path):
    import pandas as pd
    samples = load_samples()
    dataset = tmp_path / "embedded.pkl"
    pd.DataFrame({"id": [s.id for s in samples], "output": [s.output for s in samples]}).to_pickle(dataset)
    answers = [json.loads(line) for line in REFERENCE_ANSWERS_FILE.read_text().splitlines() if line.strip()]
    return samples, str(dataset), answers


@pytest.fixture(autouse=True)
def _score_in_this_process(monkeypatch):
    """One scoring worker: the unit test stays in this process (the worker pool: tests/integration/accuracy)."""
    from mlperf_llm.accuracy import scoring
    monkeypatch.setattr(scoring, "default_workers", lambda: 1)


def write_log(path, answers, indices):
    path.write_text(json.dumps([{"seq_id": k, "qsl_idx": i, "data": encode_ids(answers[i]["token_ids"])}
                                for k, i in enumerate(indices)]))
    return str(path)


def test_subset_targets_are_the_reference_answers_of_the_same_samples(embedded, tmp_path):
    samples, dataset, answers = embedded
    log = write_log(tmp_path / "log.json", answers, [3, 0, 2, 1, 4, 5, 6, 7, 8, 9, 0])  # a repeat counts once
    req = AccuracyRequest([str(tmp_path)], dataset, tokenizer="", model="llama2-70b-99", embedded_reference=str(REFERENCE_FILE))
    splitter = get_splitter()
    count, metrics = _embedded_subset(req, log, splitter)
    assert count == 10
    direct = score_texts([s.output for s in samples[:10]], [a["text"] for a in answers[:10]], splitter=splitter)
    assert metrics["rouge1"] == direct["rouge1"] and metrics["rougeL"] == direct["rougeL"]
    assert metrics["tokens_per_sample"] == round(sum(a["n_tokens"] for a in answers[:10]) / 10, 1)
    t = embedded_subset_targets("llama2-70b-99", metrics, count)
    assert "same 10 samples" in t.label and t.minimum["ROUGE1"] == pytest.approx(direct["rouge1"] * 0.99)
    # the reference answers themselves pass; 2% lower ROUGE1 does not
    values = {"ROUGE1": direct["rouge1"], "ROUGE2": direct["rouge2"], "ROUGEL": direct["rougeL"],
              "TOKENS_PER_SAMPLE": metrics["tokens_per_sample"]}
    assert judge(values, t).passed
    assert not judge(dict(values, ROUGE1=direct["rouge1"] * 0.98), t).passed


def test_the_whole_set_keeps_the_recorded_reference(embedded, tmp_path):
    samples, dataset, answers = embedded
    log = write_log(tmp_path / "log.json", answers, list(range(len(samples))))
    req = AccuracyRequest([str(tmp_path)], dataset, tokenizer="", model="llama2-70b-99", embedded_reference=str(REFERENCE_FILE))
    assert _embedded_subset(req, log, get_splitter()) is None


def test_a_data_set_the_answers_do_not_belong_to_is_named(embedded, tmp_path):
    import pandas as pd
    samples, _, answers = embedded
    other = tmp_path / "other.pkl"
    pd.DataFrame({"id": [f"x{i}" for i in range(len(samples))], "output": ["a"] * len(samples)}).to_pickle(other)
    log = write_log(tmp_path / "log.json", answers, [0, 1])
    req = AccuracyRequest([str(tmp_path)], str(other), tokenizer="", model="llama2-70b-99", embedded_reference=str(REFERENCE_FILE))
    with pytest.raises(Exception, match="not the embedded one"):
        _embedded_subset(req, log, get_splitter())
