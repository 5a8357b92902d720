"""What the run-mlperf-compliance-test07-test09 step does: before the LoadGen runs, their audit.config
files (compliance_audit.py), each test sized in a test run; after them, each scenario's TEST07 and
TEST09 verified by the round's own scripts (compliance_verify.py), TEST07's accuracy printed by our
scorer (`python -m mlperf_llm.accuracy.reasoning_eval`) on the compliance set.

A test run's query counts: `--compliance_query_count=N`, else sized to this host from the run's
measurement (harness/sizing.py), else the run's test query count; never more than the test's set
has rows (the audit.config issues each sample once).
"""
from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from cmcontract.yesno import is_yes

from ..outcomes import ComplianceVerdict
from ..sysinfo.pyenv import AUTOMATION_DIR, HARNESS_PYTHON_ENV, with_path
from .compliance_audit import TESTS, AuditError, write_audits
from .compliance_verify import ComplianceError, verify_test07, verify_test09

DEFAULT_QUERIES = 10


class ComplianceRunError(ValueError):
    """What stops TEST07 or TEST09: names the input, the reason and the fix."""


@dataclass(frozen=True)
class ComplianceRequest:
    results_dir: str
    model: str
    round: str
    scenarios: tuple[str, ...]
    inference_src: str
    execution_mode: str = "test"
    query_count: int | None = None          # --compliance_query_count
    sized: bool = False                     # a test run sized to the host
    test_query_count: int | None = None
    targets: tuple[tuple[str, float], ...] = ()
    rows: tuple[tuple[str, int], ...] = ()  # test -> rows of its set (TEST07: the compliance set; TEST09: performance)
    compliance_dataset: str = ""
    tokenizer: str = ""
    python: str = sys.executable

    @classmethod
    def from_env(cls, env: dict) -> "ComplianceRequest":
        from ..rounds import RoundError, expand_scenarios, round_for
        model = env.get("CM_MLPERF_MODEL", "")
        try:
            rnd = round_for(env.get("CM_MLPERF_INFERENCE_VERSION", ""), model)
            scenarios = tuple(expand_scenarios(env.get("CM_MLPERF_LOADGEN_SCENARIO", "Offline"), rnd, model))
        except RoundError as e:
            raise ComplianceRunError(str(e)) from None
        given = env.get("CM_MLPERF_COMPLIANCE_QUERY_COUNT", "")
        if given and not (given.isdigit() and int(given) > 0):
            raise ComplianceRunError(f"--compliance_query_count={given!r}: give a whole number of queries, at least 1")
        tqc = env.get("CM_MLPERF_LOADGEN_TEST_QUERY_COUNT", "")

        def rows(key: str) -> int:
            value = env.get(key, "")
            return int(value) if value.isdigit() else 0
        return cls(
            results_dir=env.get("CM_MLPERF_RESULTS_DIR", ""), model=model, round=rnd.name, scenarios=scenarios,
            inference_src=env.get("CM_MLPERF_INFERENCE_SOURCE", ""),
            execution_mode=env.get("CM_MLPERF_EXECUTION_MODE", "test"), query_count=int(given) if given else None,
            sized=is_yes(env.get("CM_MLPERF_SIZE_TO_HOST")), test_query_count=int(tqc) if tqc.isdigit() else None,
            targets=tuple((s, float(env[f"CM_MLPERF_LOADGEN_{s.upper()}_TARGET_QPS"])) for s in scenarios
                          if env.get(f"CM_MLPERF_LOADGEN_{s.upper()}_TARGET_QPS")),
            rows=(("TEST07", rows("CM_DATASET_COMPLIANCE_ROWS")), ("TEST09", rows("CM_DATASET_PERFORMANCE_ROWS"))),
            compliance_dataset=env.get("CM_DATASET_COMPLIANCE_PATH", ""),
            tokenizer=env.get("CM_ML_MODEL_PATH", ""),
            python=env.get(HARNESS_PYTHON_ENV) or env.get("CM_PYTHON_BIN_WITH_PATH") or sys.executable)


def counts(req: ComplianceRequest) -> tuple[dict | None, str]:
    """Each test's per-scenario query count in a test run (None: a valid run, the official counts), and how."""
    if req.execution_mode != "test":
        return None, "the round's audit.config as it is (a valid run)"
    rows = dict(req.rows)
    if req.query_count:
        return ({t: {s: _cap(req.query_count, rows.get(t)) for s in req.scenarios} for t in TESTS},
                f"{req.query_count} queries a test (--compliance_query_count), at most the set's rows")
    if req.sized:
        from ..harness import sizing
        m = sizing.Measured.load(req.results_dir)
        if m is not None:
            targets = dict(req.targets)
            return ({t: {s: sizing.size(s, t, targets.get(s), rows.get(t) or DEFAULT_QUERIES, m).queries
                         for s in req.scenarios} for t in TESTS}, "sized to this host, at most the set's rows")
    n = req.test_query_count or DEFAULT_QUERIES
    return ({t: {s: _cap(n, rows.get(t)) for s in req.scenarios} for t in TESTS},
            f"{n} queries a test (the run's test query count), at most the set's rows")


def _cap(n: int, rows: int | None) -> int:
    return min(n, rows) if rows else n


def prepare(env: dict, work_dir: str) -> tuple[str, list[str]]:
    """The audit folder for the runs (`<work_dir>/audit`), and what to print."""
    req = ComplianceRequest.from_env(env)
    if not req.inference_src:
        raise ComplianceRunError("TEST07 and TEST09 need the round's compliance folder: no inference source "
                                 "(CM_MLPERF_INFERENCE_SOURCE); fix: --inference_src=DIR, a checkout of "
                                 "mlcommons/inference that has compliance/TEST07 and TEST09 (master b66003e)")
    chosen, how = counts(req)
    try:
        audits = write_audits(req.inference_src, req.model, Path(work_dir) / "audit", chosen)
    except AuditError as e:
        raise ComplianceRunError(str(e)) from None
    lines = [f"{a.test}: {a.source}" + (f", shortened: {', '.join(f'{s} {n}' for s, n in a.counts.items())} "
                                        f"queries ({how})" if a.counts else f" ({how})") for a in audits]
    return str(Path(work_dir) / "audit"), lines


def verify_all(env: dict) -> list[ComplianceVerdict]:
    """Each scenario's TEST07 and TEST09, verified by the round's run_verification.py."""
    from .process import scenario_dir
    req = ComplianceRequest.from_env(env)
    if not req.results_dir:
        raise ComplianceRunError("no results folder: pass --results_dir (where <model>/<Scenario>/TEST07/ is written)")
    if not req.compliance_dataset or not req.tokenizer:
        raise ComplianceRunError("TEST07's accuracy needs the compliance set and the tokenizer of the run "
                                 "(CM_DATASET_COMPLIANCE_PATH, CM_ML_MODEL_PATH): let the data and model steps run")
    command = " ".join(shlex.quote(a) for a in (
        req.python, "-m", "mlperf_llm.accuracy.reasoning_eval", "--dataset", req.compliance_dataset,
        "--tokenizer", req.tokenizer)) + " --log {accuracy_log}"
    env_path = with_path(AUTOMATION_DIR)       # the scorer importable in the verification's process
    out = []
    for scenario in req.scenarios:
        base = Path(scenario_dir(req.results_dir, req.model, scenario, req.round))
        for test in TESTS:
            if not (base / test / "mlperf_log_accuracy.json").is_file():
                raise ComplianceRunError(f"{test} {scenario}: {base / test / 'mlperf_log_accuracy.json'} is missing: "
                                         f"its LoadGen run did not finish; run the step again without --verify_only")
            try:
                if test == "TEST07":
                    v = verify_test07(req.inference_src, req.model, base / test, base, command, req.python,
                                      env=env_path)
                else:
                    v = verify_test09(req.inference_src, req.model, base / test, base, req.python)
            except ComplianceError as e:
                raise ComplianceRunError(str(e)) from None
            out.append(ComplianceVerdict(test, scenario, "PASS" if v.passed else "FAIL", str(v.verify_file.parent),
                                         tuple(line for line in v.output_tail.splitlines() if line.strip())[-4:]))
    return out
