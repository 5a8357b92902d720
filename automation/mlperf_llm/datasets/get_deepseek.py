"""One entry point for the `get-dataset-deepseek-r1` step: deepseek-r1's data set in the reference's
schema (deepseek.py), from a file you have (--dataset_path), the MLCommons data set through the R2
downloader (MD5-checked, resumable), or the embedded stand-in; checked, then rendered once with the
model's chat template into the token-set parquet the harness and the scorer read (gptoss.write_set),
with the LiveCodeBench tests file beside it.

The real set is rendered with DeepSeek-R1's own tokenizer (the model step's folder): its
tokenizer.json through `tokenizers` and its chat template through jinja (tokenizer.ModelTokenizer),
the rendering transformers' apply_chat_template does for the reference, without torch.

LiveCodeBench's tests come as gpt-oss-120b's do (get_gptoss._lcb_tests: release_v6's files, or the
files given). The reference scores deepseek-r1's programs against release_v1 (test.jsonl), the first
of release_v6's files, so every problem it can mark has its tests here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import deepseek, deepseek_embedded, gptoss, r2
from .get_gptoss import GptOssRequest, _lcb_tests
from .schema import DatasetError
from .steps import embedded_tokenizer
from .tokenizer import ModelTokenizer

PREPARED_FILE = "deepseek_r1_input_tokens.parquet"


@dataclass(frozen=True)
class DeepSeekRequest:
    out_dir: str = "."
    embedded: bool = False
    dataset_path: str | None = None        # the accuracy pickle, or a folder holding it (any sub-folder)
    calibration: bool = False              # also the calibration pickle (500 rows, never scored)
    lcb_tests: tuple[str, ...] = ()        # LiveCodeBench release files or a tests file of ours; () fetches
                                           # release_v6 from the hub, ("skip",) none (no accuracy run)
    lcb_revision: str = "main"
    uri: str | None = None
    tokenizer_dir: str | None = None       # the model folder the prompts are rendered with
    r2_token: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class DeepSeekResult:
    prepared: Path                          # the rendered token-set parquet (what the harness reads)
    reference: Path                         # the reference-schema pickle it was rendered from
    rows: int
    tests: Path | None                      # the LiveCodeBench tests file (None: --lcb_tests=skip)
    source: str
    calibration: Path | None = None
    calibration_rows: int | None = None
    notes: tuple[str, ...] = ()


def _model_tokenizer(tokenizer_dir: str | None) -> ModelTokenizer:
    if not tokenizer_dir:
        raise DatasetError("the deepseek-r1 data set is rendered with DeepSeek-R1's tokenizer, and none was given: "
                           "pass --tokenizer_path=DIR (the checkpoint folder, or one holding its tokenizer.json and "
                           "tokenizer_config.json), or run the step after get,ml-model,deepseek-r1 (as "
                           "run-mlperf-inference-app does), whose CM_ML_MODEL_PATH it reads.")
    return ModelTokenizer.from_folder(tokenizer_dir)


def _user_files(dataset_path: str, calibration: bool) -> dict[str, Path]:
    """The accuracy pickle (the file given, or found under the folder given) and, when asked, the
    calibration pickle (under the folder, or beside the file)."""
    given = Path(dataset_path).resolve()
    if not given.exists():
        raise DatasetError(f"--dataset_path {dataset_path}: no such file or folder; pass the file "
                           f"{deepseek.ACCURACY_FILE} or the folder it was downloaded into.")
    folder = given if given.is_dir() else given.parent
    paths = {"accuracy": given} if given.is_file() else {}
    for kind in ("accuracy", "calibration")[:2 if calibration else 1]:
        if kind not in paths:
            found = sorted(folder.rglob(deepseek.FILES[kind]))
            if not found:
                raise DatasetError(f"--dataset_path {dataset_path}: no {deepseek.FILES[kind]} under {folder}; the "
                                   f"deepseek-r1 data set has {deepseek.ACCURACY_FILE} and "
                                   f"{deepseek.CALIBRATION_FILE}: pass the folder that holds them.")
            paths[kind] = found[0]
    return paths


def _downloaded_files(req: DeepSeekRequest, out_dir: Path) -> dict[str, Path]:
    """The MLCommons files (the accuracy pickle and, when asked, the calibration one) through the R2
    downloader, MD5-checked; nothing else of the data set is fetched."""
    kinds = ("accuracy", "calibration") if req.calibration else ("accuracy",)
    got = r2.download_dataset(req.uri or deepseek.URI, out_dir / "download",
                              only=[deepseek.FILES[k] for k in kinds], token=req.r2_token)
    by_name = {r.path.name: r.path for r in got}
    return {k: by_name[deepseek.FILES[k]] for k in kinds}


def _rendered(req: DeepSeekRequest, out_dir: Path) -> tuple[dict[str, Path], Path, str]:
    """A file of yours or the MLCommons set, checked and rendered with the model's chat template:
    (the reference-schema files by kind, the rendered parquet, where it came from)."""
    tokenizer = _model_tokenizer(embedded_tokenizer(req.tokenizer_dir) if req.embedded else req.tokenizer_dir)
    if req.dataset_path:
        paths = _user_files(req.dataset_path, req.calibration)
        source = f"user file {paths['accuracy']}"
    else:
        paths, source = _downloaded_files(req, out_dir), f"r2-downloader {req.uri or deepseek.URI}"
    # the embedded model on a file of yours: any row count, the think section opened as for the stand-in
    questions = deepseek.read_reference(paths["accuracy"], "accuracy", None if req.embedded else deepseek.ROWS)
    prefix = deepseek_embedded.THINK_PREFIX if req.embedded else ""
    try:
        prompts = deepseek.render(questions, tokenizer, think_prefix=prefix)
    except DatasetError as e:
        raise DatasetError(f"{paths['accuracy']}: {e}") from None
    prepared = gptoss.write_set(prompts, out_dir / PREPARED_FILE)
    return paths, prepared, f"{source}, rendered with the chat template of {tokenizer.folder}"


def get_deepseek(req: DeepSeekRequest) -> DeepSeekResult:
    """The rendered set (read back as the harness reads it, all five sources), its reference-schema
    pickle, the calibration pickle when asked, and the tests covering its programs; DatasetError
    names what is wrong and the fix."""
    out_dir = Path(req.out_dir)
    notes: list[str] = []
    tests = None
    if req.embedded and not req.dataset_path:
        tokenizer_dir = embedded_tokenizer(req.tokenizer_dir)
        paths = deepseek_embedded.build_embedded(tokenizer_dir, out_dir, calibration=req.calibration)
        tests, prepared = paths["tests"], paths["prepared"]
        expect_calibration = deepseek_embedded.expected_rows()["calibration"]
        source = f"the embedded questions, {deepseek_embedded.PROMPT_FORMAT}, tokenized with {tokenizer_dir}"
    else:
        paths, prepared, source = _rendered(req, out_dir)
        expect_calibration = None if req.embedded else deepseek.CALIBRATION_ROWS
    prepared_rows = gptoss.read_set(prepared, "accuracy", sources=deepseek.SOURCES)   # as the harness reads it
    calibration, calibration_rows = paths.get("calibration"), None
    if calibration is not None:
        calibration_rows = len(deepseek.read_reference(calibration, "calibration", expect_calibration))
    if tests is None:
        tests = _lcb_tests(GptOssRequest(out_dir=str(out_dir), lcb_tests=req.lcb_tests,
                                         lcb_revision=req.lcb_revision), out_dir, notes)
    if tests is not None:
        gptoss.check_tests_cover(prepared_rows, gptoss.read_tests(tests), str(prepared))
    return DeepSeekResult(prepared=prepared, reference=paths.get("reference") or paths["accuracy"],
                          rows=len(prepared_rows), tests=tests, source=source, calibration=calibration,
                          calibration_rows=calibration_rows, notes=tuple(notes))
