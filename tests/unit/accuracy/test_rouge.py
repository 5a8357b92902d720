"""Every score of mlperf_llm.accuracy.rouge equals rouge_score's, exactly (not just within 1e-9)."""
import random

import pytest
from rouge_score import rouge_scorer

from mlperf_llm.accuracy.rouge import ROUGE_TYPES, RougeScorer, lcs_length

REFERENCE = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)


def reference(target, prediction):
    scores = REFERENCE.score(target, prediction)
    return tuple(scores[k].fmeasure for k in ROUGE_TYPES)


def random_text(rng, vocab, max_lines, max_words):
    return "\n".join(" ".join(rng.choice(vocab) for _ in range(rng.randint(0, max_words)))
                     for _ in range(rng.randint(0, max_lines)))


@pytest.mark.parametrize("vocab_size", [2, 3, 6, 40])
def test_random_texts_equal_reference(vocab_size):
    # small vocabularies make many equal-length LCS choices: the backtrack's tie rule decides rougeLsum
    rng = random.Random(vocab_size)
    words = ["alpha", "runs", "running", "the", "cat.", "Dogs,", "x1", "b", "ÉTÉ", "can't"]
    vocab = (words * 5)[:vocab_size]
    ours = RougeScorer()
    for _ in range(400):
        t, p = random_text(rng, vocab, 8, 25), random_text(rng, vocab, 8, 25)
        assert ours.score(t, p).as_tuple() == reference(t, p), (t, p)


@pytest.mark.parametrize("target,prediction", [
    ("", ""), ("", "a b c"), ("a b c", ""), ("...", "!!!"), ("\n\n", "a\n\nb"),
    ("The cats are running.\nThey ran home.", "Cats run home.\nThe cat was running."),
    ("İstanbul K Kelvin Σίσυφος straße", "istanbul k kelvin straße"),
    ("e.g. 3.14 is pi; U.S.A. won't", "eg 3 14 is pi usa won t"),
    ("a a a a b b\na b a b", "b a b a\na a b b a"),
])
def test_edge_cases_equal_reference(target, prediction):
    assert RougeScorer().score(target, prediction).as_tuple() == reference(target, prediction)


def dp_lcs(a, b):
    t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            t[i][j] = t[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(t[i - 1][j], t[i][j - 1])
    return t[-1][-1]


def test_lcs_length_matches_dynamic_programming():
    rng = random.Random(7)
    for _ in range(300):
        a = [rng.choice("abcd") for _ in range(rng.randint(0, 90))]
        b = [rng.choice("abcd") for _ in range(rng.randint(0, 90))]
        assert lcs_length(a, b) == dp_lcs(a, b)


def test_long_texts_equal_reference():
    # realistic lengths (~300 tokens, many lines): the multi-line integer layout spans many words
    rng = random.Random(11)
    vocab = [f"w{i}" for i in range(60)] + ["the", "and", "of", "is"] * 10
    ours = RougeScorer()
    for _ in range(20):
        t = ". \n".join(" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 30))) for _ in range(15))
        p = ". \n".join(" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 30))) for _ in range(15))
        assert ours.score(t, p).as_tuple() == reference(t, p)
