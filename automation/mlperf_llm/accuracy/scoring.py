"""Per-sample ROUGE over many (target, prediction) pairs, on every core, in the input order.

Workers are forked with the texts already in memory (nothing is pickled on the way in); each
keeps one RougeScorer, so the stem memo grows once per process. Sentence splitting, when asked
for, also runs in the workers: it costs about as much as the scoring itself.
"""
from __future__ import annotations

import multiprocessing
import os
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from .rouge import ROUGE_TYPES, RougeScorer
from .splitter import SentenceSplitter

_JOB: Optional[Tuple[Sequence[str], Sequence[str], Optional[SentenceSplitter]]] = None
_SCORER: Optional[RougeScorer] = None


@dataclass
class PairScores:
    """Column per ROUGE type (fmeasure per sample, input order) and the predictions' lengths."""
    rouge1: List[float]
    rouge2: List[float]
    rougeL: List[float]
    rougeLsum: List[float]
    prediction_chars: List[int]   # len() of each postprocessed prediction (the reference's gen_len)

    def column(self, rouge_type: str) -> List[float]:
        return getattr(self, rouge_type)


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _scorer() -> RougeScorer:
    """The process's scorer, made once (its tokenizer loads nltk's stemmer: ~2 s on the slow kind of
    host). Made before the workers are forked, so each inherits it instead of loading its own."""
    global _SCORER
    if _SCORER is None:
        _SCORER = RougeScorer()
    return _SCORER


def _score_range(bounds: Tuple[int, int]) -> Tuple[List[Tuple[float, ...]], List[int]]:
    scorer = _scorer()
    targets, predictions, splitter = _JOB
    rows, lengths = [], []
    for i in range(*bounds):
        target, prediction = targets[i], predictions[i]
        if splitter is not None:
            target, prediction = splitter.postprocess(target), splitter.postprocess(prediction)
        rows.append(scorer.score(target, prediction).as_tuple())
        lengths.append(len(prediction))
    return rows, lengths


def _chunks(n: int, workers: int) -> List[Tuple[int, int]]:
    # small chunks balance the load between processes sharing busy cores
    size = max(1, min(512, -(-n // (workers * 8))))
    return [(lo, min(lo + size, n)) for lo in range(0, n, size)]


def _worker_signals() -> None:
    """In a worker: the signals' default actions, not the handlers the run installed before the
    fork (cmengine.interrupt), which would turn the pool's SIGTERM into a traceback; Ctrl-C goes to
    the run, which ends the pool."""
    import signal
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _map_in_workers(chunks: list, workers: int) -> list:
    """_score_range over the chunks in forked workers. A finished map closes the pool and waits for
    the workers to take their end-of-work sentinel and exit: `with Pool()` would terminate() them, and
    a SIGTERM that reaches a worker between its fork and Python's after-fork reset is lost, leaving
    that worker waiting on the task queue and terminate() joining it forever (seen in a replay,
    2026-11-25). Only a map that failed or was interrupted terminates the pool."""
    _scorer()                   # loaded once here, not once per worker
    pool = multiprocessing.get_context("fork").Pool(workers, initializer=_worker_signals)
    finished = False
    try:
        parts = pool.map(_score_range, chunks, chunksize=1)
        pool.close()
        finished = True
    finally:
        if not finished:
            pool.terminate()
        pool.join()
    return parts


def score_pairs(targets: Sequence[str], predictions: Sequence[str],
                splitter: Optional[SentenceSplitter] = None,
                workers: Optional[int] = None) -> PairScores:
    """Score prediction i against target i. With `splitter`, texts are raw and get the
    reference's postprocessing first; without, they are already newline-joined sentences."""
    global _JOB
    if len(targets) != len(predictions):
        raise ValueError(f"{len(targets)} targets but {len(predictions)} predictions")
    workers = workers or default_workers()
    _JOB = (targets, predictions, splitter)
    try:
        chunks = _chunks(len(targets), workers)
        if workers == 1 or len(chunks) == 1:
            parts = [_score_range(c) for c in chunks]
        else:
            parts = _map_in_workers(chunks, workers)
    finally:
        _JOB = None
    rows = [row for part_rows, _ in parts for row in part_rows]
    lengths = [n for _, part_lengths in parts for n in part_lengths]
    columns = list(zip(*rows)) if rows else [()] * len(ROUGE_TYPES)
    return PairScores(*(list(c) for c in columns), prediction_chars=lengths)
