"""Accuracy of a quantized model against the unquantized one, scored with the project's accuracy
library exactly as an MLPerf accuracy run is (ROUGE against the data set's reference answers,
tokens per sample), plus how often the two models' greedy answers are token-for-token equal."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

from cmcontract.publish import write_json

METRICS = ("rouge1", "rouge2", "rougeL", "tokens_per_sample")


@dataclass(frozen=True)
class QuantComparison:
    scheme: str
    samples: int
    unquantized: dict
    quantized: dict
    identical_answers: int

    def ratio(self, metric: str) -> float:
        base = self.unquantized[metric]
        return round(self.quantized[metric] / base, 4) if base else float("nan")

    def env(self) -> dict:
        out = {"CM_QUANT_ACCURACY_SAMPLES": str(self.samples),
               "CM_QUANT_ACCURACY_IDENTICAL_ANSWERS": str(self.identical_answers)}
        for m in METRICS:
            key = m.upper()
            out[f"CM_QUANT_ACCURACY_{key}"] = str(self.quantized[m])
            out[f"CM_QUANT_ACCURACY_{key}_UNQUANTIZED"] = str(self.unquantized[m])
            out[f"CM_QUANT_ACCURACY_{key}_RATIO"] = str(self.ratio(m))
        return out

    def text(self) -> str:
        lines = [f"accuracy on {self.samples} samples (greedy; ROUGE vs the data set's answers):",
                 f"  {'metric':<18}{'unquantized':>12}{self.scheme:>12}{'ratio':>8}"]
        for m in METRICS:
            lines.append(f"  {m:<18}{self.unquantized[m]:>12}{self.quantized[m]:>12}{self.ratio(m):>8}")
        lines.append(f"  identical answers: {self.identical_answers}/{self.samples}")
        return "\n".join(lines)


def _ids(log_path: str) -> list:
    with open(log_path) as f:
        return [e["data"] for e in sorted(json.load(f), key=lambda e: e["qsl_idx"])]


def compare(work_dir: str, scheme: str, dataset_file: str, offset: int, tokenizer_path: str) -> QuantComparison:
    """Score accuracy-unquantized.json and accuracy-<scheme>.json in work_dir."""
    from mlperf_llm.accuracy.evaluate import evaluate
    logs = {name: os.path.join(work_dir, f"accuracy-{name}.json") for name in ("unquantized", scheme)}
    for name, path in logs.items():
        if not os.path.isfile(path):
            raise ValueError(f"{path} is missing: the generation with the {name} model did not finish")
    scores = {name: evaluate(path, dataset_file, tokenizer_path).reference_dict() for name, path in logs.items()}
    base_ids, q_ids = _ids(logs["unquantized"]), _ids(logs[scheme])
    same = sum(a == b for a, b in zip(base_ids, q_ids))
    pick = lambda d: {m: d[m] for m in METRICS}  # noqa: E731
    result = QuantComparison(scheme, len(base_ids), pick(scores["unquantized"]), pick(scores[scheme]), same)
    write_json(os.path.join(work_dir, "quant-accuracy.json"),
               {**result.__dict__, "offset": offset, "dataset": dataset_file})
    return result
