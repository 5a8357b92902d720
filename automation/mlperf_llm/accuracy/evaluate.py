"""From mlperf_log_accuracy.json to the reference evaluate-accuracy.py numbers.

Same steps as the reference (language/llama2-70b/evaluate-accuracy.py): the first entry per
qsl_idx, token ids from hex, the run's tokenizer decodes them skipping special tokens, targets are
the data set's `output` column, both get strip + sentence split joined by newlines, ROUGE per
sample with the stemmer, mean x100 rounded to 4 places (numpy's mean, as the reference), and
tokens_per_sample = round(generated tokens / samples, 1).
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from .log import LogEntry, first_per_sample
from .rouge import ROUGE_TYPES
from .scoring import default_workers, score_pairs
from .splitter import SentenceSplitter, get_splitter


class EvaluationError(ValueError):
    pass


@dataclass
class AccuracyResult:
    rouge1: float
    rouge2: float
    rougeL: float
    rougeLsum: float
    gen_len: int            # characters of the postprocessed predictions (reference's gen_len)
    gen_num: int            # samples scored
    gen_tok_len: int        # generated tokens
    tokens_per_sample: float
    sentence_splitter: str = ""
    tokenizer: str = ""
    seconds: Dict[str, float] = field(default_factory=dict)

    def reference_dict(self) -> dict:
        """The dict the reference prints (and accuracy.txt carries), in its key order."""
        return {"rouge1": self.rouge1, "rouge2": self.rouge2, "rougeL": self.rougeL,
                "rougeLsum": self.rougeLsum, "gen_len": self.gen_len, "gen_num": self.gen_num,
                "gen_tok_len": self.gen_tok_len, "tokens_per_sample": self.tokens_per_sample}

    def checker_values(self) -> Dict[str, float]:
        return {"ROUGE1": self.rouge1, "ROUGE2": self.rouge2, "ROUGEL": self.rougeL,
                "TOKENS_PER_SAMPLE": self.tokens_per_sample}

    def as_dict(self) -> dict:
        return asdict(self)


def load_targets(dataset_file: str) -> List[str]:
    """The `output` column of the processed data set (pandas pickle), by position."""
    import pandas as pd
    try:
        frame = pd.read_pickle(dataset_file)
    except FileNotFoundError as e:
        raise EvaluationError(f"data set {dataset_file} not found: pass the processed OpenOrca "
                              f"pickle the run used (--dataset_path)") from e
    if "output" not in getattr(frame, "columns", ()):
        raise EvaluationError(f"data set {dataset_file} has no 'output' column: it is not a "
                              f"processed OpenOrca pickle")
    return [str(x) for x in frame["output"].tolist()]


def load_tokenizer(path: str):
    """The reference's tokenizer (slow, use_fast=False); the fast one where no slow one exists."""
    from transformers import AutoTokenizer
    kwargs = dict(model_max_length=2048, padding_side="left")
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, use_fast=False, **kwargs)
    except (OSError, ValueError, ImportError, TypeError):
        tokenizer = None
    if tokenizer is None or not hasattr(tokenizer, "batch_decode"):
        try:
            tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
        except OSError as e:
            raise EvaluationError(f"cannot load a tokenizer from {path}: {e}; pass the checkpoint "
                                  f"directory of the model that produced the log (--tokenizer_path)") from e
    return tokenizer


def describe_tokenizer(tokenizer, path: str) -> str:
    return f"{type(tokenizer).__name__} from {path}"


def aggregate(entries: Sequence[LogEntry], texts_scores, n_tokens: int) -> dict:
    # numpy's round on numpy's mean, as the reference (Python's round can differ in the last digit)
    out = {k: float(round(np.mean(texts_scores.column(k)) * 100, 4)) for k in ROUGE_TYPES}
    n = len(entries)
    out.update(gen_len=int(np.sum(texts_scores.prediction_chars)), gen_num=n, gen_tok_len=n_tokens,
               tokens_per_sample=round(n_tokens / n, 1))
    return out


@dataclass
class DecodedLog:
    """An accuracy log read and detokenized: the first entry per qsl_idx, each one's reference text
    from the data set (by qsl_idx) and its decoded prediction, in log order."""
    entries: List[LogEntry]
    references: List[str]
    predictions: List[str]
    tokenizer: str                      # which tokenizer decoded them
    seconds: Dict[str, float]


def decode_log(accuracy_log: str, dataset_file: str, load_references: Callable[[str], List[str]],
               tokenizer_path: str, dtype: str = "int32", tokenizer=None) -> DecodedLog:
    """The steps every benchmark's evaluation shares: first entry per qsl_idx, the data set's
    reference texts (`load_references(dataset_file)`, by position), the run's tokenizer decoding
    the token ids with skip_special_tokens=True."""
    seconds = {}
    t0 = time.perf_counter()
    entries = first_per_sample(accuracy_log, dtype)
    if not entries:
        raise EvaluationError(f"accuracy log {accuracy_log} has no entries: was the run an "
                              f"AccuracyOnly run that completed?")
    references_all = load_references(dataset_file)
    bad = [e.qsl_idx for e in entries if not 0 <= e.qsl_idx < len(references_all)]
    if bad:
        raise EvaluationError(f"qsl_idx {bad[:5]} outside the data set {dataset_file} "
                              f"({len(references_all)} rows): the log comes from another data set")
    references = [references_all[e.qsl_idx] for e in entries]
    seconds["read"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    tokenizer = tokenizer or load_tokenizer(tokenizer_path)
    predictions = tokenizer.batch_decode([e.token_ids.tolist() for e in entries], skip_special_tokens=True)
    seconds["detokenize"] = time.perf_counter() - t0
    return DecodedLog(entries, references, predictions, describe_tokenizer(tokenizer, tokenizer_path), seconds)


def evaluate(accuracy_log: str, dataset_file: str, tokenizer_path: str, dtype: str = "int32",
             workers: Optional[int] = None, splitter: Optional[SentenceSplitter] = None,
             tokenizer=None) -> AccuracyResult:
    """llama2-70b's evaluate-accuracy.py on an accuracy log of the processed OpenOrca data set."""
    log = decode_log(accuracy_log, dataset_file, load_targets, tokenizer_path, dtype, tokenizer)
    splitter = splitter or get_splitter()
    t0 = time.perf_counter()
    scores = score_pairs(log.references, log.predictions, splitter=splitter, workers=workers or default_workers())
    seconds = dict(log.seconds, split_and_score=time.perf_counter() - t0)

    n_tokens = int(sum(len(e.token_ids) for e in log.entries))
    numbers = aggregate(log.entries, scores, n_tokens)
    return AccuracyResult(**numbers, sentence_splitter=f"{splitter.name}: {splitter.detail}",
                          tokenizer=log.tokenizer, seconds={k: round(v, 3) for k, v in seconds.items()})


def score_texts(targets: Sequence[str], predictions: Sequence[str],
                splitter: Optional[SentenceSplitter] = None, workers: Optional[int] = None) -> dict:
    """ROUGE of decoded texts the reference way (postprocess, per-sample ROUGE, numpy mean x100
    rounded to 4): rouge1, rouge2, rougeL, rougeLsum, gen_len, and the splitter used. For callers
    that already have text (e.g. the embedded data set's reference answers)."""
    splitter = splitter or get_splitter()
    scores = score_pairs(targets, predictions, splitter=splitter, workers=workers)
    out = {k: float(round(np.mean(scores.column(k)) * 100, 4)) for k in ROUGE_TYPES}
    out.update(gen_len=int(np.sum(scores.prediction_chars)),
               sentence_splitter=f"{splitter.name}: {splitter.detail}")
    return out
