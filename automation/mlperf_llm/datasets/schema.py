"""The processed OpenOrca pickle: its columns, a schema check, atomic save and a checked load."""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from pathlib import Path

from cmcontract.publish import staged_file

COLUMNS = (
    "id", "system_prompt", "question", "output", "input",
    "tok_input", "tok_output", "tok_input_length", "tok_output_length", "origin",
)
VALIDATION_ROWS = 24576
CALIBRATION_ROWS = 1000


class DatasetError(Exception):
    """A data set file is missing, unreadable or not in the expected form."""


@dataclass(frozen=True)
class SchemaReport:
    path: str
    rows: int
    columns: tuple


def check_frame(df, where: str = "data set", expect_rows: int | None = None) -> SchemaReport:
    """Raise DatasetError unless `df` has the processed-OpenOrca columns with consistent token lengths."""
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise DatasetError(
            f"{where}: missing column(s) {missing}; a processed OpenOrca pickle needs {list(COLUMNS)} "
            f"(found {list(df.columns)}). Use the processed file (open_orca_gpt4_tokenized_llama.*.pkl), "
            "not the raw parquet, or build it with mlperf_llm.datasets.openorca.process_parquet.")
    if expect_rows is not None and len(df) != expect_rows:
        raise DatasetError(f"{where}: has {len(df)} rows, expected {expect_rows}; the file is incomplete "
                           "or a different split. Download it again or pass the right variation.")
    if len(df) == 0:
        raise DatasetError(f"{where}: has no rows.")
    for i, row in enumerate(df.itertuples(index=False)):
        tok_in, tok_out = list(row.tok_input), list(row.tok_output)
        if not tok_in:
            raise DatasetError(f"{where}: row {i} (id {row.id!r}) has an empty tok_input.")
        if len(tok_in) != int(row.tok_input_length) or len(tok_out) != int(row.tok_output_length):
            raise DatasetError(
                f"{where}: row {i} (id {row.id!r}) token lengths disagree with tok_input/tok_output "
                f"({len(tok_in)} vs {row.tok_input_length}, {len(tok_out)} vs {row.tok_output_length}).")
        if not all(isinstance(t, numbers.Integral) for t in tok_in + tok_out):
            raise DatasetError(f"{where}: row {i} (id {row.id!r}) tok_input holds non-integer tokens.")
    return SchemaReport(path=where, rows=len(df), columns=tuple(df.columns))


def read_table(path: Path, what: str, missing: str, expected: str = ""):
    """A data set file as a pandas DataFrame: a parquet table (.parquet) or a pickle (else). `what`
    names the set in the errors ("gpt-oss data set"), `missing` says what to do when the file is not
    there, `expected` names the file the set is published as. DatasetError, naming the file and the fix, for anything that is not a readable table."""
    import pandas as pd
    if not path.is_file():
        raise DatasetError(f"{what} file {path} does not exist; {missing}")
    parquet = path.suffix == ".parquet"
    try:
        df = pd.read_parquet(path) if parquet else pd.read_pickle(path)
    except Exception as e:  # pickle, pyarrow or pandas: all mean "not a table we can read"
        raise DatasetError(f"{path} is not a readable {'parquet table' if parquet else 'pandas pickle'} "
                           f"({type(e).__name__}: {str(e)[:200]}); it is damaged or not a {what} file: download "
                           "it again.") from None
    if not hasattr(df, "columns"):
        raise DatasetError(f"{path} holds a {type(df).__name__}, not a pandas DataFrame; the {what}"
                           + (f" ({expected})" if expected else "") + " is a DataFrame (parquet or pickle): pass that "
                           "file.")
    return df


def load_processed(path, expect_rows: int | None = None):
    """Load a processed pickle (.pkl or .pkl.gz) and check its schema; returns the DataFrame."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"dataset file {path} does not exist; pass --dataset_path=FILE with an existing "
                           "processed pickle, or drop it to download the data set.")
    try:
        df = pd.read_pickle(path)
    except Exception as e:  # pickle, gzip and pandas all raise their own types
        raise DatasetError(f"dataset file {path} cannot be read as a pandas pickle ({type(e).__name__}: {e}); "
                           "it may be truncated or not a pickle. Delete it and download again.") from e
    if not hasattr(df, "columns"):
        raise DatasetError(f"dataset file {path} holds a {type(df).__name__}, not a pandas DataFrame.")
    check_frame(df, where=str(path), expect_rows=expect_rows)
    return df


def save_processed(df, path) -> Path:
    """Check `df` and write it as a pickle atomically (temp file in the same folder, then rename)."""
    check_frame(df, where=f"frame for {path}")
    path = Path(path)
    with staged_file(path) as tmp:
        df.to_pickle(tmp)
    return path


def deterministic_subset(df, n: int, seed: int = 1337):
    """`n` rows chosen with a fixed seed, kept in their original order (the `_size.N` variation)."""
    if n <= 0:
        raise DatasetError(f"size {n}: the subset size must be a positive integer.")
    if n > len(df):
        raise DatasetError(f"size {n}: the data set has only {len(df)} rows; pick a size <= {len(df)}.")
    if n == len(df):
        return df.reset_index(drop=True)
    return df.sample(n=n, random_state=seed).sort_index().reset_index(drop=True)
