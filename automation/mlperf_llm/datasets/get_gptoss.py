"""One entry point for the `get-dataset-gpt-oss` step: gpt-oss-120b's three data sets and the
LiveCodeBench tests its scorer runs, from files you have, the MLCommons data set through the R2
downloader (MD5-checked, resumable), or the embedded stand-in; every file checked for its layout and,
for the real sets, its row count (gptoss.SETS) before its path is handed on."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import gptoss, gptoss_embedded, r2
from .schema import DatasetError
from .steps import embedded_tokenizer

# mlcommons/mlperf-automations' get-dataset-mlperf-inference-gpt-oss (_r2-downloader) fetches this one
URI = "https://inference.mlcommons-storage.org/metadata/gpt-oss-data.uri"
KINDS = ("accuracy", "performance", "compliance")


@dataclass(frozen=True)
class GptOssRequest:
    out_dir: str = "."
    embedded: bool = False
    dataset_dir: str | None = None         # a folder holding the three files (any sub-folders)
    lcb_tests: tuple[str, ...] = ()        # LiveCodeBench release files (test*.jsonl) or a tests file of ours;
                                           # () fetches the release from the hub, ("skip",) none (no accuracy run)
    lcb_revision: str = "main"             # the hub dataset's revision to fetch (resolved to a commit, recorded)
    uri: str | None = None
    tokenizer_dir: str | None = None       # embedded only: the embedded model folder
    r2_token: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class GptOssResult:
    paths: dict                             # kind -> Path (accuracy, performance, compliance)
    rows: dict                              # kind -> rows
    tests: Path | None                      # the LiveCodeBench tests file (None: not given yet)
    source: str
    notes: tuple[str, ...] = ()


def _find(folder: Path, name: str) -> Path:
    found = sorted(folder.rglob(name))
    if not found:
        raise DatasetError(f"--dataset_path {folder}: no {name} under it; the gpt-oss data set has "
                           f"{', '.join(s.file for s in gptoss.SETS.values())} (in perf/ and acc/ folders).")
    return found[0]


def get_gptoss(req: GptOssRequest) -> GptOssResult:
    out_dir = Path(req.out_dir)
    notes: list[str] = []
    tests = None
    if req.embedded and not req.dataset_dir:
        tokenizer_dir = embedded_tokenizer(req.tokenizer_dir)
        paths = gptoss_embedded.build_embedded(tokenizer_dir, out_dir)
        tests = paths.pop("tests")
        expected = gptoss_embedded.expected_rows()
        source = f"the embedded reasoning problems, {gptoss_embedded.PROMPT_FORMAT}, tokenized with {tokenizer_dir}"
    else:
        expected = {k: s.rows for k, s in gptoss.SETS.items()}
        if req.dataset_dir:
            folder = Path(req.dataset_dir).resolve()
            if not folder.is_dir():
                raise DatasetError(f"--dataset_path {req.dataset_dir}: not a folder; pass the folder the gpt-oss "
                                   "data set was downloaded into.")
            paths = {k: _find(folder, gptoss.SETS[k].file) for k in KINDS}
            source = f"user folder {req.dataset_dir}"
        else:
            uri = req.uri or URI
            got = r2.download_dataset(uri, out_dir / "download", only=[gptoss.SETS[k].file for k in KINDS],
                                      token=req.r2_token)
            by_name = {r.path.name: r.path for r in got}
            paths = {k: by_name[gptoss.SETS[k].file] for k in KINDS}
            source = f"r2-downloader {uri}"
    sets = {k: gptoss.read_set(p, k, expected[k]) for k, p in paths.items()}     # checked before any tests are fetched
    if tests is None:
        tests = _lcb_tests(req, out_dir, notes)
    if tests is not None:
        gptoss.check_tests_cover(sets["accuracy"], gptoss.read_tests(tests), str(paths["accuracy"]))
    return GptOssResult(paths=paths, rows={k: len(v) for k, v in sets.items()}, tests=tests, source=source,
                        notes=tuple(notes))


def _lcb_tests(req: GptOssRequest, out_dir: Path, notes: list[str]) -> Path | None:
    """The tests file of the real set: from the files given, else LiveCodeBench's release fetched from
    the hub (lcb_release.py); none with --lcb_tests=skip."""
    if req.lcb_tests == ("skip",):
        notes.append("no LiveCodeBench tests (--lcb_tests=skip): the accuracy step cannot mark programs")
        return None
    if req.lcb_tests:
        return _tests(req.lcb_tests, out_dir)
    from .lcb_release import fetch_release
    release = fetch_release(out_dir / "livecodebench" / "release_v6", revision=req.lcb_revision)
    notes.append(f"LiveCodeBench's tests: {release.source}")
    return _tests(tuple(str(f) for f in release.files), out_dir)


def _tests(files: tuple[str, ...], out_dir: Path) -> Path:
    """Our tests file from LiveCodeBench release files (or one of ours, passed as it is)."""
    problems: list[gptoss.Problem] = []
    for f in files:
        path = Path(f)
        if not path.is_file():
            raise DatasetError(f"--lcb_tests {f}: no such file; pass code_generation_lite's test*.jsonl files.")
        with path.open(encoding="utf-8") as fh:
            first = fh.readline()
        if '"question_id"' in first and '"tests"' in first and '"public_test_cases"' not in first:
            problems.extend(gptoss.read_tests(path).values())
            continue
        with path.open(encoding="utf-8") as fh:
            problems.extend(gptoss.problems_from_release(fh, str(path)))
    return gptoss.write_tests(problems, out_dir / gptoss.TESTS_FILE)
