"""The accuracy figure of one accuracy log, by ours and by the reference's own evaluator: the round's
language/gpt-oss-120b/eval_mlperf_accuracy.py, run as it is from ../shared (master b66003e) in a
process of its own, on the same log, the same reference data (parquet) and the same tokenizer. The
answers are AIME and GPQA ones of every form the parsers tell apart (the final channel or none, a
boxed integer in the analysis only, `Answer: X` here or there, bold, a letter alone, out-of-range
integers), with the benchmark's repeats; LiveCodeBench rows are left out, as the reference fetches
their tests from the Hugging Face hub. Both must print the same `'exact_match'`."""
import json
import re
import subprocess
import sys
from pathlib import Path

from mlperf_llm.accuracy.reasoning_eval import evaluate_log
from mlperf_llm.datasets import gptoss
from mlperf_llm.datasets.tokenizer import ModelTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures" / "datasets"))
from tiny_tokenizer import make_tokenizer  # noqa: E402

REFERENCE = (Path(__file__).resolve().parents[4] / "shared" / "mlcommons-inference" / "master-b66003e" / "language"
             / "gpt-oss-120b")
H = "<|channel|>analysis<|message|>{}<|end|><|start|>assistant<|channel|>final<|message|>{}<|return|>"
ROWS = [   # (dataset, ground truth, answer)
    ("aime25", "42", H.format("so 42", "\\boxed{42}")),
    ("aime25", "42", H.format("\\boxed{42}", "the answer")),               # boxed in the analysis: AIME reads the whole text
    ("aime25", "7", H.format("", "Answer: 7")),
    ("aime25", "7", "no channels at all \\boxed{ 7 }"),
    ("aime25", "100", H.format("", "\\boxed{1000}")),                    # out of range
    ("aime25", "12", H.format("", "\\boxed{12} then \\boxed{13}")),      # the last one
    ("gpqa_diamond", "B", H.format("Answer: A", "B")),                   # the final channel's letter
    ("gpqa_diamond", "B", H.format("", "**B**")),
    ("gpqa_diamond", "C", H.format("", "I think the answer: C.")),
    ("gpqa_diamond", "D", H.format("", "Answer: A")),
    ("gpqa_diamond", "A", "no channels; ANSWER: A"),
    ("gpqa_diamond", "C", H.format("", "Between them, neither")),
    ("gpqa_diamond", "A", H.format("", "['A']")),
]


def test_ours_and_the_reference_evaluator_print_the_same_exact_match_on_one_log(tmp_path):
    tokdir = make_tokenizer(tmp_path / "tok", [a for *_, a in ROWS] + ["question"])
    tok = ModelTokenizer.from_folder(tokdir)
    data = gptoss.write_set([gptoss.Prompt((1, 2, 3 + i), d, t) for i, (d, t, _) in enumerate(ROWS)],
                            tmp_path / "acc_eval_inputs.parquet")
    log = tmp_path / "mlperf_log_accuracy.json"
    entries = []
    for i, (_, _, answer) in enumerate(ROWS):
        ids = tok.encode(answer, add_special_tokens=False)
        hexdata = b"".join(int(t).to_bytes(4, "little", signed=True) for t in ids).hex().upper()
        entries.append({"seq_id": i, "qsl_idx": i, "data": hexdata, "token_count": len(ids)})
    log.write_text(json.dumps(entries))

    ref = subprocess.run([sys.executable, str(REFERENCE / "eval_mlperf_accuracy.py"), "--mlperf-log", str(log),
                          "--reference-data", str(data), "--tokenizer", str(tokdir)],
                         cwd=REFERENCE, capture_output=True, text=True, timeout=300)
    found = re.search(r"'exact_match':\s*([\d.]+)", ref.stdout)
    assert ref.returncode == 0 and found, ref.stdout[-3000:] + ref.stderr[-3000:]

    ours = evaluate_log(str(log), str(data), str(tokdir), workers=1)
    assert ours.checker_line() == f"'exact_match': {found[1]}", (ours.checker_line(), ours.by_source)
    # neither 0 nor 100: both parsers were seen marking right and wrong
    assert 0 < ours.exact_match < 100
