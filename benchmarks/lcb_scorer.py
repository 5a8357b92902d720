"""The sandboxed LiveCodeBench scorer (accuracy/livecodebench.py) beside the reference way of running
the same programs (LiveCodeBench's own `check_correctness`: `testing_util.run_test` in a
multiprocessing child with its reliability guard), on the same programs, timed over the same span:
programs/s of each and whether each program gets the same verdict.

The programs: each embedded programming problem (datasets/embedded_reasoning) with our solution, a
wrong one (its output off by one line), one that crashes and one that prints nothing; the two sides
alternate by problem so a busy moment costs both alike.

    git clone https://github.com/LiveCodeBench/LiveCodeBench /tmp/lcb   # not part of this project
    python benchmarks/lcb_scorer.py --lcb /tmp/lcb [--rounds 3]

Needs numpy and tqdm (LiveCodeBench's imports). Prints a table and the ratio ours/reference.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "automation"))

from mlperf_llm.accuracy.livecodebench import run_tests  # noqa: E402
from mlperf_llm.datasets.reasoning_embedded import load_accuracy  # noqa: E402


def variants(problem):
    """(label, program) for one problem: right, wrong, crashing, silent."""
    right = problem.solution
    if problem.fn_name:
        wrong = right.replace("return ", "return None and ", 1)
    else:
        wrong = right + "print('extra line')\n"
    return [("right", right), ("wrong", wrong), ("crash", "raise RuntimeError('boom')\n"), ("silent", "pass\n")]


def reference_sample(problem) -> dict:
    io = {"inputs": [t.given for t in problem.tests], "outputs": [t.expected for t in problem.tests]}
    if problem.fn_name:
        io["fn_name"] = problem.fn_name
    return {"input_output": json.dumps(io)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lcb", required=True, help="a LiveCodeBench checkout (its lcb_runner package)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=6, help="seconds per test, both sides")
    args = ap.parse_args(argv)
    sys.path.insert(0, args.lcb)
    from lcb_runner.evaluation.compute_code_generation_metrics import check_correctness

    problems = [p for p in load_accuracy() if p.source == "livecodebench"]
    cases = [(p, label, prog) for p in problems for label, prog in variants(p)]
    times = {"ours": 0.0, "reference": 0.0}
    differ = []
    for r in range(args.rounds):
        for i, (p, label, prog) in enumerate(cases):
            order = ("ours", "reference") if (i + r) % 2 == 0 else ("reference", "ours")
            verdicts = {}
            for side in order:
                t0 = time.perf_counter()
                if side == "ours":
                    verdicts[side] = run_tests(prog, list(p.tests), p.fn_name, per_test_s=args.timeout).passed
                else:
                    result, _ = check_correctness(reference_sample(p), prog, args.timeout, debug=False)
                    verdicts[side] = bool(result) and all(x is True for x in result)
                times[side] += time.perf_counter() - t0
            if r == 0 and verdicts["ours"] != verdicts["reference"]:
                differ.append(f"{p.id} {label}: ours {verdicts['ours']}, reference {verdicts['reference']}")
    n = len(cases) * args.rounds
    print(f"{len(cases)} programs x {args.rounds} rounds")
    for side in ("ours", "reference"):
        print(f"  {side:<10} {n / times[side]:8.1f} programs/s  ({times[side]:.1f} s)")
    print(f"  ratio ours/reference (programs/s): {times['reference'] / times['ours']:.2f}")
    print(f"  same verdict: {len(cases) - len(differ)} of {len(cases)}")
    for line in differ:
        print(f"    differs: {line}")
    return 0 if not differ else 1


if __name__ == "__main__":
    sys.exit(main())
