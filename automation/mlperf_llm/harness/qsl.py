"""The query sample library: a benchmark's processed data set, in the layout its reference reads:
llama2-70b's OpenOrca pandas pickle, llama3.1-8b's cnn_eval.json (a JSON list of rows,
mlperf_llm.datasets.cnndm), or gpt-oss-120b's parquet sets (mlperf_llm.datasets.gptoss).

Prompts are the `tok_input` token ids; nothing is re-tokenized. `check_tokenizer`
refuses a data set whose ids were made by a different tokenizer than the model's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Sequence

REQUIRED_COLUMNS = ("id", "system_prompt", "question", "output", "input", "tok_input", "tok_input_length",
                    "tok_output", "tok_output_length", "origin")


class DatasetError(ValueError):
    pass


@dataclass
class Dataset:
    path: str
    tok_input: list[list[int]]
    inputs: list[str]             # the prompt text (`input` column), for the tokenizer check
    tok_output_length: list[int]

    @property
    def count(self) -> int:
        return len(self.tok_input)

    @property
    def max_input_len(self) -> int:
        return max(len(t) for t in self.tok_input)

    # LoadGen QSL callbacks: everything is already in RAM.
    def load_samples(self, indices) -> None:
        return None

    def unload_samples(self, indices) -> None:
        return None


def _as_ids(value, row: int, path: str) -> list[int]:
    try:
        ids = [int(t) for t in value]
    except (TypeError, ValueError):
        raise DatasetError(f"data set {path}: row {row} tok_input is not a list of token ids "
                           f"({type(value).__name__}); fix: use the processed pickle (processorca output)") from None
    if not ids:
        raise DatasetError(f"data set {path}: row {row} has an empty tok_input; fix: drop the row or re-process")
    if min(ids) < 0:
        raise DatasetError(f"data set {path}: row {row} has a negative token id")
    return ids


def load_dataset(path: str, total_sample_count: int | None = None) -> Dataset:
    """Read and validate the processed data set; keep the first `total_sample_count` rows."""
    if total_sample_count is not None and total_sample_count < 1:
        raise DatasetError(f"total_sample_count={total_sample_count}: must be at least 1")
    if str(path).endswith(".json"):
        return _load_cnn_eval(path, total_sample_count)
    if str(path).endswith(".parquet"):
        return _load_token_set(path, total_sample_count)
    import pandas as pd

    if not os.path.isfile(path):
        raise DatasetError(f"data set {path!r} does not exist; fix: pass --dataset_path (CM_DATASET_PREPROCESSED_PATH) "
                           "pointing at open_orca_gpt4_tokenized_llama.sampled_24576.pkl")
    try:
        df = pd.read_pickle(path)
    except Exception as e:  # pickle, zip or pandas errors all mean the same to the user
        raise DatasetError(f"data set {path!r} is not a readable pandas pickle ({type(e).__name__}: {e})") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in getattr(df, "columns", ())]
    if missing:
        raise DatasetError(f"data set {path!r} lacks columns {missing} (has {list(getattr(df, 'columns', []))}); "
                           "fix: use the processed llama2-70b data set")
    if total_sample_count is not None:
        df = df.iloc[:total_sample_count]
    if len(df) == 0:
        raise DatasetError(f"data set {path!r} has no rows")
    tok = [_as_ids(v, i, path) for i, v in enumerate(df["tok_input"])]
    for i, (ids, n) in enumerate(zip(tok, df["tok_input_length"])):
        if int(n) != len(ids):
            raise DatasetError(f"data set {path!r}: row {i} tok_input_length={n} but tok_input has {len(ids)} ids; "
                               "the file is corrupt or was edited: re-process it")
    return Dataset(path, tok, [str(s) for s in df["input"]], [int(n) for n in df["tok_output_length"]])


def _load_cnn_eval(path: str, total_sample_count: int | None) -> Dataset:
    """cnn_eval.json's layout: the prompt ids, the prompt text (the template with the article) for
    the tokenizer check; the reference highlights' length in tokens is not recorded there (0)."""
    from ..datasets.cnndm import read_rows
    from ..datasets.schema import DatasetError as LayoutError
    try:
        rows = read_rows(path)[:total_sample_count]
    except LayoutError as e:
        raise DatasetError(str(e)) from None
    return Dataset(path, [list(r.tok_input) for r in rows], [r.prompt for r in rows],
                   [0] * len(rows))


def _load_token_set(path: str, total_sample_count: int | None) -> Dataset:
    """gpt-oss-120b's layout (datasets/gptoss.py): prompts as token ids alone, pre-rendered in the
    model's format; there is no prompt text to check against the server's tokenizer."""
    from ..datasets.gptoss import read_set
    from ..datasets.schema import DatasetError as LayoutError
    try:
        rows = read_set(path, "performance")[:total_sample_count]
    except LayoutError as e:
        raise DatasetError(str(e)) from None
    return Dataset(path, [list(r.input_tokens) for r in rows], [], [0] * len(rows))


def _matches(ref: Sequence[int], enc: Sequence[int], bos: int | None) -> bool:
    """True when the data set's ids `ref` are the tokenizer's `enc`, up to the reference's quirks.

    The reference pre-processing tokenizes "<s>[INST] ..." (so a BOS may be doubled) and appends
    one response-start token; allow a leading BOS difference and at most 2 trailing extra ids.
    """
    def strip_bos(x: Sequence[int]) -> list[int]:
        x = list(x)
        while bos is not None and len(x) > 1 and x[0] == bos and x[1] == bos:
            x = x[1:]
        return x[1:] if bos is not None and x and x[0] == bos else x

    r, e = strip_bos(ref), strip_bos(enc)
    return len(e) > 0 and r[:len(e)] == e and 0 <= len(r) - len(e) <= 2


def check_tokenizer(ds: Dataset, tokenize: Callable[[str, bool], list[int]], samples: int = 8,
                    bos_id: int | None = 1, vocab_size: int | None = None) -> None:
    """Refuse the data set unless the model's tokenizer reproduces its `tok_input` ids.

    `tokenize(text, add_special_tokens)` is the model's tokenizer (the server's /tokenize or a
    local one). Checks `samples` rows spread over the data set.
    """
    if vocab_size is not None:
        top = max(max(t) for t in ds.tok_input)
        if top >= vocab_size:
            raise DatasetError(f"data set {ds.path!r} has token id {top} but the model's vocabulary has "
                               f"{vocab_size} ids: it was tokenized for another model; fix: use the data set "
                               "made with this model's tokenizer, or the model it was made for")
    step = max(1, ds.count // samples)
    rows = list(range(0, ds.count, step))[:samples]
    bad = []
    for i in rows:
        ref = ds.tok_input[i]
        ok = any(_matches(ref, tokenize(ds.inputs[i], special), bos_id) for special in (False, True))
        if not ok:
            bad.append(i)
    if bad:
        i = bad[0]
        got = tokenize(ds.inputs[i], False)
        raise DatasetError(
            f"data set {ds.path!r} does not match the model's tokenizer: {len(bad)} of {len(rows)} checked rows "
            f"differ (row {i}: data set ids start {ds.tok_input[i][:8]}, tokenizer gives {got[:8]}); fix: use the "
            "data set processed with this model's tokenizer, or serve the model the data set was made for "
            "(CM_MLPERF_SKIP_TOKENIZER_CHECK=yes skips this check)")
