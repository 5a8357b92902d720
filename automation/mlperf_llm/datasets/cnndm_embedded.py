"""The embedded summarisation set: 300 invented news stories with reference highlights
(embedded_cnndm/articles.jsonl, made by cnndm_stories.py; see embedded_cnndm/README.md), its fixed
edge subset, and its build into the cnn_eval.json layout with the embedded model's tokenizer."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ..files import sha256_file, write_json_atomic
from . import cnndm
from .schema import DatasetError
from .tokenizer import ModelTokenizer

EMBEDDED_DIR = Path(__file__).resolve().parent / "embedded_cnndm"
ARTICLES_FILE = EMBEDDED_DIR / "articles.jsonl"
SPLITS = ("validation", "edge")
# the edge set's share of the real one, 5,000 of 13,368 rows (llama3.1-8b-edge and llama3.1-8b in
# benchmarks.py), applied to our 300 stories: round(300 * 5000 / 13368)
EDGE_ROWS = 112
EDGE_SALT = "cnndm-edge/"
# the reference numbers of each split (made as embedded/reference.json is, docs/datasets.md); both
# beside the one reference_answers.jsonl (the edge rows are some of the validation rows)
# each split's reference numbers and answers, in a folder of its own (datasets/cnndm_reference.py makes them)
REFERENCE_NAME = "reference.json"
ANSWERS_NAME = "reference_answers.jsonl"
REFERENCE_FILES = {split: EMBEDDED_DIR / split / REFERENCE_NAME for split in ("validation", "edge")}
PROMPT_FORMAT = "cnn_eval template, tokenizer.encode(prompt) with the tokenizer's special tokens, no chat template"


@dataclass(frozen=True)
class Story:
    id: str
    topic: str
    article: str
    highlights: tuple[str, ...]

    @property
    def reference(self) -> str:
        """The highlights as CNN/DailyMail stores them: one sentence per line."""
        return "\n".join(self.highlights)


def _story(obj, where: str) -> Story:
    if not isinstance(obj, dict) or not {"id", "topic", "article", "highlights"} <= set(obj):
        raise DatasetError(f"{where}: not a story object with id, topic, article and highlights; "
                           "regenerate the file with `python -m mlperf_llm.datasets.cnndm_stories`.")
    highlights = obj["highlights"]
    if not isinstance(highlights, list) or not highlights or \
            not all(isinstance(h, str) and h.strip() for h in highlights):
        raise DatasetError(f"{where}: story {obj['id']!r} needs a non-empty list of highlight sentences.")
    if not isinstance(obj["article"], str) or not obj["article"].strip():
        raise DatasetError(f"{where}: story {obj['id']!r} has no article text.")
    return Story(id=str(obj["id"]), topic=str(obj["topic"]), article=obj["article"], highlights=tuple(highlights))


def load_stories(path=ARTICLES_FILE) -> list[Story]:
    """Read and check the JSONL source: one story a line, unique ids, unique articles, highlights."""
    path = Path(path)
    stories, ids, articles = [], set(), set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise DatasetError(f"{path}:{n}: not JSON ({e}); one story object a line.") from e
        s = _story(obj, f"{path}:{n}")
        if s.id in ids:
            raise DatasetError(f"{path}:{n}: duplicate id {s.id!r}; ids must be unique.")
        if s.article in articles:
            raise DatasetError(f"{path}:{n}: story {s.id!r} repeats an earlier article; articles must be unique.")
        ids.add(s.id)
        articles.add(s.article)
        stories.append(s)
    if not stories:
        raise DatasetError(f"{path}: holds no stories.")
    return stories


def edge_ids(stories: list[Story], n: int = EDGE_ROWS) -> set[str]:
    """The edge subset: the n ids with the smallest sha256(EDGE_SALT + id). It depends on the ids
    only, not on their order, the Python version or a random generator."""
    if not 0 < n <= len(stories):
        raise DatasetError(f"edge subset of {n} rows: the set has {len(stories)} stories; pick 1..{len(stories)}.")
    ranked = sorted(stories, key=lambda s: hashlib.sha256((EDGE_SALT + s.id).encode()).hexdigest())
    return {s.id for s in ranked[:n]}


def _known(split: str) -> str:
    if split not in SPLITS:
        raise DatasetError(f"split {split!r} is unknown for the embedded summarisation set; use one of {list(SPLITS)}.")
    return split


def select(stories: list[Story], split: str) -> list[Story]:
    """The stories of a split, in file order (as sample_cnn_eval_5000.json keeps cnn_eval.json's order)."""
    if _known(split) == "validation":
        return list(stories)
    chosen = edge_ids(stories)
    return [s for s in stories if s.id in chosen]


def reference_file(split: str) -> Path:
    """Where the split's reference numbers are (the file may not be made yet: see missing_reference)."""
    return REFERENCE_FILES[_known(split)]


def missing_reference(split: str) -> str:
    """'' when the split's reference numbers exist, else what that means and how to make them."""
    path = reference_file(split)
    if path.is_file():
        return ""
    return (f"the embedded summarisation set's reference numbers for split {split!r} are not made yet "
            f"({path} is missing): the data set is built and performance runs work, but an accuracy "
            "run judged by the embedded targets (_embedded) fails until that file is generated and "
            "committed (docs/datasets.md, 'The embedded summarisation set').")


def output_name(split: str, rows: int) -> str:
    """Named like the MLCommons files: embedded_cnn_eval.json, embedded_sample_cnn_eval_<rows>.json."""
    return "embedded_cnn_eval.json" if split == "validation" else f"embedded_sample_cnn_eval_{rows}.json"


def story_ids(rows: list[cnndm.SummaryRow], stories: list[Story] | None = None) -> list[str]:
    """The embedded story id of each cnn_eval.json-layout row, found by its article (the rows carry
    no id); DatasetError for a row whose article is not one of the embedded stories."""
    by_article = {s.article: s.id for s in (stories if stories is not None else load_stories())}
    unknown = [row.input for row in rows if row.input not in by_article]
    if unknown:
        raise DatasetError(f"{len(unknown)} of {len(rows)} rows are not embedded stories (the first begins "
                           f"{unknown[0][:60]!r}): the data set is not the embedded summarisation set "
                           f"({ARTICLES_FILE.name}); pass the file build_embedded wrote.")
    return [by_article[row.input] for row in rows]


def build_rows(stories: list[Story], tok: ModelTokenizer) -> list[cnndm.SummaryRow]:
    return [cnndm.build_row(s.article, s.reference, tok) for s in stories]


def build_embedded(tokenizer_dir, out_dir, split: str = "validation", articles_path=ARTICLES_FILE) -> dict:
    """Write the split in the cnn_eval.json layout, and a meta JSON beside it, into out_dir; return the meta."""
    tok = ModelTokenizer.from_folder(tokenizer_dir)
    stories = select(load_stories(articles_path), split)
    rows = build_rows(stories, tok)
    path = cnndm.write_rows(rows, Path(out_dir) / output_name(split, len(rows)))
    meta = {
        "rows": len(rows), "split": split, "ids": [s.id for s in stories],
        "articles_file": str(articles_path), "articles_sha256": sha256_file(str(articles_path)),
        "tokenizer_dir": str(tokenizer_dir), "tokenizer_sha256": tok.fingerprint(), "prompt_format": PROMPT_FORMAT,
        "mean_input_tokens": round(sum(len(r.tok_input) for r in rows) / len(rows), 1),
        "path": str(path),
    }
    write_json_atomic(str(path) + ".meta.json", meta, indent=1, sort_keys=True)
    return meta
