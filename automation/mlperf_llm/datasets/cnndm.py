"""CNN/DailyMail in the layout of llama3.1-8b's cnn_eval.json: read, check, build and write.

The MLCommons files (cnn_eval.json: the 13,368 articles of CNN/DailyMail 3.0.0 validation;
sample_cnn_eval_5000.json: the edge set's fixed 5,000 of them) are one JSON list of rows:

    instruction  {"llama": PROMPT_TEMPLATE}: the prompt template, the same in every row
    input        the article
    tok_input    token ids of PROMPT_TEMPLATE with the article, tokenized with the model's special
                 tokens (tokenizer.encode(prompt); the Llama-3.1 tokenizer, no chat template)
    output       the reference highlights, one sentence per line

The benchmark reads `tok_input` as the prompt and `output` as the ROUGE reference; rows are
addressed by their position (the LoadGen sample index). We write the same layout for sets we build.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from cmcontract.publish import staged_file

from .schema import DatasetError
from .tokenizer import ModelTokenizer

PROMPT_TEMPLATE = ("In very brief sentences, summarize the following news article. Only return the summary.\n"
                   "Article: {input}\nSummary: ")
INSTRUCTION_KEY = "llama"
KEYS = ("instruction", "input", "tok_input", "output")
VALIDATION_FILE = "cnn_eval.json"
EDGE_FILE = "sample_cnn_eval_5000.json"
# their row counts: dataset_rows of llama3.1-8b and llama3.1-8b-edge in benchmarks.py (a unit test
# keeps them equal; held here too so that an edit of the benchmark table re-keys no data set step)
VALIDATION_ROWS = 13368
EDGE_ROWS = 5000
_FIX = (f"a {VALIDATION_FILE} row is an object with {', '.join(KEYS)}: use {VALIDATION_FILE} or {EDGE_FILE} "
        "from the MLCommons downloader (not the raw CNN/DailyMail article/highlights data), or write the "
        "file with mlperf_llm.datasets.cnndm.write_rows")


@dataclass(frozen=True)
class SummaryRow:
    input: str                      # the article
    output: str                     # the reference highlights
    tok_input: tuple[int, ...]      # the tokenized prompt
    instruction: str = PROMPT_TEMPLATE

    @property
    def prompt(self) -> str:
        """The prompt its tok_input was made from: the row's template with its article."""
        return self.instruction.format(input=self.input)

    def to_json(self) -> dict:
        return {"instruction": {INSTRUCTION_KEY: self.instruction}, "input": self.input,
                "tok_input": list(self.tok_input), "output": self.output}


def prompt(article: str) -> str:
    """The benchmark's prompt for one article (braces in the article are kept as they are)."""
    return PROMPT_TEMPLATE.format(input=article)


def build_row(article: str, highlights: str, tok: ModelTokenizer) -> SummaryRow:
    """One row: the prompt tokenized as `tokenizer.encode(prompt)`, special tokens included."""
    return SummaryRow(input=article, output=highlights, tok_input=tuple(tok.encode(prompt(article))))


def _template(value, where: str) -> str:
    text = value.get(INSTRUCTION_KEY) if isinstance(value, dict) else value
    if not isinstance(text, str) or "{input}" not in text:
        raise DatasetError(f"{where}: instruction must be {{{INSTRUCTION_KEY!r}: template}} (or the template) "
                           f"with an {{input}} field for the article, found {str(value)[:80]!r}; {_FIX}.")
    return text


def check_row(obj, where: str) -> SummaryRow:
    """One row of the JSON list as a SummaryRow, or DatasetError naming the row, the key and the fix."""
    if not isinstance(obj, dict):
        raise DatasetError(f"{where} is a JSON {type(obj).__name__}, not an object; {_FIX}.")
    missing = [k for k in KEYS if k not in obj]
    if missing:
        raise DatasetError(f"{where} lacks key(s) {missing} (it has {sorted(obj)}); {_FIX}.")
    for key in ("input", "output"):
        if not isinstance(obj[key], str) or not obj[key].strip():
            raise DatasetError(f"{where}: {key!r} must be non-empty text, found {str(obj[key])[:80]!r}; {_FIX}.")
    ids = obj["tok_input"]
    if not isinstance(ids, list) or not ids or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
        raise DatasetError(f"{where}: 'tok_input' must be a non-empty list of integer token ids, found "
                           f"{str(ids)[:80]!r}; rebuild the file with the model's tokenizer ({_FIX}).")
    return SummaryRow(input=obj["input"], output=obj["output"], tok_input=tuple(ids),
                      instruction=_template(obj["instruction"], where))


def read_rows(path, expect_rows: int | None = None) -> list[SummaryRow]:
    """Every row of a cnn_eval.json-layout file, checked; `expect_rows`: the row count the split must have."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"data set file {path} does not exist; pass the {VALIDATION_FILE} (or, for the edge "
                           f"set, {EDGE_FILE}) you have, or build the embedded set "
                           "(mlperf_llm.datasets.cnndm_embedded.build_embedded).")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise DatasetError(f"{path} is not UTF-8 text ({e.reason} at byte {e.start}); it is not a "
                           f"{VALIDATION_FILE}-layout file, or it is damaged: download it again.") from e
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path} is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}); it may be "
                           "truncated: delete it and download it again.") from e
    if not isinstance(data, list):
        raise DatasetError(f"{path} holds a JSON {type(data).__name__}, not a list of rows; {_FIX}.")
    if not data:
        raise DatasetError(f"{path} holds no rows; download it again.")
    if expect_rows is not None and len(data) != expect_rows:
        raise DatasetError(f"{path} has {len(data)} rows, expected {expect_rows}; the file is incomplete or "
                           f"another split ({VALIDATION_FILE} or {EDGE_FILE}). Download it again or pass the "
                           "file of the split you run.")
    return [check_row(obj, f"{path}: row {i} (0-based: the sample index)") for i, obj in enumerate(data)]


def write_rows(rows: list[SummaryRow], path) -> Path:
    """Write rows as a cnn_eval.json-layout JSON list (one row a line), atomically."""
    if not rows:
        raise DatasetError(f"no rows to write to {path}; a data set needs at least one row.")
    path = Path(path)
    body = ",\n".join(json.dumps(r.to_json(), ensure_ascii=False) for r in rows)
    with staged_file(path) as tmp:
        Path(tmp).write_text(f"[\n{body}\n]\n", encoding="utf-8")
    return path
