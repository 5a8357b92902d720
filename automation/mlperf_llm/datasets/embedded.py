"""The embedded data set: hand-written samples (embedded/samples.jsonl) built into the processed
OpenOrca schema with the embedded model's tokenizer, plus the recorded reference numbers."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..files import write_json_atomic
from .schema import COLUMNS, DatasetError, save_processed
from .tokenizer import ModelTokenizer

EMBEDDED_DIR = Path(__file__).resolve().parent / "embedded"
SAMPLES_FILE = EMBEDDED_DIR / "samples.jsonl"
REFERENCE_FILE = EMBEDDED_DIR / "reference.json"
REFERENCE_ANSWERS_FILE = EMBEDDED_DIR / "reference_answers.jsonl"
PICKLE_NAME = "embedded_tokenized_smollm2.pkl"
PROMPT_FORMAT = "chat_template"  # the model's own template; OpenOrca's Llama-2 [INST] format otherwise
METRICS = ("rouge1", "rouge2", "rougeL", "rougeLsum")


@dataclass(frozen=True)
class Sample:
    id: str
    origin: str
    system_prompt: str
    question: str
    output: str


def load_samples(path=SAMPLES_FILE) -> list[Sample]:
    """Read and check the JSONL source: one object per line, unique ids, non-empty question and output."""
    path = Path(path)
    samples, seen = [], set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            s = Sample(**{k: obj[k] for k in Sample.__dataclass_fields__})
        except (ValueError, KeyError, TypeError) as e:
            raise DatasetError(f"{path}:{n}: not a sample object with id, origin, system_prompt, question, "
                               f"output ({type(e).__name__}: {e}).") from e
        if s.id in seen:
            raise DatasetError(f"{path}:{n}: duplicate id {s.id!r}; ids must be unique.")
        if not s.question.strip() or not s.output.strip():
            raise DatasetError(f"{path}:{n}: sample {s.id!r} has an empty question or output.")
        if s.id.split(".")[0] != s.origin:
            raise DatasetError(f"{path}:{n}: id {s.id!r} must start with its origin {s.origin!r} and a dot.")
        seen.add(s.id)
        samples.append(s)
    if not samples:
        raise DatasetError(f"{path}: holds no samples.")
    return samples


def build_rows(samples: list[Sample], tok: ModelTokenizer) -> list[dict]:
    """One processed-schema row per sample; prompt by the model's chat template, answer as tokenizer(text)."""
    rows = []
    for s in samples:
        prompt = tok.chat_prompt(s.system_prompt, s.question)
        tok_input = tok.encode(prompt, add_special_tokens=False)
        tok_output = tok.encode(s.output)
        rows.append({
            "id": s.id, "system_prompt": s.system_prompt, "question": s.question, "output": s.output,
            "input": prompt, "tok_input": tok_input, "tok_output": tok_output,
            "tok_input_length": len(tok_input), "tok_output_length": len(tok_output), "origin": s.origin,
        })
    return rows


def build_frame(tokenizer_dir, samples_path=SAMPLES_FILE):
    import pandas as pd

    tok = ModelTokenizer.from_folder(tokenizer_dir)
    rows = build_rows(load_samples(samples_path), tok)
    return pd.DataFrame(rows, columns=list(COLUMNS)), tok


def build_embedded(tokenizer_dir, out_dir, samples_path=SAMPLES_FILE) -> dict:
    """Write the embedded pickle and a meta JSON beside it into out_dir; return the meta."""
    df, tok = build_frame(tokenizer_dir, samples_path)
    out_dir = Path(out_dir)
    pkl = save_processed(df, out_dir / PICKLE_NAME)
    meta = {
        "rows": len(df), "samples_file": str(samples_path), "tokenizer_dir": str(tokenizer_dir),
        "tokenizer_sha256": tok.fingerprint(), "prompt_format": PROMPT_FORMAT,
        "mean_input_tokens": round(float(df.tok_input_length.mean()), 1),
        "mean_output_tokens": round(float(df.tok_output_length.mean()), 1),
        "pickle": str(pkl),
    }
    reference = load_reference(missing_ok=True)
    if reference and reference.get("tokenizer_sha256") not in (None, meta["tokenizer_sha256"]):
        meta["warning"] = ("the tokenizer differs from the one the reference numbers were made with "
                           f"({reference['tokenizer_sha256'][:12]}); the accuracy targets may not apply")
    write_json_atomic(out_dir / (PICKLE_NAME + ".meta.json"), meta, indent=1, sort_keys=True)
    return meta


def load_reference(path=REFERENCE_FILE, missing_ok: bool = False) -> dict | None:
    """The recorded reference numbers and how they were made (see embedded_reference.py)."""
    path = Path(path)
    if not path.is_file():
        if missing_ok:
            return None
        raise DatasetError(f"{path} is missing; regenerate it with "
                           "`python -m mlperf_llm.datasets.embedded_reference generate` then `score`.")
    return json.loads(path.read_text())


def accuracy_targets(reference: dict, fraction: float = 0.99) -> dict:
    """Accuracy targets for the embedded data set: `fraction` of each reference ROUGE score."""
    return {m: round(reference["metrics"][m] * fraction, 4) for m in ("rouge1", "rouge2", "rougeL")}
