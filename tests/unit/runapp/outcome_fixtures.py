"""The typed step results of a run, built by the areas' own builders from real recorded outputs:
LoadGen 5.1.2 logs of a toy SUT (tests/fixtures/submission/results-v5.1, see make_results.py there),
its accuracy.txt and TEST06 accuracy logs, and the official v5.1 checker's output on that tree
(tests/fixtures/submission/checker)."""
import ast
import json
import os
import shutil
from pathlib import Path

from mlperf_llm import outcomes
from mlperf_llm.accuracy.evaluate import AccuracyResult
from mlperf_llm.accuracy.process import (AccuracyOutcome, Test06Request, accuracy_verdict, test06_verdict,
                                         verify_test06)
from mlperf_llm.accuracy.targets import judge, mlperf_targets
from mlperf_llm.harness.cmenv import outcome_records
from mlperf_llm.harness.driver import HarnessRequest, RunOutcome
from mlperf_llm.harness.results import HarnessStatus, read_summary, verdict
from mlperf_llm.submission.checker import CheckerReport, checker_verdict, classify

FIX = Path(__file__).resolve().parents[2] / "fixtures"
RUN = FIX / "submission" / "results-v5.1" / "llama2-70b-99"
MODEL = "llama2-70b-99"
CHECKER_TREE = "closed/cm4mlperf/results/cpu_2c-reference-cpu-vllm/llama2-70b-99"


def harness_records(results_dir: Path, scenarios=("Offline", "Server")) -> list:
    """What app-mlperf-inference's hook publishes, for the recorded tests of `scenarios`."""
    (results_dir / "targets.json").write_text(json.dumps({
        "Offline": {"target_qps": 40, "source": "given"},
        "Server": {"target_qps": 8, "source": "derived from the Offline performance test of this run (11.4 samples/s)"}}))
    runs = []
    for scenario in scenarios:
        for mode, folder in (("performance", RUN / scenario / "performance" / "run_1"),
                             ("accuracy", RUN / scenario / "accuracy")):
            status = HarnessStatus(True, scenario, mode, "5.1", "5.1.2", completed=16)
            summary = read_summary(folder)
            v, reasons = verdict(status, summary, 1780908523862526354, mode)
            runs.append(RunOutcome(scenario, mode, v, reasons, str(folder), 0, summary.to_dict(), 5.0))
    req = HarnessRequest(results_dir=str(results_dir), dataset_path="unused.pkl", model=MODEL)
    return outcome_records(req, runs)


def recorded_accuracy(scenario: str) -> AccuracyResult:
    text = (RUN / scenario / "accuracy" / "accuracy.txt").read_text()
    d = ast.literal_eval(next(line for line in text.splitlines() if line.startswith("{")))
    return AccuracyResult(**d)


def accuracy_records(scenarios=("Offline", "Server")) -> list:
    """What process-mlperf-accuracy's hook publishes: the recorded scores against the closed targets."""
    out = []
    for scenario in scenarios:
        result = recorded_accuracy(scenario)
        verdicts = [judge(result.checker_values(), mlperf_targets(m)) for m in (MODEL, "llama2-70b-99.9")]
        out.append(accuracy_verdict(AccuracyOutcome(str(RUN / scenario / "accuracy"), result, verdicts, "h")))
    return out


def verified_test06_records(tmp_path: Path, scenarios=("Offline", "Server")) -> list:
    """What run-mlperf-compliance-test06 publishes: the recorded TEST06 logs verified again."""
    for scenario in scenarios:
        dest = tmp_path / MODEL / scenario / "TEST06"
        dest.mkdir(parents=True)
        shutil.copy(RUN / scenario / "TEST06" / "accuracy" / "mlperf_log_accuracy.json", dest)
    outs = verify_test06(Test06Request(str(tmp_path), MODEL, list(scenarios), eos_token_id=2))
    return [test06_verdict(o) for o in outs]


def checker_record(tmp_path: Path, log_name: str = "v5.1-closed-test-mode.log", rc: int = 1, extra: str = ""):
    """The official v5.1 checker's recorded output on the tree of these logs, sorted and typed."""
    for scenario in ("Offline", "Server"):
        dst = tmp_path / CHECKER_TREE / scenario / "performance" / "run_1"
        dst.mkdir(parents=True)
        shutil.copy(RUN / scenario / "performance" / "run_1" / "mlperf_log_detail.txt", dst)
    output = (FIX / "submission" / "checker" / log_name).read_text() + extra
    cmd = ["python", "submission_checker.py", "--input", str(tmp_path), "--version", "v5.1"]
    report = CheckerReport(cmd, rc, "test", output, classify(output, str(tmp_path), "test"))
    return checker_verdict(report, os.path.join(str(tmp_path), "submission_checker.log"))


def submission_record(tmp_path: Path):
    return outcomes.SubmissionOutcome(
        directory=str(tmp_path / "mlperf_submission"), summary_html=str(tmp_path / "mlperf_submission" / "summary.html"),
        submitter="YourOrg", round="v5.1", tarball=str(tmp_path / "mlperf_submission.tar.gz"), tarball_sha1="ab12",
        results=(outcomes.SubmittedResult(MODEL, "Offline", 128520.0, "Tokens/s", False),))


def full_state(tmp_path: Path) -> dict:
    """The state run-mlperf-inference-app's summary reads after a _full run."""
    (tmp_path / "results").mkdir()
    (tmp_path / "test06").mkdir()
    (tmp_path / "checker").mkdir()
    return {outcomes.HARNESS: outcomes.to_state(harness_records(tmp_path / "results")),
            outcomes.ACCURACY: outcomes.to_state(accuracy_records()),
            outcomes.TEST06: outcomes.to_state(verified_test06_records(tmp_path / "test06")),
            outcomes.SUBMISSION: outcomes.to_state(submission_record(tmp_path)),
            outcomes.CHECKER: outcomes.to_state(checker_record(tmp_path / "checker"))}
