"""What the process-mlperf-accuracy and TEST06 steps do, as plain functions on typed requests.

A results folder, as the harness writes it: <results>/<model>/<Scenario>/accuracy/ (AccuracyOnly
run) and <results>/<model>/<Scenario>/TEST06/ (TEST06 run), each with its LoadGen logs.
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from typing import List, Optional

from ..benchmarks import BENCHMARKS, get_benchmark
from ..outcomes import AccuracyVerdict, MetricCheck, TargetCheck, Test06Verdict
from .evaluate import EvaluationError, load_tokenizer
from .pipelines import Pipeline, ScoredResult, pipeline_for
from .report import write_accuracy_txt, write_result_json
from .splitter import get_splitter
from .targets import Targets, Verdict, embedded_subset_targets, embedded_targets, judge, mlperf_targets
from .test06 import Test06Result, verify, write_verification

LOG = "mlperf_log_accuracy.json"
ANSWERS = "reference_answers.jsonl"   # beside an embedded data set's reference.json


def accuracy_dirs(results_dir: str, model: str = "") -> List[str]:
    """Every <results>/<model>/<Scenario>/accuracy holding an accuracy log (with v5.0's
    <family>-interactive-* model folder for Interactive runs)."""
    models = [model, get_benchmark(model).interactive_benchmark] if model else ["*"]
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
    """The run's model first, then every benchmark that scores the same data set at another accuracy
    level (llama2-70b-99's -99.9: both verdicts are shown), under v5.0's Interactive name when the
    run's model is named so (llama2-70b-interactive-99)."""
    own = get_benchmark(model)
    others = [b.name for b in BENCHMARKS.values()
              if b.family == own.family and b.dataset_tags == own.dataset_tags and b.name != own.name]
    if model != own.name:
        others = [name.replace(own.family, own.interactive_key) for name in others]
    return [model] + others


@dataclass
class AccuracyRequest:
    directories: List[str]          # each holds mlperf_log_accuracy.json; accuracy.txt goes there
    dataset: str                    # the run's data set (pipelines.py: which form the benchmark needs)
    tokenizer: str
    model: str                      # the benchmark (mlperf_llm.benchmarks)
    dtype: str = "int32"
    workers: Optional[int] = None
    sentence_splitter: str = "auto"
    embedded_reference: str = ""    # set: targets are the embedded data set's numbers
    tests: str = ""                 # a reasoning benchmark's LiveCodeBench tests file (the data step's)


@dataclass
class AccuracyOutcome:
    directory: str
    result: ScoredResult            # evaluate.AccuracyResult | summarization.SummaryScores
    verdicts: List[Verdict]
    log_hash: str

    @property
    def passed(self) -> bool:
        return self.verdicts[0].passed   # the run's own model


def process_accuracy(req: AccuracyRequest) -> List[AccuracyOutcome]:
    """Score <directory>/mlperf_log_accuracy.json of each directory with the benchmark's pipeline."""
    if not req.directories:
        raise EvaluationError("no accuracy run found: expected <results>/<model>/<Scenario>/accuracy/"
                              f"{LOG}; run the benchmark with --mode=accuracy first")
    pipeline = pipeline_for(req.model)
    splitter = get_splitter(req.sentence_splitter)
    tokenizer = load_tokenizer(req.tokenizer)
    return [score_accuracy_log(req, os.path.join(d, LOG), d, pipeline=pipeline, splitter=splitter, tokenizer=tokenizer)
            for d in req.directories]


def score_accuracy_log(req: AccuracyRequest, log: str, out_dir: str, pipeline: Optional[Pipeline] = None,
                       splitter=None, tokenizer=None, extra: Optional[dict] = None) -> AccuracyOutcome:
    """One accuracy log scored and judged against each target model's targets; accuracy.txt and
    accuracy.json written into out_dir (`extra`: more keys for accuracy.json)."""
    pipeline = pipeline or pipeline_for(req.model)
    splitter = splitter or get_splitter(req.sentence_splitter)
    more = {"tests": req.tests} if pipeline.takes_tests else {}
    result = pipeline.score_log(log, req.dataset, req.tokenizer, dtype=req.dtype, workers=req.workers,
                                splitter=splitter, tokenizer=tokenizer, **more)
    verdicts = [judge(result.checker_values(), t) for t in _targets(req, log, result.gen_num, pipeline, splitter)]
    log_hash = write_accuracy_txt(os.path.join(out_dir, "accuracy.txt"), result, log)
    write_result_json(os.path.join(out_dir, "accuracy.json"), result, verdicts, log_hash,
                      extra={"model": req.model, "dataset": os.path.abspath(req.dataset), **(extra or {})})
    return AccuracyOutcome(out_dir, result, verdicts, log_hash)


def _targets(req: AccuracyRequest, log: str, rows_scored: int, pipeline: Pipeline, splitter) -> List[Targets]:
    """Each target model's targets for a test that scored `rows_scored` rows: the checker's (a sum
    such as GEN_LEN scaled to those rows), the embedded data set's, or, for a test that scored fewer
    rows than the embedded reference covers, the reference answers of those same rows."""
    models = target_models(req.model)
    if not req.embedded_reference:
        return [mlperf_targets(m, rows_scored) for m in models]
    subset = _embedded_subset(req, log, splitter, pipeline)
    if subset is not None:
        count, metrics = subset
        return [embedded_subset_targets(m, metrics, count) for m in models]
    return [embedded_targets(m, req.embedded_reference, rows_scored) for m in models]


def _embedded_subset(req: AccuracyRequest, log: str, splitter, pipeline: Optional[Pipeline] = None):
    """(count, metrics of the embedded reference answers of the samples the log holds, scored as the
    benchmark scores a run) when the test scored fewer samples than the reference covers (test
    mode); None for the whole set. The answers are reference_answers.jsonl beside reference.json."""
    import json

    from .log import first_per_sample

    pipeline = pipeline or pipeline_for(req.model)
    with open(req.embedded_reference, encoding="utf-8") as f:
        covered = int(json.load(f).get("samples") or 0)
    idx = sorted({e.qsl_idx for e in first_per_sample(log, req.dtype)})
    if not covered or len(idx) >= covered:
        return None
    answers_file = os.path.join(os.path.dirname(req.embedded_reference), ANSWERS)
    try:
        with open(answers_file, encoding="utf-8") as f:
            answers = {a["id"]: a for a in (json.loads(line) for line in f if line.strip())}
    except OSError as e:
        raise EvaluationError(f"the test scored {len(idx)} of {covered} samples, and the reference answers "
                              f"to judge that subset by are missing ({answers_file}: {e.strerror}); "
                              "fix: rerun with --accuracy_sample_count=all") from None
    ids, references = pipeline.reference_rows(req.dataset, idx)
    missing = [i for i in ids if i not in answers]
    if missing:
        raise EvaluationError(f"{answers_file} has no reference answer for {missing[:3]}: the data set "
                              f"{req.dataset} is not the embedded one it was made for")
    return len(idx), pipeline.answer_metrics(references, [answers[i] for i in ids], splitter)


def accuracy_verdict(outcome: AccuracyOutcome) -> AccuracyVerdict:
    """The typed verdict for `state` (mlperf_llm.outcomes): the numbers the benchmark is judged by
    (its checker metrics), each target set's checks."""
    values = outcome.result.checker_values()
    return AccuracyVerdict(
        scenario=os.path.basename(os.path.dirname(os.path.normpath(outcome.directory))),
        directory=outcome.directory, samples=outcome.result.gen_num, rouge1=values.get("ROUGE1"),
        rouge2=values.get("ROUGE2"), rougeL=values.get("ROUGEL"), rougeLsum=values.get("ROUGELSUM"),
        exact_match=values.get("exact_match"),
        tokens_per_sample=values.get("TOKENS_PER_SAMPLE"), gen_len=values.get("GEN_LEN"),
        targets=tuple(TargetCheck(v.model, v.label, v.passed,
                                  tuple(MetricCheck(m.metric, m.value, m.minimum, m.maximum, m.passed)
                                        for m in v.metrics), note=v.note)
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
