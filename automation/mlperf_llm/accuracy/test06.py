"""TEST06 (llama2's compliance test): verify the accuracy log of the TEST06 run.

The run itself is a LoadGen performance run with the TEST06 audit.config in its own directory
(100 logged samples). The checks follow compliance/nvidia/TEST06/run_verification.py:
- first token (not for Offline): for every logged entry the first-token buffer (`token_data`)
  agrees with the start of the response (`data`), element by element over the shorter one;
- EOS: no response ends in two or more EOS tokens (the reference scans back from the last token
  and never looks at index 0, so neither does this);
- sample length: every response has exactly `token_count` tokens.
`verify_accuracy.txt` carries the lines the checker looks for; the log is copied beside it.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np

from cmcontract.publish import staged_file

from .log import AccuracyLogError, parse_entry, read_log
from ..benchmarks import get_benchmark
from ..files import write_atomic

SCENARIOS = ("Offline", "Server", "Interactive", "SingleStream", "MultiStream")
LLAMA2_EOS = 2


@dataclass
class Test06Result:
    scenario: str
    first_token: Optional[bool]     # None: skipped (Offline)
    eos: bool
    sample_length: bool
    samples: int
    problems: List[str] = field(default_factory=list)   # first few failing entries, for the output

    @property
    def passed(self) -> bool:
        return self.first_token is not False and self.eos and self.sample_length

    def text(self) -> str:
        first = "Skipped" if self.first_token is None else str(self.first_token)
        return (f"First token check pass: {first}\n"
                f"EOS check pass: {self.eos}\n"
                f"Sample length check pass: {self.sample_length}\n"
                f"TEST06 verification {'complete' if self.passed else 'failed'}\n")


def trailing_eos(tokens: np.ndarray, eos_token_id: int) -> int:
    """EOS tokens at the end of tokens[1:] (the reference's scan stops before index 0)."""
    n = 0
    for i in range(len(tokens) - 1, 0, -1):
        if tokens[i] != eos_token_id:
            break
        n += 1
    return n


def verify(accuracy_log: str, scenario: str, eos_token_id: int = LLAMA2_EOS,
           dtype: str = "int32") -> Test06Result:
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; use one of {', '.join(SCENARIOS)}")
    raw = read_log(accuracy_log)
    if not raw:
        raise AccuracyLogError(f"{accuracy_log} has no entries: did the TEST06 run read audit.config "
                               f"(accuracy_log_sampling_target = 100)? Look for 'audit.config' in its "
                               f"mlperf_log_detail.txt")
    check_first = scenario != "Offline"
    first_ok, eos_ok, length_ok = True, True, True
    problems: List[str] = []
    for item in raw:
        entry = parse_entry(item, dtype)
        where = f"qsl_idx {entry.qsl_idx}"
        if check_first:
            if entry.first_tokens is None:
                first_ok = False
                problems.append(f"{where}: no token_data (FirstTokenComplete not called?)")
            elif not all(a == b for a, b in zip(entry.token_ids, entry.first_tokens)):
                first_ok = False
                problems.append(f"{where}: first token {entry.first_tokens[:1].tolist()} != "
                                f"response start {entry.token_ids[:1].tolist()}")
        if trailing_eos(entry.token_ids, eos_token_id) >= 2:
            eos_ok = False
            problems.append(f"{where}: ends in {trailing_eos(entry.token_ids, eos_token_id)} EOS tokens")
        if entry.token_count is None:
            length_ok = False
            problems.append(f"{where}: no token_count (use_token_latencies off?)")
        elif entry.token_count != len(entry.token_ids):
            length_ok = False
            problems.append(f"{where}: token_count {entry.token_count} != {len(entry.token_ids)} tokens")
    return Test06Result(scenario, first_ok if check_first else None, eos_ok, length_ok,
                        len(raw), problems[:10])


def write_verification(result: Test06Result, accuracy_log: str, output_dir: str) -> str:
    """<output_dir>/TEST06/verify_accuracy.txt and TEST06/accuracy/mlperf_log_accuracy.json,
    the compliance layout of a submission. Returns the TEST06 directory."""
    test_dir = os.path.join(output_dir, "TEST06")
    accuracy_dir = os.path.join(test_dir, "accuracy")
    os.makedirs(accuracy_dir, exist_ok=True)
    with staged_file(os.path.join(accuracy_dir, "mlperf_log_accuracy.json")) as tmp:
        shutil.copyfile(accuracy_log, tmp)
    write_atomic(os.path.join(test_dir, "verify_accuracy.txt"), result.text())
    return test_dir


def eos_token_id_of(model_dir: str, model: str) -> Tuple[int, str]:
    """(EOS id, where it came from): the model folder's generation_config.json / config.json,
    else the benchmark's fixed one (llama2-70b: 2, run_verification.py's default); ValueError
    naming the fix when neither says it (a benchmark whose EOS is its tokenizer's)."""
    for name in ("generation_config.json", "config.json"):
        path = os.path.join(model_dir, name) if model_dir else ""
        if path and os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                value = json.load(f).get("eos_token_id")
            if isinstance(value, list) and value:
                value = value[0]
            if isinstance(value, int):
                return value, path
    bench = get_benchmark(model)
    if bench.eos_token_id is None:
        raise ValueError(f"TEST06 of {model} needs the EOS id of its tokenizer, and the model folder "
                         f"{model_dir or '(none)'} has no generation_config.json or config.json that says it; "
                         "fix: pass --eos_token_id=N")
    return bench.eos_token_id, f"{bench.family}'s EOS (the benchmark table)"
