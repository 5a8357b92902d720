"""deepseek-r1's data set in the layout its reference reads (language/deepseek-r1 of
mlcommons/inference), and its rendering into the token-set layout the harness reads (gptoss.py).

The MLCommons data set (URI, through the R2 downloader) is two pandas pickles, one row a question:

    text_input    the question as the model gets it (options lettered, what to answer), raw text:
                  the reference renders it with the model tokenizer's chat template, one user
                  message, add_generation_prompt=True (utils/tokenization.py)
    ground_truth  the answer (`gt_output`: the older name; eval_accuracy.py reads either): AIME an
                  integer, MATH500 a LaTeX answer, GPQA a letter A-D, MMLU-Pro a letter A-J,
                  LiveCodeBench the problem's question id
    dataset       the row's source, by substring: aime, math500, gpqa, mmlu_pro, livecodebench
    question      the question alone (optional)

ACCURACY_FILE (4,388 rows) is the scored set, used for accuracy and performance runs alike;
CALIBRATION_FILE (500 rows) is for quantizing the model and is never scored (only its text_input
is needed). A row is addressed by its position (LoadGen's sample index).

`render` gives the prompts as token ids once, in the data step, so the harness and the scorer read
the same parquet layout as gpt-oss-120b's (gptoss.read_set(path, "accuracy")) and nothing
downstream knows which benchmark it is.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..accuracy import reasoning
from ..accuracy.reasoning import source_of
from . import gptoss
from .schema import DatasetError, read_table

URI = "https://inference.mlcommons-storage.org/metadata/deepseek-r1-datasets-fp8-eval.uri"
ACCURACY_FILE = "mlperf_deepseek_r1_dataset_4388_fp8_eval.pkl"
CALIBRATION_FILE = "mlperf_deepseek_r1_calibration_dataset_500_fp8_eval.pkl"
ROWS = 4388
CALIBRATION_ROWS = 500
FILES = {"accuracy": ACCURACY_FILE, "calibration": CALIBRATION_FILE}
MAX_INPUT_TOKENS = 3136      # utils/backend_registry.py MAX_ISL: the longest question
MAX_TEMPLATE_TOKENS = 4      # utils/backend_registry.py MAX_TEMPLATE_TOKS: what the chat template adds
# a rendered prompt longer than this is refused: the reference sizes its engines for no more
# (vLLM's max_input_len = MAX_ISL + MAX_TEMPLATE_TOKS)
MAX_PROMPT_TOKENS = MAX_INPUT_TOKENS + MAX_TEMPLATE_TOKENS
TRUTHS = ("ground_truth", "gt_output")
# the scored set's sources: all five of reasoning.source_of's; gptoss.read_set(path, kind,
# sources=SOURCES) reads the rendered set with them
SOURCES = reasoning.SOURCES
LETTERS = {"gpqa": "ABCD", "mmlu_pro": "ABCDEFGHIJ"}


@dataclass(frozen=True)
class Question:
    text_input: str
    dataset: str = ""
    ground_truth: str = ""
    question: str = ""


def _text(value) -> str:
    """A cell as stripped text; '' for None/NaN; an integral float (70.0) as its integer."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _truth(source: str, truth: str, where: str, column: str) -> str:
    """The ground truth checked for its source (letters upper-cased, as eval_accuracy.py compares)."""
    if not truth:
        raise DatasetError(f"{where}: {column} is empty; every row of the scored set has its answer: the file "
                           "is damaged: download it again.")
    if source == "aime" and not (truth.isascii() and truth.isdigit()):
        raise DatasetError(f"{where}: an AIME row's {column} {truth!r} is not an integer; the scorer compares "
                           "integers: the file is damaged or not the deepseek-r1 set: download it again.")
    letters = LETTERS.get(source)
    if letters and (len(truth) != 1 or truth.upper() not in letters):
        raise DatasetError(f"{where}: a {source} row's {column} {truth!r} is not one letter of {letters}; the "
                           "file is damaged or not the deepseek-r1 set: download it again.")
    return truth.upper() if letters else truth


def _source(name: str, where: str) -> str:
    """The source a scored row's `dataset` names (one of SOURCES), or DatasetError naming the row."""
    try:
        source = source_of(name)
    except ValueError:
        source = ""
    if source not in SOURCES:
        raise DatasetError(f"{where}: dataset {name!r} is not a source of the deepseek-r1 set (its sources: "
                           f"{', '.join(SOURCES)}); the file is damaged or another benchmark's: pass {ACCURACY_FILE}.")
    return source


def read_reference(path, kind: str = "accuracy", expect_rows: int | None = None) -> list[Question]:
    """Every row of a deepseek-r1 data set file (pickle, or parquet), checked for the columns its kind
    needs and, with `expect_rows`, its row count; the scored (accuracy) set's rows for a known source and
    an answer of that source's form. DatasetError names the file, the column or row, and the fix."""
    if kind not in FILES:
        raise DatasetError(f"kind {kind!r}: a deepseek-r1 data set file is one of {', '.join(FILES)}")
    path, scored = Path(path), kind == "accuracy"
    df = read_table(path, "deepseek-r1 data set", "pass the file (or its folder) you have, let the data step "
                    "download the MLCommons set, or run with _embedded.", ACCURACY_FILE)
    columns = list(df.columns)
    truth_col = next((c for c in TRUTHS if c in columns), None)
    need = ["text_input"] + (["dataset"] if scored else [])
    missing = [c for c in need if c not in columns] + (["ground_truth"] if scored and not truth_col else [])
    if missing:
        raise DatasetError(f"{path} lacks column(s) {missing} (it has {columns[:12]}); the {kind} set of "
                           f"deepseek-r1 ({FILES[kind]} of the MLCommons data set) has text_input"
                           f"{', dataset, ground_truth' if scored else ''}: pass that file.")
    if len(df) == 0:
        raise DatasetError(f"{path} has no rows; download it again.")
    if expect_rows is not None and len(df) != expect_rows:
        raise DatasetError(f"{path} has {len(df)} rows, but the {kind} set has {expect_rows}; the file is "
                           f"incomplete or the other set (accuracy {ROWS} rows, calibration {CALIBRATION_ROWS}): "
                           "download it again or pass the right file.")
    out = []
    for i, rec in enumerate(df.to_dict("records")):
        where = f"{path}: row {i}"
        text = rec["text_input"]
        if not isinstance(text, str) or not text.strip():
            what = f"not text ({type(text).__name__})" if _text(text) else "empty"
            raise DatasetError(f"{where}: text_input is {what}; every row is a question: the file is damaged: "
                               "download it again.")
        source_name, truth = _text(rec.get("dataset")), _text(rec.get(truth_col)) if truth_col else ""
        if scored:
            source = _source(source_name, where)
            truth = _truth(source, truth, where, truth_col)
        out.append(Question(text, source_name, truth, _text(rec.get("question"))))
    return out


def _chat_ids(tokenizer, text: str) -> list[int]:
    """One user message rendered with the chat template and a generation prompt, as token ids:
    transformers' apply_chat_template (a list, or in transformers 5 a BatchEncoding) or the
    torch-free ModelTokenizer's chat_ids (tokenizer.py; the same rendering)."""
    if hasattr(tokenizer, "apply_chat_template"):
        ids = tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                            tokenize=True)
        if hasattr(ids, "keys"):
            ids = ids["input_ids"]
        return [int(t) for t in ids]
    return tokenizer.chat_ids("", text)


def render(questions: list[Question], tokenizer, think_prefix: str = "",
           limit: int = MAX_PROMPT_TOKENS) -> list[gptoss.Prompt]:
    """Each question's prompt as the model gets it: its text_input as one user message in the chat
    template with the generation prompt, then `think_prefix`'s ids when given (an embedded model whose
    template does not open a think section as DeepSeek-R1's does); a prompt over `limit` tokens is a
    DatasetError naming the row and its length."""
    prefix = tuple(tokenizer.encode(think_prefix, add_special_tokens=False)) if think_prefix else ()
    out = []
    for i, q in enumerate(questions):
        ids = tuple(_chat_ids(tokenizer, q.text_input)) + prefix
        if len(ids) > limit:
            raise DatasetError(f"row {i} ({q.dataset or 'no source'}): its prompt is {len(ids)} tokens, over the "
                               f"{limit} the benchmark allows (MAX_ISL {MAX_INPUT_TOKENS} + {MAX_TEMPLATE_TOKENS} "
                               "of template); the data set or the tokenizer is not deepseek-r1's: check both.")
        out.append(gptoss.Prompt(ids, q.dataset, q.ground_truth))
    return out
