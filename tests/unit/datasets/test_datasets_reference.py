"""The committed reference answers and numbers agree with the samples and can be recomputed."""
import hashlib
import json

import pytest

from mlperf_llm.datasets import embedded
from mlperf_llm.datasets.embedded_reference import rouge_scores

pytestmark = pytest.mark.skipif(not embedded.REFERENCE_FILE.is_file(),
                                reason="embedded/reference.json not generated yet (see docs/datasets.md)")


@pytest.fixture(scope="module")
def reference():
    return embedded.load_reference()


@pytest.fixture(scope="module")
def answers():
    return [json.loads(l) for l in embedded.REFERENCE_ANSWERS_FILE.read_text().splitlines() if l.strip()]


def test_reference_matches_current_samples(reference, answers):
    sha = hashlib.sha256(embedded.SAMPLES_FILE.read_bytes()).hexdigest()
    assert reference["samples_sha256"] == sha, "samples.jsonl changed: regenerate the reference answers"
    assert [a["id"] for a in answers] == [s.id for s in embedded.load_samples()]
    assert all(a["n_tokens"] == len(a["token_ids"]) >= 1 for a in answers)
    assert all(a["n_tokens"] <= reference["settings"]["max_new_tokens"] for a in answers)


def test_provenance_is_recorded(reference):
    for key in ("model_sha256", "tokenizer_sha256", "versions", "settings", "date", "backend"):
        assert reference[key], key
    assert reference["settings"]["do_sample"] is False
    assert reference["tokenizer_parity_with_transformers"] is True


@pytest.fixture(autouse=True)
def _score_in_this_process(monkeypatch):
    """One scoring worker: the unit test stays in this process (the worker pool: tests/integration/accuracy)."""
    from mlperf_llm.accuracy import scoring
    monkeypatch.setattr(scoring, "default_workers", lambda: 1)


def test_metrics_recompute_from_the_answers(reference, answers):
    from mlperf_llm.accuracy.evaluate import score_texts

    outputs = {s.id: s.output for s in embedded.load_samples()}
    preds, targets = [a["text"] for a in answers], [outputs[a["id"]] for a in answers]
    exact = score_texts(targets, preds)
    plain, _ = rouge_scores(preds, targets)  # rouge_score itself, per sample: an independent check
    for k in ("rouge1", "rouge2", "rougeL", "rougeLsum"):
        assert exact[k] == reference["metrics"][k]
        assert plain[k] == pytest.approx(reference["metrics"][k], abs=0.05)
    total = sum(a["n_tokens"] for a in answers)
    assert reference["metrics"]["tokens_per_sample"] == round(total / len(answers), 1)
    targets = embedded.accuracy_targets(reference)
    assert targets["rouge1"] == round(reference["metrics"]["rouge1"] * 0.99, 4)
