"""ROUGE-1/2/L/Lsum with the numbers of `rouge_score` (use_stemmer=True), computed fast.

What `rouge_score.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=True)
.score(target, prediction)` computes, per pair of texts, and how this module gets the same floats:

- Tokens: lowercase, every run of characters outside [a-z0-9] is a separator, words longer than
  3 characters go through NLTK's Porter stemmer. The reference tokenizes and stems each text twice
  (once whole, once per line for rougeLsum) and stems every word every time. Here each text is
  tokenized once, per line; the whole-text tokens are the concatenation of the line tokens (a
  newline is a separator), and each distinct word is stemmed once per process (memo table).
- rouge1/rouge2: n-gram counts and clipped overlap, the same formulas in the same order.
- rougeL: the LCS length by the bit-parallel algorithm (Allison-Dix / Hyyrö): one big-integer
  step per prediction token instead of a Python loop over the whole DP table.
- rougeLsum (summary-level LCS with the union of one LCS per (reference line, prediction line)):
  the reference backtracks one LCS per pair through a full DP table, preferring a match, then "up"
  on ties. That choice decides the union, so it is reproduced exactly, but for all reference lines
  at once: the reference lines sit side by side in one integer (a guard bit between them stops
  carries), the forward pass keeps each column's bit vector, and the backtrack walks the columns
  right to left, finding in every line segment the next match-or-forced-left row with one
  addition (its carry runs over the rows that would be skipped "up"). The double-counting rule of
  the reference reduces to sum over tokens of min(union occurrences, prediction count).

`tests/unit/accuracy/test_rouge.py` checks every score against rouge_score itself.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")

_NON_ALNUM_KEEP_LINES = re.compile(r"[^a-z0-9\n]+")
_VALID_TOKEN = re.compile(r"^[a-z0-9]+$")

# byte -> byte with its 8 bits in reverse order (used to mirror a bit vector)
_REVERSE_BITS = bytes(int(f"{b:08b}"[::-1], 2) for b in range(256))


@dataclass(frozen=True)
class RougeScores:
    """F-measures of one (target, prediction) pair, as rouge_score's `Score.fmeasure`."""
    rouge1: float
    rouge2: float
    rougeL: float
    rougeLsum: float

    def as_tuple(self) -> Tuple[float, float, float, float]:
        return (self.rouge1, self.rouge2, self.rougeL, self.rougeLsum)


def fmeasure(precision: float, recall: float) -> float:
    """The F1 of rouge_score.scoring.fmeasure, same operations in the same order."""
    if precision + recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.0


class RougeTokenizer:
    """rouge_score's DefaultTokenizer(use_stemmer=True) with a per-word memo of the stemmed form."""

    def __init__(self) -> None:
        from nltk.stem import porter
        self._stemmer = porter.PorterStemmer()
        self._memo: Dict[str, Optional[str]] = {}

    def _token(self, word: str) -> Optional[str]:
        token = self._stemmer.stem(word) if len(word) > 3 else word
        if not _VALID_TOKEN.match(token):
            token = None
        self._memo[word] = token
        return token

    def tokenize_lines(self, text: str) -> List[List[str]]:
        """Tokens of each line (rougeLsum's sentences); a line without tokens gives an empty list
        (the reference drops empty lines, and a line without tokens adds nothing to any score)."""
        memo = self._memo
        out = []
        for line in _NON_ALNUM_KEEP_LINES.sub(" ", text.lower()).split("\n"):
            tokens = []
            for word in line.split():
                token = memo[word] if word in memo else self._token(word)
                if token is not None:
                    tokens.append(token)
            out.append(tokens)
        return out


def _ngram_f(target: Sequence, prediction: Sequence, n: int) -> float:
    if n == 1:
        target_counts, prediction_counts = Counter(target), Counter(prediction)
    else:
        target_counts = Counter(zip(*(target[i:] for i in range(n))))
        prediction_counts = Counter(zip(*(prediction[i:] for i in range(n))))
    overlap = 0
    for gram, count in target_counts.items():
        other = prediction_counts.get(gram, 0)
        overlap += count if count < other else other
    target_total = max(len(target) - n + 1, 0)
    prediction_total = max(len(prediction) - n + 1, 0)
    precision = overlap / max(prediction_total, 1)
    recall = overlap / max(target_total, 1)
    return fmeasure(precision, recall)


def _position_masks(tokens: Sequence[str], offset: int = 0) -> Dict[str, int]:
    masks: Dict[str, int] = {}
    for i, token in enumerate(tokens, offset):
        masks[token] = masks.get(token, 0) | (1 << i)
    return masks


def lcs_length(target: Sequence[str], prediction: Sequence[str]) -> int:
    """Length of the longest common subsequence (bit-parallel, one step per prediction token)."""
    if not target or not prediction:
        return 0
    masks = _position_masks(target)
    full = (1 << len(target)) - 1
    v = full
    for token in prediction:
        m = masks.get(token)
        if m:
            u = v & m
            v = ((v + u) | (v - u)) & full
    return len(target) - v.bit_count()


def _lcs_f(target: Sequence[str], prediction: Sequence[str]) -> float:
    if not target or not prediction:
        return 0.0
    lcs = lcs_length(target, prediction)
    return fmeasure(lcs / len(prediction), lcs / len(target))


class _LineLayout:
    """Reference lines side by side in one integer: [guard][line 0][guard][line 1][guard]..."""

    def __init__(self, lines: Sequence[Sequence[str]]) -> None:
        self.masks: Dict[str, int] = {}
        keep = tops = 0
        position = 1  # bit 0 is the guard below line 0
        for line in lines:
            if not line:
                continue
            for i, token in enumerate(line, position):
                self.masks[token] = self.masks.get(token, 0) | (1 << i)
            keep |= ((1 << len(line)) - 1) << position
            tops |= 1 << (position + len(line) - 1)
            position += len(line) + 1  # the next guard
        self.keep = keep
        self.nbytes = (position + 8) // 8
        self.tops_mirrored = self.mirror(tops)
        self.mirrored_masks = {token: self.mirror(m) for token, m in self.masks.items()}

    def mirror(self, x: int) -> int:
        """Bit i -> bit (8*nbytes - 1 - i): turns "search down" into "carry up"."""
        return int.from_bytes(x.to_bytes(self.nbytes, "little").translate(_REVERSE_BITS), "big")


def _union_lcs_bits(layout: _LineLayout, candidate: Sequence[str]) -> int:
    """Mirrored bits of the reference positions on rouge_score's LCS of every reference line
    with this candidate line (its `_backtrack_norec` choice)."""
    masks, keep, nbytes = layout.masks, layout.keep, layout.nbytes
    from_bytes, table = int.from_bytes, _REVERSE_BITS
    mirrored = layout.mirrored_masks
    columns = []      # per column: the mirrored bit vector (shared while it does not change)
    v = keep
    vr = layout.mirror(v)
    for token in candidate:
        m = masks.get(token)
        if m:
            u = v & m
            if u:
                v = ((v + u) | (v ^ u)) & keep  # u is a subset of v: v - u == v ^ u
                vr = from_bytes(v.to_bytes(nbytes, "little").translate(table), "big")
        columns.append(vr)
    union = 0
    start = layout.tops_mirrored  # per line: the lowest row still open to the backtrack
    for j in range(len(candidate) - 1, -1, -1):
        match = mirrored.get(candidate[j], 0)
        skip = columns[j] & ~match                 # rows the backtrack passes going "up"
        found = (skip + start) & ~skip             # first match-or-left row per line (or its guard)
        hit = found & match
        union |= hit
        start = (found ^ hit) | (hit << 1)
    return union


def _summary_lcs_f(target_lines: List[List[str]], prediction_lines: List[List[str]]) -> float:
    m = sum(map(len, target_lines))
    n = sum(map(len, prediction_lines))
    if not m or not n:
        return 0.0
    layout = _LineLayout(target_lines)
    union = 0
    for line in prediction_lines:
        if any(token in layout.masks for token in line):
            union |= _union_lcs_bits(layout, line)
    union = layout.mirror(union)
    prediction_counts = Counter(token for line in prediction_lines for token in line)
    hits = 0
    for token, count in prediction_counts.items():
        mask = layout.masks.get(token)
        if mask:
            in_union = (union & mask).bit_count()
            hits += in_union if in_union < count else count
    return fmeasure(hits / n, hits / m)


class RougeScorer:
    """Scores (target, prediction) pairs; keep one per process so the stem memo is reused."""

    def __init__(self) -> None:
        self.tokenizer = RougeTokenizer()

    def score(self, target: str, prediction: str) -> RougeScores:
        target_lines = self.tokenizer.tokenize_lines(target)
        prediction_lines = self.tokenizer.tokenize_lines(prediction)
        target_tokens = [t for line in target_lines for t in line]
        prediction_tokens = [t for line in prediction_lines for t in line]
        return RougeScores(
            rouge1=_ngram_f(target_tokens, prediction_tokens, 1),
            rouge2=_ngram_f(target_tokens, prediction_tokens, 2),
            rougeL=_lcs_f(target_tokens, prediction_tokens),
            rougeLsum=_summary_lcs_f(target_lines, prediction_lines),
        )
