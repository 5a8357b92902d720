"""What the data set steps share (get-preprocessed-dataset-openorca, get-dataset-cnndm): the result
a step hands back, and the check that an embedded set has a tokenizer to be built with."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .schema import DatasetError


@dataclass(frozen=True)
class DatasetResult:
    path: Path                             # the file the harness reads
    rows: int
    split: str
    source: str                            # where it came from, in words
    reference_file: Path | None = None     # embedded: the reference numbers the accuracy step judges by
    max_new_tokens: int | None = None      # the generation length the benchmark (or the reference) uses
    tokenizer_file: Path | None = None     # embedded: the tokenizer.json the set was built with
    notes: tuple[str, ...] = ()            # what the step should tell the user (nothing failed)


def embedded_tokenizer(tokenizer_dir: str | None) -> str:
    """The tokenizer folder an embedded set is built with, or DatasetError saying how to give one."""
    if not tokenizer_dir:
        raise DatasetError("the embedded data set needs the embedded model's tokenizer: pass "
                           "--tokenizer_path=DIR or let the get,ml-model,smollm2 dependency set CM_ML_MODEL_PATH.")
    return tokenizer_dir
