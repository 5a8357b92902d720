"""Scoring the reasoning benchmarks' answers (gpt-oss-120b; deepseek-r1 reuses the parsers): what an
answer says, per source, and the figure the checker reads.

The rules are the reference evaluator's (language/gpt-oss-120b/eval_accuracy.py and
eval_mlperf_accuracy.py of mlcommons/inference, master b66003e), written here and tested beside the
reference's own functions on the same answers (tests/unit/accuracy/test_reasoning_reference.py):

- **the final channel**: a harmony answer holds an `analysis` channel (the reasoning, drafts
  included) and a `final` one; parsers that read the final channel read the text between the first
  `<|channel|>final...<|message|>` and `<|return|>` (or the end), else the whole answer;
- **AIME**: the last `\\boxed{N}` anywhere in the answer (else the last `Answer: N`), an integer 0-999;
- **GPQA**: of the final channel (bold removed), its leading letter A-D, else its first
  `Answer: X`; else the last `ANSWER: X` / `FINAL ANSWER: X` of the whole answer;
- **LiveCodeBench**: the program is the last fenced python block of the final channel (else its
  last fenced block; else the same in the whole answer), run against the problem's tests in the
  sandbox (`livecodebench.py`);
- **deepseek-r1's rules** (language/deepseek-r1/eval_accuracy.py, an older copy of the same
  evaluator): multiple choice reads the last `ANSWER: X` of the whole answer, no final channel
  (`parse_choice_anywhere`); the program is the first fenced python block (`parse_first_python`);
  MATH500's answer is the last `\\boxed{...}`, braces matched (`parse_boxed`); AIME as above;
- **the figure**: each source weighted by its repeats in the set (aime25 x8, gpqa_diamond x5,
  livecodebench_v6 x3): sum(correct/repeats) / sum(total/repeats) x 100, printed
  `'exact_match': X.XXX` (the checker's pattern allows one space).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_FINAL = re.compile(r"<\|channel\|>final[^<]*<\|message\|>(.*?)(?:<\|return\|>|$)", re.DOTALL)
_BOLD = re.compile(r"\*\*([^*]+)\*\*")
_BOXED_INT = re.compile(r"\\boxed{\s*(\d+)\s*}")
_ANSWER_INT = re.compile(r"Answer:\s*(\d+)(?!\.)\b", re.IGNORECASE | re.MULTILINE)
_PY_BLOCK = re.compile(r"```python(.*?)```", re.DOTALL)
_ANY_BLOCK = re.compile(r"```(.*?)```", re.DOTALL)
_LANG_TAG = re.compile(r"^(?:python|py)\s*\n", re.IGNORECASE)

# the accuracy set's sources and how many times each problem is in it (eval_mlperf_accuracy.py)
REPEATS = {"aime25": 8, "gpqa_diamond": 5, "livecodebench_v6": 3}
# every source a reasoning set has (gpt-oss-120b: the first three; deepseek-r1: all five), matched in
# this order by substring of a row's `dataset` name; which a benchmark scores is its rules' (reasoning_eval)
SOURCES = ("gpqa", "aime", "livecodebench", "math500", "mmlu_pro")


def final_channel(text: str) -> str:
    """The final channel's text (stripped), or the whole answer where it has none."""
    text = str(text or "").strip()
    m = _FINAL.search(text)
    return m.group(1).strip() if m else text


def parse_aime(text: str) -> int | None:
    """The answer's integer 0-999: its last boxed integer, else its last 'Answer: N'; None if neither
    (or the one found is out of range: a boxed 1000 does not fall back to 'Answer:')."""
    text = str(text or "").strip()
    found = [m.group(1) for m in _BOXED_INT.finditer(text)] or [m.group(1) for m in _ANSWER_INT.finditer(text)]
    if not found:
        return None
    value = int(found[-1])
    return value if 0 <= value <= 999 else None


def parse_choice(text: str, last: str = "D") -> str | None:
    """The letter (A..last) a multiple-choice answer gives, upper case, or None."""
    text = str(text or "").strip()
    if not text:
        return None
    final = _unescape(_unwrap_list(_BOLD.sub(r"\1", final_channel(text))))
    lead = re.match(rf"^[^a-zA-Z]*([A-{last}])(?:[^a-zA-Z]|$)", final.strip(), re.IGNORECASE)
    if lead:
        return lead.group(1).upper()
    said = re.search(rf"\b(?:Answer|ANSWER)\s*[:.]?\s*([A-{last}])\b", final, re.IGNORECASE)
    if said:
        return said.group(1).upper()
    return _last_said(_unescape(text), last) or _last_lone(final, last)


def _unescape(text: str) -> str:
    """Literal backslash-n and backslash-quote (an answer printed as a Python string) as the characters."""
    return text.replace("\\n", "\n").replace("\\'", "'")


def _unwrap_list(text: str) -> str:
    """An answer printed as a one-item Python list (`['B']`) without its brackets and quotes."""
    if text.startswith(("['", '["')) and text.endswith(("']", '"]')):
        return text[2:-2].strip()
    return text


def _last_said(text: str, last: str) -> str | None:
    """The letter of the last `ANSWER: X` / `FINAL ANSWER: (X)` in text."""
    said = list(re.finditer(rf"\b(?:ANSWER|FINAL\s*ANSWER)\b\s*[:=]?\s*(?:\(?\s*([A-{last}])\s*\)?)(?:\s*$|[^A-Za-z])",
                            text, re.IGNORECASE))
    return said[-1].group(1).upper() if said else None


def _last_lone(text: str, last: str) -> str | None:
    """Ten options (MMLU-Pro) only: the last lone letter of text; None for four."""
    if last != "J":
        return None
    lone = list(re.finditer(r"\b([A-J])\b", text, re.IGNORECASE))
    return lone[-1].group(1).upper() if lone else None


def parse_code(text: str) -> str | None:
    """The program an answer gives: the last fenced python block of its final channel, else its last
    plain fenced block without a python tag; else the same in the whole answer."""
    text = str(text or "").strip()
    final = final_channel(text)
    places = (final, text) if final != text else (text,)
    for place in places:
        blocks = _PY_BLOCK.findall(place)
        if blocks:
            return blocks[-1].strip()
        plain = _ANY_BLOCK.findall(place)
        if plain:
            return _LANG_TAG.sub("", plain[-1].strip())
    return None


def parse_choice_anywhere(text: str, last: str = "D") -> str | None:
    """deepseek-r1's multiple choice: the last `ANSWER: X` / `FINAL ANSWER: X` of the whole answer
    (a list's text unwrapped); for ten options, else its last lone letter."""
    text = str(text or "").strip()
    if not text:
        return None
    text = _unescape(_unwrap_list(text))
    return _last_said(text, last) or _last_lone(text, last)


def parse_first_python(text: str) -> str | None:
    """deepseek-r1's program: the first fenced python block of the whole answer."""
    m = _PY_BLOCK.search(str(text or "").strip())
    return m.group(1).strip() if m else None


def parse_boxed(text: str) -> str | None:
    """The last `\\boxed{...}`'s content, nested braces matched (MATH500); None without one closed."""
    text = str(text or "").strip()
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, i = 0, start + len("\\boxed{")
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            if depth == 0:
                return text[i:j].strip()
            depth -= 1
    return None


def source_of(dataset: str) -> str:
    """'aime' | 'gpqa' | 'livecodebench' | 'math500' | 'mmlu_pro' for a row's `dataset` name (lower
    case, by substring); ValueError for another."""
    name = str(dataset or "").lower()
    for source in SOURCES:
        if source in name:
            return source
    raise ValueError(f"dataset {dataset!r}: not a source of a reasoning set ({', '.join(SOURCES)})")


@dataclass
class Tally:
    """Right and total answers per `dataset` name, and the checker's figure: weighted by `repeats`
    (gpt-oss-120b's REPEATS; {} for deepseek-r1, whose figure is the plain mean of 0-or-100 marks)."""
    correct: dict[str, int] = field(default_factory=dict)
    total: dict[str, int] = field(default_factory=dict)
    repeats: dict[str, int] = field(default_factory=lambda: dict(REPEATS))

    def add(self, dataset: str, right: bool) -> None:
        name = str(dataset).lower()
        self.total[name] = self.total.get(name, 0) + 1
        self.correct[name] = self.correct.get(name, 0) + (1 if right else 0)

    def exact_match(self) -> float:
        """sum over sources of correct/repeats over sum of total/repeats, x 100 (0.0 for no answers)."""
        score = sum(c / self.repeats.get(d, 1) for d, c in self.correct.items())
        best = sum(t / self.repeats.get(d, 1) for d, t in self.total.items())
        return 100.0 * score / best if best else 0.0

    def checker_line(self) -> str:
        return f"'exact_match': {self.exact_match():.3f}"
