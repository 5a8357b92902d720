"""What the process-mlperf-accuracy and TEST06 steps do, as plain functions on typed requests.

A results folder, as the harness writes it: <results>/<model>/<Scenario>/accuracy/ (AccuracyOnly
run) and <results>/<model>/<Scenario>/TEST06/ (TEST06 run), each with its LoadGen logs.
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from typing import List, Optional

from ..outcomes import AccuracyVerdict, MetricCheck, TargetCheck, Test06Verdict
from .evaluate import AccuracyResult, EvaluationError, evaluate, load_tokenizer
from .report import write_accuracy_txt, write_result_json
from .splitter import get_splitter
from .targets import SCALE, Verdict, embedded_subset_targets, embedded_targets, judge, mlperf_targets
from .test06 import Test06Result, verify, write_verification

LOG = "mlperf_log_accuracy.json"


def accuracy_dirs(results_dir: str, model: str = "") -> List[str]:
    """Every <results>/<model>/<Scenario>/accuracy holding an accuracy log (with v5.0's
    llama2-70b-interactive-* model folder for Interactive runs)."""
    models = [model, model.replace("llama2-70b", "llama2-70b-interactive")] if model else ["*"]
    found = set()
    for m in dict.fromkeys(models):
        found.update(os.path.dirname(p) for p in glob.glob(os.path.join(results_dir, m, "*", "accuracy", LOG)))
    return sorted(found)


def scenario_dir(results_dir: str, model: str, scenario: str, round_name: str) -> str:
    """<results>/<model dir>/<scenario dir> as the harness lays it out for this round."""
    from mlperf_llm.harness.rounds import loadgen_model_and_dirs
    from mlperf_llm.rounds import round_for
    _, _, model_dir, scenario_name = loadgen_model_and_dirs(model, scenario, round_for(round_name, model))
    return os.path.join(results_dir, model_dir, scenario_name)


def target_models(model: str) -> List[str]:
    """The run's model first, then its -99 / -99.9 sibling: both verdicts are shown."""
    base = model.replace("-99.9", "").replace("-99", "")
    ordered = [model] + [m for m in (f"{base}-99", f"{base}-99.9") if m != model]
    return [m for m in ordered if m in SCALE]


@dataclass
class AccuracyRequest:
    directories: List[str]          # each holds mlperf_log_accuracy.json; accuracy.txt goes there
    dataset: str
    tokenizer: str
    model: str                      # the benchmark (mlperf_llm.benchmarks)
    dtype: str = "int32"
    workers: Optional[int] = None
    sentence_splitter: str = "auto"
    embedded_reference: str = ""    # set: targets are the embedded data set's numbers


@dataclass
class AccuracyOutcome:
    directory: str
    result: AccuracyResult
    verdicts: List[Verdict]
    log_hash: str

    @property
    def passed(self) -> bool:
        return self.verdicts[0].passed   # the run's own model


def process_accuracy(req: AccuracyRequest) -> List[AccuracyOutcome]:
    if not req.directories:
        raise EvaluationError("no accuracy run found: expected <results>/<model>/<Scenario>/accuracy/"
                              f"{LOG}; run the benchmark with --mode=accuracy first")
    splitter = get_splitter(req.sentence_splitter)
    tokenizer = load_tokenizer(req.tokenizer)
    whole = [embedded_targets(m, req.embedded_reference) if req.embedded_reference else mlperf_targets(m)
             for m in target_models(req.model)]
    outcomes = []
    for directory in req.directories:
        log = os.path.join(directory, LOG)
        result = evaluate(log, req.dataset, req.tokenizer, dtype=req.dtype, workers=req.workers,
                          splitter=splitter, tokenizer=tokenizer)
        targets = whole
        if req.embedded_reference:
            subset = _embedded_subset(req, log, splitter)
            if subset is not None:
                targets = [embedded_subset_targets(m, subset[1], subset[0]) for m in target_models(req.model)]
        verdicts = [judge(result.checker_values(), t) for t in targets]
        log_hash = write_accuracy_txt(os.path.join(directory, "accuracy.txt"), result, log)
        write_result_json(os.path.join(directory, "accuracy.json"), result, verdicts, log_hash,
                          extra={"model": req.model, "dataset": os.path.abspath(req.dataset)})
        outcomes.append(AccuracyOutcome(directory, result, verdicts, log_hash))
    return outcomes


def _embedded_subset(req: AccuracyRequest, log: str, splitter):
    """(count, metrics of the embedded reference answers of the samples the log holds) when the
    test scored fewer samples than the reference covers (test mode); None for the whole set."""
    import json

    import pandas as pd

    from .evaluate import score_texts
    from .log import first_per_sample

    with open(req.embedded_reference, encoding="utf-8") as f:
        covered = int(json.load(f).get("samples") or 0)
    idx = sorted({e.qsl_idx for e in first_per_sample(log, req.dtype)})
    if not covered or len(idx) >= covered:
        return None
    answers_file = os.path.join(os.path.dirname(req.embedded_reference), "reference_answers.jsonl")
    try:
        with open(answers_file, encoding="utf-8") as f:
            answers = {a["id"]: a for a in (json.loads(line) for line in f if line.strip())}
    except OSError as e:
        raise EvaluationError(f"the test scored {len(idx)} of {covered} samples, and the reference answers "
                              f"to judge that subset by are missing ({answers_file}: {e.strerror}); "
                              "fix: rerun with --accuracy_sample_count=all") from None
    frame = pd.read_pickle(req.dataset)
    rows = frame.iloc[idx]
    missing = [i for i in rows["id"] if i not in answers]
    if missing:
        raise EvaluationError(f"{answers_file} has no reference answer for {missing[:3]}: the data set "
                              f"{req.dataset} is not the embedded one it was made for")
    metrics = score_texts([str(x) for x in rows["output"]], [answers[i]["text"] for i in rows["id"]],
                          splitter=splitter)
    metrics["tokens_per_sample"] = round(sum(answers[i]["n_tokens"] for i in rows["id"]) / len(idx), 1)
    return len(idx), metrics


def accuracy_verdict(outcome: AccuracyOutcome) -> AccuracyVerdict:
    """The typed verdict for `state` (mlperf_llm.outcomes): the numbers, each target set's checks."""
    r = outcome.result
    return AccuracyVerdict(
        scenario=os.path.basename(os.path.dirname(os.path.normpath(outcome.directory))),
        directory=outcome.directory, samples=r.gen_num, rouge1=r.rouge1, rouge2=r.rouge2,
        rougeL=r.rougeL, tokens_per_sample=r.tokens_per_sample,
        targets=tuple(TargetCheck(v.model, v.label, v.passed,
                                  tuple(MetricCheck(m.metric, m.value, m.minimum, m.maximum, m.passed)
                                        for m in v.metrics))
                      for v in outcome.verdicts))


def describe(outcome: AccuracyOutcome) -> List[str]:
    r = outcome.result
    lines = [f"{outcome.directory}:", f"  sentence splitter: {r.sentence_splitter}",
             f"  tokenizer: {r.tokenizer}", f"  {r.reference_dict()}"]
    for v in outcome.verdicts:
        lines.append(f"  {v.model}: {'PASS' if v.passed else 'FAIL'}")
        lines += ["    " + line for line in v.lines()]
    return lines


@dataclass
class Test06Request:
    results_dir: str
    model: str
    scenarios: List[str]
    eos_token_id: int = 2
    dtype: str = "int32"
    round: str = ""                 # "" = the newest round that has the model


@dataclass
class Test06Outcome:
    scenario: str
    test_dir: str
    result: Test06Result
    lines: List[str] = field(default_factory=list)


def verify_test06(req: Test06Request) -> List[Test06Outcome]:
    """Verify <results>/<model>/<Scenario>/TEST06/mlperf_log_accuracy.json for each scenario and
    write TEST06/verify_accuracy.txt and TEST06/accuracy/ beside the run's logs."""
    outcomes = []
    for scenario in req.scenarios:
        base = scenario_dir(req.results_dir, req.model, scenario, req.round)
        log = os.path.join(base, "TEST06", LOG)
        result = verify(log, scenario, eos_token_id=req.eos_token_id, dtype=req.dtype)
        test_dir = write_verification(result, log, base)
        outcomes.append(Test06Outcome(scenario, test_dir, result, result.text().splitlines()))
    return outcomes


def test06_verdict(outcome: Test06Outcome) -> Test06Verdict:
    """The typed verdict for `state` (mlperf_llm.outcomes)."""
    r = outcome.result
    return Test06Verdict(scenario=outcome.scenario, status="PASS" if r.passed else "FAIL",
                         directory=outcome.test_dir, first_token=r.first_token, eos=r.eos,
                         sample_length=r.sample_length, samples=r.samples, problems=tuple(r.problems[:5]))
