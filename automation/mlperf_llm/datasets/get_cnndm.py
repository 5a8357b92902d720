"""One entry point for the `get-dataset-cnndm` step (llama3.1-8b, llama3.1-8b-edge): a file you
have, the embedded set built with the embedded model's tokenizer, or the MLCommons file through the
R2 downloader (MD5-checked, resumable); each checked for the cnn_eval.json layout and its split's
row count before its path is handed on."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import cnndm, cnndm_embedded, r2
from .schema import DatasetError
from .steps import DatasetResult, embedded_tokenizer

# the reference README (mlcommons/inference language/llama3.1-8b): "Download the preprocessed datasets
# using the MLCommons downloader"
VALIDATION_URI = "https://inference.mlcommons-storage.org/metadata/llama3-1-8b-cnn-eval.uri"
EDGE_URI = "https://inference.mlcommons-storage.org/metadata/llama3-1-8b-sample-cnn-eval-5000.uri"
# the generation length of both benchmarks (max_new_tokens in benchmarks.py; a unit test keeps it equal)
MAX_NEW_TOKENS = 128


@dataclass(frozen=True)
class Split:
    file: str       # the MLCommons file's name (the R2 checksum list names it so)
    rows: int
    uri: str        # its R2 metadata URI


SPLITS = {
    "validation": Split(cnndm.VALIDATION_FILE, cnndm.VALIDATION_ROWS, VALIDATION_URI),
    "edge": Split(cnndm.EDGE_FILE, cnndm.EDGE_ROWS, EDGE_URI),
}


@dataclass(frozen=True)
class CnndmRequest:
    split: str = "validation"              # validation | edge
    out_dir: str = "."
    embedded: bool = False                 # the embedded set's split instead of the real one
    dataset_path: str | None = None        # a cnn_eval.json-layout file the user already has
    uri: str | None = None                 # another R2 metadata URI; None: the split's
    tokenizer_dir: str | None = None       # embedded only: the embedded model folder
    r2_token: str | None = field(default=None, repr=False)


def get_cnndm(req: CnndmRequest) -> DatasetResult:
    if req.split not in SPLITS:
        raise DatasetError(f"summarisation split {req.split!r} is unknown; use one of {list(SPLITS)} "
                           "(_validation, the default, or _edge).")
    expected = _expected(req.embedded)
    out_dir = Path(req.out_dir)
    tokenizer_file = None
    if req.dataset_path:
        path, source = Path(req.dataset_path).resolve(), f"user file {req.dataset_path}"
    elif req.embedded:
        tokenizer_dir = embedded_tokenizer(req.tokenizer_dir)
        meta = cnndm_embedded.build_embedded(tokenizer_dir, out_dir, req.split)
        path, source = Path(meta["path"]), f"embedded stories tokenized with {tokenizer_dir}"
        tokenizer_file = Path(tokenizer_dir).resolve() / "tokenizer.json"
    else:
        uri = req.uri or SPLITS[req.split].uri
        path = r2.download_dataset(uri, out_dir / "download", only=[SPLITS[req.split].file],
                                   token=req.r2_token)[0].path
        source = f"r2-downloader {uri}"
    rows = check_rows(path, req.split, expected)
    note = cnndm_embedded.missing_reference(req.split) if req.embedded else ""
    reference = cnndm_embedded.reference_file(req.split) if req.embedded and not note else None
    return DatasetResult(path=path, rows=rows, split=req.split, source=source, reference_file=reference,
                         max_new_tokens=MAX_NEW_TOKENS, tokenizer_file=tokenizer_file,
                         notes=(note,) if note else ())


def _expected(embedded: bool) -> dict[str, tuple[int, str]]:
    """Each split's (row count, file name): the MLCommons files', or the embedded set's (300 and 112)."""
    if not embedded:
        return {name: (s.rows, s.file) for name, s in SPLITS.items()}
    stories = cnndm_embedded.load_stories()
    counts = {name: len(cnndm_embedded.select(stories, name)) for name in SPLITS}
    return {name: (n, cnndm_embedded.output_name(name, n)) for name, n in counts.items()}


def check_rows(path, split: str, expected: dict[str, tuple[int, str]]) -> int:
    """The row count of a cnn_eval.json-layout file checked row by row (cnndm.read_rows), or
    DatasetError naming the file, the split it was given for and the fix."""
    n = len(cnndm.read_rows(path))
    rows, name = expected[split]
    if n == rows:
        return n
    other = [s for s, (count, _) in expected.items() if count == n and s != split]
    fix = (f"that is the {other[0]} split's count: run with _{other[0]}, or pass {name}" if other else
           f"the file is incomplete or holds other rows: download it again, or pass {name}")
    raise DatasetError(f"{path} has {n} rows, but split {split!r} has {rows}; {fix}.")
