"""Raw OpenOrca parquet -> processed pickles, as the reference processorca.py
(mlcommons/inference language/llama2-70b) builds them: Llama-2 prompt format, tokenized input with a
trailing 29871 response-init token, English-only, token-length bounds, >= 3 output tokens, known bad
system prompts dropped for niv/t0, equal seeded sampling per origin, seeded calibration subset."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .schema import COLUMNS, DatasetError, save_processed
from .tokenizer import ModelTokenizer, llama2_prompt

RESPONSE_INIT_TOKEN = 29871  # Llama-2 emits it first; appended so a fake first token can be detected
ALLOWED_NON_ASCII = frozenset("’–“”—")
BAD_SYSTEM_PROMPTS = (
    "",
    "You are an AI assistant that follows instruction extremely well. Help as much as you can.",
    "You are an AI assistant. Provide a detailed answer so user don’t need to search outside to understand the answer.",
    "You are an AI assistant. Provide a detailed answer so user don't need to search outside to understand the answer.",
    "User will you give you a task with some instruction. Your job is follow the instructions as faithfully as you can. While answering think step-by-step and justify your answer.",
    "Explain how you used the definition to come up with the answer.",
)


@dataclass(frozen=True)
class ProcessOptions:
    io_token_limit: int = 1024          # reference --seqlen_limit
    n_samples: int = 24576
    calibration_size: int = 1000
    sample_seed: int = 1337
    calibration_seed: int = 12345
    response_init_token: int | None = RESPONSE_INIT_TOKEN


@dataclass(frozen=True)
class ProcessResult:
    full: Path
    sampled: Path
    calibration: Path
    rows_raw: int
    rows_filtered: int
    per_origin: dict


def is_english(text: str) -> bool:
    return all(c.isascii() or c in ALLOWED_NON_ASCII for c in text)


def tokenize_frame(df, tok: ModelTokenizer, response_init_token=RESPONSE_INIT_TOKEN):
    df = df.rename(columns={"response": "output"})
    df["input"] = [llama2_prompt(s, q) for s, q in zip(df["system_prompt"], df["question"])]
    enc = lambda x: tok.encode(x) if isinstance(x, str) else []  # noqa: E731  (tokenizer(x)["input_ids"])
    df["tok_input"] = [enc(x) + ([response_init_token] if response_init_token is not None and
                                 isinstance(x, str) else []) for x in df["input"]]
    df["tok_output"] = [enc(x) for x in df["output"]]
    df["origin"] = [i.split(".")[0] for i in df["id"]]
    return df


def filter_frame(df, io_token_limit: int):
    df = df[[is_english(i) and is_english(o) for i, o in zip(df["input"], df["output"])]]
    df = df.reset_index(drop=True)
    df["tok_input_length"] = df["tok_input"].apply(len)
    df["tok_output_length"] = df["tok_output"].apply(len)
    df = df[(df.tok_input_length < io_token_limit) & (df.tok_output_length < io_token_limit)]
    df = df[df.tok_output_length >= 3]
    for prompt in BAD_SYSTEM_PROMPTS:
        df = df[~((df.system_prompt == prompt) & df.origin.isin(["niv", "t0"]))]
    return df.reset_index(drop=True)


def sample_per_origin(df, n_total: int, seed: int):
    import pandas as pd

    groups = dict(tuple(df.groupby("origin")))
    if n_total % len(groups):
        raise DatasetError(f"n_samples {n_total} must be divisible by the number of origins "
                           f"{len(groups)} ({sorted(groups)}).")
    per = n_total // len(groups)
    parts = []
    for origin, sub in groups.items():
        if len(sub) < per:
            raise DatasetError(f"origin {origin!r} has {len(sub)} usable rows, {per} are needed; "
                               "lower n_samples or use the full parquet.")
        parts.append(sub.reset_index(drop=True).sample(n=per, random_state=seed))
    return pd.concat(parts).reset_index(drop=True)


def process_parquet(parquet_path, tokenizer_dir, export_dir, options: ProcessOptions = ProcessOptions()
                    ) -> ProcessResult:
    """Write full, sampled_<n> and calibration_<m> pickles named as the reference does."""
    import pandas as pd

    parquet_path = Path(parquet_path)
    if not parquet_path.is_file():
        raise DatasetError(f"OpenOrca parquet {parquet_path} does not exist (the raw file is "
                           "1M-GPT4-Augmented.parquet from the Open-Orca/OpenOrca data set).")
    raw = pd.read_parquet(parquet_path)
    need = {"id", "system_prompt", "question", "response"}
    if not need <= set(raw.columns):
        raise DatasetError(f"{parquet_path}: columns {sorted(raw.columns)} lack {sorted(need - set(raw.columns))}"
                           "; this is not the raw OpenOrca parquet.")
    tok = ModelTokenizer.from_folder(tokenizer_dir)
    df = filter_frame(tokenize_frame(raw, tok, options.response_init_token), options.io_token_limit)
    df = df[list(COLUMNS)]
    export_dir = Path(export_dir)
    stem = "open_orca_gpt4_tokenized_llama"
    full = save_processed(df, export_dir / f"{stem}.full.pkl")
    sampled = sample_per_origin(df, options.n_samples, options.sample_seed)
    sampled_path = save_processed(sampled, export_dir / f"{stem}.sampled_{options.n_samples}.pkl")
    calib = sampled.sample(n=options.calibration_size, random_state=options.calibration_seed)
    calib_path = save_processed(calib.reset_index(drop=True),
                                export_dir / f"{stem}.calibration_{options.calibration_size}.pkl")
    return ProcessResult(full, sampled_path, calib_path, len(raw), len(df),
                         {k: int(v) for k, v in df.origin.value_counts().sort_index().items()})


def main(argv=None) -> int:
    """CLI with the reference script's options: python -m mlperf_llm.datasets.openorca --help"""
    import argparse
    import json

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dataset_pq_path", required=True, help="raw 1M-GPT4-Augmented.parquet")
    ap.add_argument("--model_dir", required=True, help="Llama-2 model folder (its tokenizer.json is used)")
    ap.add_argument("--seqlen_limit", type=int, default=1024)
    ap.add_argument("--export_dir", required=True)
    ap.add_argument("--num_total_samples", type=int, default=24576)
    ap.add_argument("--calibration_subset_size", type=int, default=1000)
    a = ap.parse_args(argv)
    try:
        res = process_parquet(a.dataset_pq_path, a.model_dir, a.export_dir, ProcessOptions(
            io_token_limit=a.seqlen_limit, n_samples=a.num_total_samples,
            calibration_size=a.calibration_subset_size))
    except DatasetError as e:
        print(f"error: {e}")
        return 1
    print(json.dumps({k: str(v) if isinstance(v, Path) else v for k, v in res.__dict__.items()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
