"""Raw parquet -> processed pickles: the reference processorca.py vs mlperf_llm.datasets.openorca,
side by side on the same synthetic OpenOrca-like parquet and Llama-style tokenizer; checks that the
outputs are equal and prints the time ratio.

    CM_MLPERF_INFERENCE_SOURCE=/path/to/inference PYTHONPATH=automation:tests/fixtures/datasets \
        python benchmarks/datasets_processing.py --rows 20000
(needs transformers for the reference script; no torch)."""
import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "automation"), str(ROOT / "tests" / "fixtures" / "datasets")]

from tiny_tokenizer import make_tokenizer  # noqa: E402

WORDS = ("the a of to and in is it you that he was for on are with as his they be at one have this from "
         "or had by word but what some we can out other were all there when up use your how said an each "
         "she which do their time if will way about many then them write would like so these her long make "
         "thing see him two has look more day could go come did number sound no most people my over know "
         "water than call first who may down side been now find answer explain question because").split()
SYSTEMS = ["", "You are a helpful assistant.", "You are an AI assistant. Think step by step.",
           "Explain how you used the definition to come up with the answer."]


def synthetic(rows: int, seed: int = 7) -> pd.DataFrame:
    rnd = random.Random(seed)
    text = lambda n: " ".join(rnd.choice(WORDS) for _ in range(n)).capitalize() + "."  # noqa: E731
    return pd.DataFrame([{"id": f"{rnd.choice(['cot', 'flan', 'niv', 't0'])}.{i}",
                          "system_prompt": rnd.choice(SYSTEMS), "question": text(rnd.randint(10, 120)),
                          "response": text(rnd.randint(1, 150))} for i in range(rows)])


def crashed(side: str, r: subprocess.CompletedProcess) -> int:
    """Say which side crashed and why; no timing or ratio is printed for a run that did not finish."""
    tail = "\n  ".join((r.stderr or r.stdout or "(no output)").strip().splitlines()[-15:])
    print(f"datasets_processing: FAILED, no result: {side} crashed (exit code {r.returncode}):\n  {tail}",
          file=sys.stderr)
    return 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--samples", type=int, default=4000, help="num_total_samples (divisible by 4)")
    a = ap.parse_args()
    src = os.environ.get("CM_MLPERF_INFERENCE_SOURCE", "")
    script = Path(src) / "language/llama2-70b/processorca.py"
    if not script.is_file():
        print("set CM_MLPERF_INFERENCE_SOURCE to an mlcommons/inference checkout")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        raw = synthetic(a.rows)
        raw.to_parquet(tmp / "raw.parquet")
        tok = make_tokenizer(tmp / "tok", [" ".join(WORDS)] * 20 + SYSTEMS, vocab_size=600, llama_like=True)
        args = [f"--dataset_pq_path={tmp / 'raw.parquet'}", f"--model_dir={tok}", "--seqlen_limit=1024",
                f"--num_total_samples={a.samples}", "--calibration_subset_size=100"]
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, str(script), *args, f"--export_dir={tmp / 'ref'}"],
                           capture_output=True, text=True)
        t_ref = time.perf_counter() - t0
        if r.returncode:
            return crashed("the reference processorca.py", r)
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "mlperf_llm.datasets.openorca", *args,
                            f"--export_dir={tmp / 'ours'}"], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=str(ROOT / "automation")))
        t_ours = time.perf_counter() - t0
        if r.returncode:
            return crashed("ours (mlperf_llm.datasets.openorca)", r)
        equal = True
        for name in ("full", f"sampled_{a.samples}", "calibration_100"):
            x = pd.read_pickle(tmp / "ref" / f"open_orca_gpt4_tokenized_llama.{name}.pkl")
            y = pd.read_pickle(tmp / "ours" / f"open_orca_gpt4_tokenized_llama.{name}.pkl")
            equal &= len(x) == len(y) and all(
                [list(v) if isinstance(v, list) else v for v in x[c]] ==
                [list(v) if isinstance(v, list) else v for v in y[c]] for c in y.columns)
        print(f"rows={a.rows} reference processorca.py {t_ref:.2f} s, ours {t_ours:.2f} s, "
              f"ratio {t_ref / t_ours:.2f}x, outputs equal: {equal}")
        return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
