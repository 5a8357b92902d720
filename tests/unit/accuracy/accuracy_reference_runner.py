"""Run the reference language/llama2-70b/evaluate-accuracy.py beside the project, offline.

The script is run as it is, from the inference source (CM_MLPERF_INFERENCE_SOURCE), in a
subprocess. Two things it fetches at run time cannot be fetched here, so they are provided:
- nltk's punkt_tab: written into a private NLTK_DATA from the packaged English Punkt model
  (converted from NLTK's punkt_tab, so the same parameters); its `nltk.download` calls fail offline
  and are harmless;
- `evaluate.load("rouge")` downloads the metric script from the Hub. If HF `evaluate` with a cached
  rouge metric is available it is used; otherwise a stand-in module `evaluate` whose rouge metric
  does what HF's does with use_aggregator=False: `rouge_score.RougeScorer(types,
  use_stemmer=...).score(reference, prediction)` per pair, fmeasure lists per type.
Everything else (decode, first entry per qsl_idx, strip, sent_tokenize, chunking over a Pool,
numpy mean, rounding, tokens_per_sample) is the reference's own code.
"""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Optional

SCRIPT = "language/llama2-70b/evaluate-accuracy.py"

EVALUATE_STANDIN = '''
"""Stand-in for HF evaluate's rouge metric (offline): rouge_score per pair, fmeasure lists."""
from rouge_score import rouge_scorer

class _Rouge:
    def compute(self, predictions, references, rouge_types=None, use_aggregator=True,
                use_stemmer=False, tokenizer=None):
        assert not use_aggregator, "the reference calls use_aggregator=False"
        types = rouge_types or ["rouge1", "rouge2", "rougeL", "rougeLsum"]
        scorer = rouge_scorer.RougeScorer(rouge_types=types, use_stemmer=use_stemmer, tokenizer=tokenizer)
        scores = [scorer.score(ref, pred) for ref, pred in zip(references, predictions)]
        return {k: [s[k].fmeasure for s in scores] for k in types}

def load(name, *args, **kwargs):
    assert name == "rouge", name
    return _Rouge()
'''


def reference_script() -> Optional[Path]:
    """v5.1.1's, from ../shared/mlcommons-inference (tests/inference_sources.py)."""
    from inference_sources import inference_source
    path = Path(inference_source("5.1")) / SCRIPT
    return path if path.is_file() else None


def write_punkt_tab(nltk_data: Path) -> None:
    import punkt
    model = punkt.load_model("english")
    d = nltk_data / "tokenizers" / "punkt_tab" / "english"
    d.mkdir(parents=True, exist_ok=True)
    (d / "abbrev_types.txt").write_text("\n".join(sorted(model.abbrev_types)) + "\n")
    (d / "sent_starters.txt").write_text("\n".join(sorted(model.sent_starters)) + "\n")
    (d / "collocations.tab").write_text("\n".join("\t".join(c) for c in sorted(model.collocations)) + "\n")
    (d / "ortho_context.tab").write_text(
        "\n".join(f"{k}\t{v}" for k, v in sorted(model.ortho_context.items())) + "\n")


def _real_evaluate_works(env: dict) -> bool:
    probe = "import evaluate; evaluate.load('rouge')"
    return subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, timeout=120).returncode == 0


def run_reference(script: Path, log: str, dataset: str, tokenizer: str, work: Path) -> tuple[dict, str]:
    """(the printed result dict, which rouge metric ran)."""
    nltk_data = work / "nltk_data"
    write_punkt_tab(nltk_data)
    env = dict(os.environ, NLTK_DATA=str(nltk_data), HF_HUB_OFFLINE="1", HF_EVALUATE_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1")
    metric = "HF evaluate (cached rouge metric)"
    if not _real_evaluate_works(env):
        shim = work / "shim"
        (shim / "evaluate").mkdir(parents=True, exist_ok=True)
        (shim / "evaluate" / "__init__.py").write_text(EVALUATE_STANDIN)
        env["PYTHONPATH"] = os.pathsep.join([str(shim), env.get("PYTHONPATH", "")])
        metric = "stand-in evaluate module (rouge_score per pair, as HF's rouge metric)"
    proc = subprocess.run([sys.executable, str(script), "--checkpoint-path", tokenizer,
                           "--mlperf-accuracy-file", log, "--dataset-file", dataset, "--dtype", "int32"],
                          env=env, cwd=work, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"reference script failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    line = [l for l in proc.stdout.splitlines() if l.startswith("{")][-1]
    # numpy 2 prints np.float64(44.4) / np.int64(5): keep the numbers
    return ast.literal_eval(re.sub(r"np\.\w+\(([^()]*)\)", r"\1", line)), metric
