"""One entry point for the `get-preprocessed-dataset-openorca` step (OpenOrca, llama2-70b): pick the
route, fetch or build, check the schema, cut a deterministic subset, and say where the result is.
(The summarisation step's is get_cnndm.py.)"""
from __future__ import annotations

import gzip
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from cmcontract.publish import staged_file

from . import embedded, r2, rclone
from .schema import CALIBRATION_ROWS, VALIDATION_ROWS, DatasetError, deterministic_subset, load_processed, \
    save_processed
from .steps import DatasetResult, embedded_tokenizer

SPLITS = {
    "validation": ("open_orca_gpt4_tokenized_llama.sampled_24576.pkl", VALIDATION_ROWS),
    "calibration": ("open_orca_gpt4_tokenized_llama.calibration_1000.pkl", CALIBRATION_ROWS),
}
ROUTES = ("r2-downloader", "rclone")


@dataclass(frozen=True)
class DatasetRequest:
    split: str = "validation"              # validation | calibration | embedded
    out_dir: str = "."
    size: int | None = None
    dataset_path: str | None = None        # a processed pickle the user already has
    route: str = "r2-downloader"
    uri: str = r2.OPENORCA_URI
    rclone_remote: str = rclone.OPENORCA_REMOTE
    tokenizer_dir: str | None = None       # embedded only: the embedded model folder
    r2_token: str | None = field(default=None, repr=False)


def get_dataset(req: DatasetRequest) -> DatasetResult:
    if req.split not in (*SPLITS, "embedded"):
        raise DatasetError(f"dataset split {req.split!r} is unknown; use one of validation, calibration, embedded.")
    out_dir = Path(req.out_dir)
    if req.dataset_path:
        df = load_processed(req.dataset_path)
        path, source = Path(req.dataset_path).resolve(), f"user file {req.dataset_path}"
    elif req.split == "embedded":
        meta = embedded.build_embedded(embedded_tokenizer(req.tokenizer_dir), out_dir)
        path, source = Path(meta["pickle"]), f"embedded samples tokenized with {req.tokenizer_dir}"
        df = load_processed(path)
    else:
        name, rows = SPLITS[req.split]
        path = fetch_split(req, name, out_dir)
        df = load_processed(path, expect_rows=rows)
        source = f"{req.route} {req.uri if req.route == 'r2-downloader' else req.rclone_remote}"
    if req.size is not None and req.size != len(df):
        df = deterministic_subset(df, req.size)
        path = save_processed(df, out_dir / f"{path.name.removesuffix('.pkl')}.size_{req.size}.pkl")
    ref = embedded.REFERENCE_FILE if req.split == "embedded" and embedded.REFERENCE_FILE.is_file() else None
    max_new = embedded.load_reference()["settings"]["max_new_tokens"] if ref else None
    return DatasetResult(path=Path(path), rows=len(df), split=req.split, source=source, reference_file=ref,
                         max_new_tokens=max_new)


def fetch_split(req: DatasetRequest, name: str, out_dir: Path) -> Path:
    """Download `<name>.gz` by the chosen route into out_dir/download and unpack it to out_dir/<name>."""
    final = out_dir / name
    if final.is_file():
        return final
    gz_name = name + ".gz"
    download_dir = out_dir / "download"
    if req.route == "r2-downloader":
        results = r2.download_dataset(req.uri, download_dir, only=[gz_name], token=req.r2_token)
        gz = results[0].path
    elif req.route == "rclone":
        gz = rclone.copy_files(req.rclone_remote, [gz_name], download_dir)[0]
    else:
        raise DatasetError(f"download route {req.route!r} is unknown; use one of {list(ROUTES)}.")
    gunzip_atomic(gz, final)
    return final


def gunzip_atomic(src: Path, dest: Path) -> Path:
    try:
        with staged_file(dest) as tmp, gzip.open(src, "rb") as fin, open(tmp, "wb") as fout:
            shutil.copyfileobj(fin, fout, 1 << 20)
    except (OSError, EOFError) as e:
        raise DatasetError(f"{src} is not a complete gzip file ({type(e).__name__}: {e}); delete it and "
                           "download again.") from e
    return dest
