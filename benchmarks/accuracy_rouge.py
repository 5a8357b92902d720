"""ROUGE scoring: the reference approach against mlperf_llm.accuracy, side by side, one run.

Reference approach: rouge_score.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"],
use_stemmer=True).score(target, prediction) for every sample (what evaluate's "rouge" metric does
inside the reference evaluate-accuracy.py), in one process, or split over N processes like the
v5.x reference (--reference-workers). Ours: mlperf_llm.accuracy.scoring.score_pairs on all cores.

Data: 24,576 (target, prediction) pairs of about 300 Llama tokens each, generated
deterministically from a word-bigram model of the embedded data set's English text; predictions
reuse, reorder and rephrase the target's sentences so that ROUGE lands near the real llama2-70b
numbers. Both sides get the same sentence-split texts (splitting is timed separately).

    PYTHONPATH=automation python benchmarks/accuracy_rouge.py [--samples N] [--workers N]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import time
from multiprocessing import get_context
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "automation"))

from mlperf_llm.accuracy.rouge import ROUGE_TYPES  # noqa: E402
from mlperf_llm.accuracy.scoring import default_workers, score_pairs  # noqa: E402
from mlperf_llm.accuracy.splitter import get_splitter  # noqa: E402

CORPUS = ROOT / "automation" / "mlperf_llm" / "datasets" / "embedded" / "samples.jsonl"


def _bigram_model(path: Path):
    words = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            for field in ("output", "question", "system_prompt"):
                words.extend(str(row.get(field, "")).split())
    successors = {}
    for a, b in zip(words, words[1:]):
        successors.setdefault(a, []).append(b)
    return words, successors


class TextGenerator:
    def __init__(self, path: Path = CORPUS):
        self.words, self.successors = _bigram_model(path)

    def sentence(self, rng: random.Random) -> str:
        word = rng.choice(self.words)
        out = [word]
        for _ in range(rng.randint(6, 24)):
            word = rng.choice(self.successors.get(word) or self.words)
            out.append(word)
        text = " ".join(out).rstrip(".,;:!?\"'")
        return text[:1].upper() + text[1:] + rng.choice(".....?!")

    def text(self, rng: random.Random, words: int) -> list:
        sentences, n = [], 0
        while n < words:
            s = self.sentence(rng)
            sentences.append(s)
            n += len(s.split())
        return sentences

    def pair(self, seed: int, words: int = 230):
        rng = random.Random(seed)
        target = self.text(rng, rng.randint(words // 2, words * 3 // 2))
        prediction = []
        for s in target:
            r = rng.random()
            if r < 0.35:  # reworded: keep some words, swap some, drop some
                kept = [w if rng.random() < 0.6 else rng.choice(self.words)
                        for w in s.split() if rng.random() < 0.8]
                prediction.append(" ".join(kept))
            elif r < 0.75:
                prediction.append(self.sentence(rng))
            elif r < 0.8:
                prediction.append(s)
        for i in range(len(prediction) - 1):  # a little reordering
            if rng.random() < 0.2:
                prediction[i], prediction[i + 1] = prediction[i + 1], prediction[i]
        prediction += self.text(rng, rng.randint(0, words // 3))
        return " ".join(target), " ".join(prediction)


def _reference_chunk(bounds):
    from rouge_score import rouge_scorer
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    lo, hi = bounds
    return [tuple(s[k].fmeasure for k in ROUGE_TYPES)
            for s in (scorer.score(_PAIRS[0][i], _PAIRS[1][i]) for i in range(lo, hi))]


_PAIRS = None


def cpu_seconds() -> float:
    """CPU time of this process and its finished children: robust to other jobs on the cores."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def reference_scores(targets, predictions, workers: int):
    global _PAIRS
    _PAIRS = (targets, predictions)
    n = len(targets)
    if workers == 1:
        return _reference_chunk((0, n))
    size = -(-n // workers)  # the v5.x reference: one chunk per process
    with get_context("fork").Pool(workers) as pool:
        parts = pool.map(_reference_chunk, [(i, min(i + size, n)) for i in range(0, n, size)])
    return [row for part in parts for row in part]


def crashed(side: str, e: Exception) -> int:
    print(f"accuracy_rouge: FAILED, no result: {side} crashed: {type(e).__name__}: {e}", file=sys.stderr)
    return 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--samples", type=int, default=24576)
    p.add_argument("--workers", type=int, default=default_workers(), help="processes for ours")
    p.add_argument("--reference-workers", type=int, default=1,
                   help="processes for the reference approach (1 = RougeScorer per sample, one core)")
    p.add_argument("--reference-samples", type=int, default=0,
                   help="score only the first N pairs the reference way (default: all); the ratio is "
                        "then per sample, and says so")
    p.add_argument("--json", help="also write the numbers to this file")
    args = p.parse_args(argv)

    t0 = time.perf_counter()
    gen = TextGenerator()
    raw = [gen.pair(i) for i in range(args.samples)]
    t_gen = time.perf_counter() - t0
    splitter = get_splitter()
    t0 = time.perf_counter()
    targets = [splitter.postprocess(t) for t, _ in raw]
    predictions = [splitter.postprocess(q) for _, q in raw]
    t_split = time.perf_counter() - t0
    words = np.mean([len(t.split()) for t in targets + predictions])
    print(f"{args.samples} pairs generated in {t_gen:.1f} s, mean {words:.0f} words per text "
          f"(~{words * 1.3:.0f} Llama tokens); sentence split ({splitter.name}) {t_split:.1f} s, untimed below")

    t0, c0 = time.perf_counter(), cpu_seconds()
    try:
        ours = score_pairs(targets, predictions, workers=args.workers)
    except Exception as e:
        return crashed("ours (mlperf_llm.accuracy.scoring)", e)
    t_ours, c_ours = time.perf_counter() - t0, cpu_seconds() - c0
    print(f"ours      ({args.workers} processes): {t_ours:8.2f} s wall, {c_ours:8.2f} s CPU", flush=True)
    n_ref = min(args.reference_samples or args.samples, args.samples)
    t0, c0 = time.perf_counter(), cpu_seconds()
    try:
        ref = reference_scores(targets[:n_ref], predictions[:n_ref], args.reference_workers)
    except Exception as e:
        return crashed("the reference (rouge_score.RougeScorer)", e)
    t_ref, c_ref = time.perf_counter() - t0, cpu_seconds() - c0
    print(f"reference ({args.reference_workers} process{'es' if args.reference_workers > 1 else ''}): "
          f"{t_ref:8.2f} s wall, {c_ref:8.2f} s CPU for {n_ref} pairs")
    if n_ref < args.samples:  # compare per pair: the reference did fewer
        scale = args.samples / n_ref
        t_ref, c_ref = t_ref * scale, c_ref * scale
        print(f"  scaled to {args.samples} pairs: {t_ref:8.2f} s wall, {c_ref:8.2f} s CPU (an estimate)")

    worst = 0.0
    for k, rouge_type in enumerate(ROUGE_TYPES):
        ref_col = [row[k] for row in ref]
        ours_col = ours.column(rouge_type)[:n_ref]
        diff = max(abs(a - b) for a, b in zip(ref_col, ours_col))
        worst = max(worst, diff)
        print(f"  {rouge_type:9s} mean x100 ours {round(np.mean(ours_col) * 100, 4):8.4f} "
              f"reference {round(np.mean(ref_col) * 100, 4):8.4f}  max |diff| per sample {diff:.3g}")
    equal = worst <= 1e-9
    print(f"every per-sample score equal within 1e-9: {equal} ({n_ref} pairs compared)")
    print(f"speed-up: {t_ref / t_ours:.1f}x wall (reference {args.reference_workers} process(es) vs ours "
          f"{args.workers} process(es), {os.cpu_count()} CPUs, load average now {os.getloadavg()[0]:.1f}); "
          f"{c_ref / c_ours:.1f}x less CPU time")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "samples": args.samples, "ours_seconds": t_ours, "reference_seconds": t_ref,
            "ours_cpu_seconds": c_ours, "reference_cpu_seconds": c_ref, "cpu_ratio": c_ref / c_ours,
            "ours_workers": args.workers, "reference_workers": args.reference_workers,
            "reference_samples": n_ref, "reference_scaled": n_ref < args.samples,
            "ratio": t_ref / t_ours, "max_abs_diff": worst, "equal": equal}, indent=1))
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
