"""The embedded stand-in of gpt-oss-120b's data sets: the embedded reasoning problems
(reasoning_embedded.py) written in the real sets' layout (gptoss.py), each prompt rendered with the
embedded model's chat template and tokenized with its tokenizer.

The real prompts are harmony renderings whose system message says the reasoning effort (high for the
accuracy set, low for the performance set). The embedded model (SmolLM2-135M-Instruct) does not know
harmony: given harmony-rendered prompts it writes channel headers in a few answers and is right in
almost none (docs/gpt-oss-120b.md says what was measured), so its prompts are its own chat template
with the same system line, `Reasoning: high` or `Reasoning: low`. Its answers carry no channels and
the scorer reads the whole answer, as the reference's does when an answer has no `final` channel.

Four files, named after the real ones with an `embedded_` prefix: the accuracy set (every problem),
the performance set (the performance questions), the TEST07 set (the multiple-choice problems, as the
real one is GPQA's), and the LiveCodeBench tests file.
"""
from __future__ import annotations

from pathlib import Path

from . import gptoss, reasoning_embedded
from .tokenizer import ModelTokenizer

PREFIX = "embedded_"
PROMPT_FORMAT = "the embedded model's chat template, system message 'Reasoning: {effort}'"
EFFORT = {"accuracy": "high", "performance": "low", "compliance": "high"}


def system_message(kind: str) -> str:
    return f"Reasoning: {EFFORT[kind]}"


def file_name(kind: str) -> str:
    return PREFIX + gptoss.SETS[kind].file


def build_embedded(tokenizer_dir, out_dir) -> dict[str, Path]:
    """Write the four files into out_dir; {kind: path} with kind "tests" for the tests file."""
    tok = ModelTokenizer.from_folder(tokenizer_dir)
    out_dir = Path(out_dir)

    def ids(kind: str, text: str) -> tuple[int, ...]:
        return tuple(tok.encode(tok.chat_prompt(system_message(kind), text), add_special_tokens=False))

    problems = reasoning_embedded.load_accuracy()
    accuracy = [gptoss.Prompt(ids("accuracy", p.prompt()), p.dataset, p.ground_truth) for p in problems]
    compliance = [gptoss.Prompt(ids("compliance", p.prompt()), p.dataset, p.ground_truth)
                  for p in problems if p.source == "gpqa"]
    performance = [gptoss.Prompt(ids("performance", q)) for q in reasoning_embedded.load_performance()]
    tests = [gptoss.Problem(p.ground_truth, p.tests, p.fn_name) for p in problems if p.source == "livecodebench"]
    paths = {kind: gptoss.write_set(rows, out_dir / file_name(kind))
             for kind, rows in (("accuracy", accuracy), ("performance", performance), ("compliance", compliance))}
    paths["tests"] = gptoss.write_tests(tests, out_dir / (PREFIX + gptoss.TESTS_FILE))
    return paths


def expected_rows() -> dict[str, int]:
    """Each embedded set's row count."""
    problems = reasoning_embedded.load_accuracy()
    return {"accuracy": len(problems), "performance": len(reasoning_embedded.load_performance()),
            "compliance": sum(p.source == "gpqa" for p in problems)}
