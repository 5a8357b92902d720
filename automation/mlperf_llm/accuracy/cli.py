"""python -m mlperf_llm.accuracy evaluate|test06|audit-config ...

evaluate: mlperf_log_accuracy.json -> accuracy.txt (checker form, hash= line) + accuracy.json
          (numbers and the verdict against the targets, seed 003's lines), printed as well; every
          benchmark, scored by its own pipeline (pipelines.py: OpenOrca or summarisation).
test06:   the TEST06 run's accuracy log -> TEST06/verify_accuracy.txt + TEST06/accuracy/.
audit-config: print the path of TEST06's audit.config (from the inference source, or written with
          the settings of --round).
Exit codes: 0 done (a failed target or check is reported, not an error), 2 bad input.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import List, Optional

from ..benchmarks import BENCHMARKS
from .evaluate import EvaluationError
from .log import DTYPES, AccuracyLogError
from .process import AccuracyRequest, score_accuracy_log
from .splitter import CHOICES, SplitterError, get_splitter
from .targets import SCALE, TargetError
from .test06 import SCENARIOS, verify, write_verification
from .test06_config import AuditConfigError, audit_config
from ..rounds import round_for

EXIT_BAD_INPUT = 2


def cmd_evaluate(a: argparse.Namespace) -> int:
    splitter = get_splitter(a.sentence_splitter)
    print(f"sentence splitter: {splitter.name} ({splitter.detail})", flush=True)
    out_dir = a.output_dir or os.path.dirname(os.path.abspath(a.accuracy_log))
    req = AccuracyRequest([out_dir], a.dataset, a.tokenizer, a.model, dtype=a.dtype, workers=a.workers or None,
                          sentence_splitter=a.sentence_splitter, embedded_reference=a.embedded_reference)
    outcome = score_accuracy_log(req, a.accuracy_log, out_dir, splitter=splitter,
                                 extra={"accuracy_log": os.path.abspath(a.accuracy_log)})
    result = outcome.result
    print(f"tokenizer: {result.tokenizer}")
    print("\nResults\n")
    print(result.reference_dict())
    for verdict in outcome.verdicts:
        print(f"\n{verdict.model}: {'PASS' if verdict.passed else 'FAIL'}")
        for line in verdict.lines():
            print("  " + line)
    print(f"\nwrote {os.path.join(out_dir, 'accuracy.txt')} (hash={outcome.log_hash[:12]}...) and accuracy.json; "
          f"timings {result.seconds}")
    return 0


def cmd_test06(a: argparse.Namespace) -> int:
    result = verify(a.accuracy_log, a.scenario, eos_token_id=a.eos_token_id, dtype=a.dtype)
    test_dir = write_verification(result, a.accuracy_log, a.output_dir)
    print(result.text(), end="")
    for problem in result.problems:
        print("  " + problem)
    print(f"wrote {os.path.join(test_dir, 'verify_accuracy.txt')} ({result.samples} logged samples)")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"passed": result.passed, "first_token": result.first_token, "eos": result.eos,
                       "sample_length": result.sample_length, "samples": result.samples,
                       "problems": result.problems, "test_dir": test_dir}, f, indent=1)
    return 0


def cmd_audit_config(a: argparse.Namespace) -> int:
    path, origin = audit_config(a.inference_source, a.output_dir, round_for(a.round))
    print(f"# {origin}", file=sys.stderr)
    print(path)
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m mlperf_llm.accuracy", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    e = sub.add_parser("evaluate", help="score an accuracy run")
    e.add_argument("--accuracy-log", required=True)
    e.add_argument("--dataset", required=True, help="the run's data set: the processed OpenOrca pickle "
                   "(llama2-70b), a cnn_eval.json-layout file (llama3.1-8b, llama3.1-8b-edge)")
    e.add_argument("--tokenizer", required=True, help="model/tokenizer folder of the run")
    e.add_argument("--model", required=True, choices=sorted(set(BENCHMARKS) | set(SCALE)),
                   help="the benchmark (llama2-70b's also under v5.0's Interactive names)")
    e.add_argument("--embedded-reference", default="",
                   help="reference.json of the embedded data set: its numbers make the targets")
    e.add_argument("--dtype", default="int32", choices=sorted(DTYPES))
    e.add_argument("--workers", type=int, default=0, help="processes (default: all cores)")
    e.add_argument("--sentence-splitter", default="auto", choices=CHOICES)
    e.add_argument("--output-dir", default="", help="where accuracy.txt goes (default: beside the log)")
    e.set_defaults(run=cmd_evaluate)
    t = sub.add_parser("test06", help="verify a TEST06 run")
    t.add_argument("--accuracy-log", required=True)
    t.add_argument("--scenario", required=True, choices=SCENARIOS)
    t.add_argument("--eos-token-id", type=int, default=2)
    t.add_argument("--dtype", default="int32", choices=sorted(DTYPES))
    t.add_argument("--output-dir", required=True, help="TEST06/ is written inside it")
    t.add_argument("--json", default="", help="also write the verdict here")
    t.set_defaults(run=cmd_test06)
    c = sub.add_parser("audit-config", help="locate or write TEST06's audit.config")
    c.add_argument("--inference-source", default="")
    c.add_argument("--output-dir", required=True)
    c.add_argument("--round", default="", help="whose TEST06 settings are written without a source, "
                   "e.g. 4.1 (default: the newest round)")
    c.set_defaults(run=cmd_audit_config)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    a = parser().parse_args(argv)
    try:
        return a.run(a)
    except (AccuracyLogError, EvaluationError, SplitterError, TargetError, AuditConfigError,
            ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
