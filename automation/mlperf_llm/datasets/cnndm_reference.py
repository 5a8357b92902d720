"""Reference answers and numbers of the embedded summarisation set, one pair per split:

    embedded_cnndm/validation/reference.json, reference_answers.jsonl   all 300 stories (llama3.1-8b)
    embedded_cnndm/edge/reference.json, reference_answers.jsonl         the 112 of the edge subset (llama3.1-8b-edge)

    # 1. greedy generation with transformers (needs torch + transformers; the converted SmolLM2 folder):
    PYTHONPATH=automation ML_VENV/bin/python -m mlperf_llm.datasets.cnndm_reference \\
        generate --model SMOLLM2_HF_DIR --split validation
    # 2. the numbers, with the accuracy step's own scorer (dev venv):
    PYTHONPATH=automation DEV_VENV/bin/python -m mlperf_llm.datasets.cnndm_reference score --split validation

Each split has its own folder with the OpenOrca set's file names, so the accuracy step finds a
split's answers beside the reference.json it judges by (the subset rule of a test-mode run:
mlperf_llm.accuracy.process). The edge answers are generated from the edge split's own prompts, as
an edge run sends them, rather than taken from validation's (batches of other prompts could move a
greedy answer by a rounding).

`generate` builds the split's rows with the model's tokenizer as build_embedded does (the cnn_eval
template, tokenizer.encode with special tokens, no chat template), checks that transformers'
tokenizer gives the same ids, decodes greedily with the benchmark's min_new_tokens and
max_new_tokens (128) in greedy.py's batches, and writes reference_answers.jsonl (id = story id,
n_tokens, token_ids, text) and the provenance half of reference.json. `score` adds `metrics` as
the benchmark scores a run (mlperf_llm.accuracy.summarization: rouge1, rouge2, rougeL, rougeLsum
x100 rounded to 4 places, gen_len = characters of all postprocessed answers, gen_num; also
gen_tok_len and capped, the answers that hit max_new_tokens) and `samples`, the rows they cover:
the keys mlperf_llm.accuracy.targets reads.
"""
from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

from ..benchmarks import get_benchmark
from ..files import sha256_file, write_json_atomic
from . import cnndm
from .cnndm_embedded import (ANSWERS_NAME, ARTICLES_FILE, EMBEDDED_DIR, PROMPT_FORMAT, REFERENCE_NAME, SPLITS, Story,
                             build_rows, load_stories, select)
from .greedy import (Generator, Prompt, Settings, command_line, greedy_answers, now, provenance,
                     read_jsonl, transformers_generator, write_jsonl)
from .schema import DatasetError
from .tokenizer import ModelTokenizer

# the benchmark each split stands in for: its generation settings are the reference's
SPLIT_BENCHMARK = {"validation": "llama3.1-8b", "edge": "llama3.1-8b-edge"}


def _checked(split: str) -> str:
    if split not in SPLITS:
        raise DatasetError(f"split {split!r} is unknown for the embedded summarisation set; use one of {list(SPLITS)}.")
    return split


def split_dir(split: str) -> Path:
    return EMBEDDED_DIR / _checked(split)


def settings_for(split: str, batch_size: int = Settings.batch_size, threads: int = Settings.threads,
                 dtype: str = Settings.dtype) -> Settings:
    """The benchmark's own generation length (mlperf_llm.benchmarks) with the given batching."""
    bench = get_benchmark(SPLIT_BENCHMARK[_checked(split)])
    return Settings(max_new_tokens=bench.max_new_tokens, min_new_tokens=bench.min_new_tokens,
                    batch_size=batch_size, threads=threads, dtype=dtype)


def tokenizer_mismatches(model_dir, rows: list[cnndm.SummaryRow]) -> int:
    """Rows whose tok_input differs from transformers' tokenizer(prompt)["input_ids"]."""
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(str(model_dir))
    return sum(1 for r in rows if list(hf(r.prompt)["input_ids"]) != list(r.tok_input))


def _ids_sha256(stories: list[Story]) -> str:
    return hashlib.sha256(",".join(s.id for s in stories).encode()).hexdigest()


def generate(model_dir, split: str, settings: Settings | None = None, generator: Generator | None = None,
             out_dir=None) -> dict:
    """Greedy answers of the split's stories into out_dir (default: the split's package folder);
    `generator`: the model (default: transformers on model_dir's weights). Returns the provenance."""
    model_dir = Path(model_dir)
    out = Path(out_dir) if out_dir else split_dir(split)
    settings = settings or settings_for(split)
    stories = select(load_stories(), split)
    tok = ModelTokenizer.from_folder(model_dir)
    rows = build_rows(stories, tok)
    mismatches = tokenizer_mismatches(model_dir, rows)
    if mismatches:
        raise DatasetError(f"{mismatches} of {len(rows)} prompts tokenize differently with transformers' tokenizer "
                           f"of {model_dir}: fix mlperf_llm.datasets.tokenizer (or the tokenizer folder) first.")
    gen = generator or transformers_generator(model_dir, settings)
    t0 = time.time()
    answers = greedy_answers([Prompt(s.id, r.tok_input) for s, r in zip(stories, rows)], gen, tok.decode,
                             settings.batch_size)
    seconds = time.time() - t0
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / ANSWERS_NAME, answers)
    record = dict(provenance(model_dir, tok.fingerprint(), gen, settings, answers, seconds),
                  split=split, benchmark=SPLIT_BENCHMARK[split], prompt_format=PROMPT_FORMAT,
                  articles_sha256=sha256_file(str(ARTICLES_FILE)), ids_sha256=_ids_sha256(stories),
                  tokenizer_parity_with_transformers=True)
    write_json_atomic(out / REFERENCE_NAME, record, indent=1, sort_keys=True)
    return record


def score(split: str, out_dir=None) -> dict:
    """Add the metrics of the split's answers to its reference.json, scored as the accuracy step
    scores a run (so the targets derived from them are measured the same way)."""
    from mlperf_llm.accuracy.summarization import score_summaries

    folder = Path(out_dir) if out_dir else split_dir(split)
    ref_path, answers_path = folder / REFERENCE_NAME, folder / ANSWERS_NAME
    if not ref_path.is_file() or not answers_path.is_file():
        raise DatasetError(f"{ref_path} or {answers_path} is missing: run `generate --split {split}` first.")
    reference = json.loads(ref_path.read_text(encoding="utf-8"))
    stories = select(load_stories(), split)
    answers = read_jsonl(answers_path)
    if [a["id"] for a in answers] != [s.id for s in stories] or reference.get("ids_sha256") != _ids_sha256(stories):
        raise DatasetError(f"{answers_path} does not answer the {split} split's {len(stories)} stories in order "
                           f"(the stories or the split changed): run `generate --split {split}` again.")
    by_id = {s.id: s for s in stories}
    scores = score_summaries(predictions=[a["text"] for a in answers],
                             references=[by_id[a["id"]].reference for a in answers])
    eos = reference["settings"]["eos_token_id"]
    reference.update(
        metrics={"rouge1": scores.rouge1, "rouge2": scores.rouge2, "rougeL": scores.rougeL,
                 "rougeLsum": scores.rougeLsum, "gen_len": scores.gen_len, "gen_num": scores.gen_num,
                 "gen_tok_len": sum(a["n_tokens"] for a in answers),
                 "capped": sum(1 for a in answers if a["token_ids"][-1] != eos)},
        samples=len(answers), sentence_splitter=scores.sentence_splitter,
        scorer="mlperf_llm.accuracy.summarization.score_summaries", scored_date=now())
    write_json_atomic(ref_path, reference, indent=1, sort_keys=True)
    return reference


def main(argv=None) -> int:
    ap, g, s = command_line(__doc__)
    for p in (g, s):
        p.add_argument("--split", required=True, choices=SPLITS)
        p.add_argument("--out-dir", default="", help="default: the split's folder in the package")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "generate":
            result = generate(a.model, a.split, settings_for(a.split, a.batch_size, a.threads, a.dtype),
                              out_dir=a.out_dir or None)
        else:
            result = score(a.split, a.out_dir or None)
    except DatasetError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
