"""What the benchmark's steps found, as small typed values they hand each other through CM `state`.

Each record is immutable and turns into plain JSON and back (`to_json()`, `from_json()`): state is
recorded in cache entries and printed by `cm run script ... -j`, so it holds nothing else.

| state key           | written by                                | value                        |
|---------------------|-------------------------------------------|------------------------------|
| `mlperf_harness`    | app-mlperf-inference                      | [TestOutcome.to_json(), ...] |
| `mlperf_accuracy`   | process-mlperf-accuracy                   | [AccuracyVerdict..., ...]    |
| `mlperf_test06`     | run-mlperf-compliance-test06              | [Test06Verdict..., ...]      |
| `mlperf_compliance` | run-mlperf-compliance-test07-test09       | [ComplianceVerdict..., ...]  |
| `mlperf_submission` | generate-mlperf-inference-submission      | SubmissionOutcome...         |
| `mlperf_checker`    | run-mlperf-inference-submission-checker   | CheckerVerdict...            |

This module reads no file and imports no area: each area builds its records from what it
measured (`harness.outcome`, `accuracy.process`, `submission.checker`, ...), and a caller (the
closing summary, `mlperf_llm.runapp`) reads them back with `from_state`.
"""
from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from typing import ClassVar, Optional, Tuple

HARNESS, ACCURACY, TEST06, COMPLIANCE, SUBMISSION, CHECKER = (
    "mlperf_harness", "mlperf_accuracy", "mlperf_test06", "mlperf_compliance", "mlperf_submission", "mlperf_checker")


class OutcomeError(ValueError):
    """A state value that is not the record it should be (names the record and the key)."""


class _Record:
    """to_json/from_json for the frozen dataclasses below: tuples become lists, nested records
    dicts; `_nested` names the fields that hold records (one, or a tuple of them)."""

    _nested: ClassVar[dict] = {}

    def to_json(self) -> dict:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_json(cls, data):
        if not isinstance(data, dict):
            raise OutcomeError(f"{cls.__name__}: expected a JSON object, got {type(data).__name__}")
        values = {}
        for f in fields(cls):
            if f.name not in data:
                if f.default is MISSING and f.default_factory is MISSING:
                    raise OutcomeError(f"{cls.__name__}: the key {f.name!r} is missing from {sorted(data)}")
                continue
            v = data[f.name]
            kind = cls._nested.get(f.name)
            if kind is not None and isinstance(v, list):
                v = tuple(kind.from_json(x) for x in v)
            elif kind is not None and v is not None:
                v = kind.from_json(v)
            elif isinstance(v, list):
                v = tuple(v)
            values[f.name] = v
        return cls(**values)


def _plain(v):
    if isinstance(v, _Record):
        return v.to_json()
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    return v


# -- the harness: one LoadGen test ---------------------------------------------------------------
@dataclass(frozen=True)
class TestOutcome(_Record):
    """One LoadGen test as the harness ran it: LoadGen's verdict, and why when it is not VALID."""
    __test__: ClassVar[bool] = False     # not a pytest class, whatever its name

    model: str                           # llama2-70b-99
    scenario: str                        # Offline | Server | Interactive | SingleStream
    mode: str                            # performance | accuracy | TEST06
    verdict: str                         # VALID | INVALID | FAILED (the harness or a server failed)
    directory: str                       # the test's folder (LoadGen's logs, harness.log)
    reasons: Tuple[str, ...] = ()        # why, when not VALID: each names the condition and its numbers
    metric: Optional[float] = None       # the reported metric (performance tests; submission.spec.RESULT_KEYS)
    unit: str = ""                       # its unit: tokens/s | ms (p90 latency) (SingleStream)
    samples_per_second: Optional[float] = None
    queries: Optional[int] = None        # queries LoadGen issued
    ttft_p99_ms: Optional[float] = None  # p99 time to first token
    tpot_p99_ms: Optional[float] = None  # p99 time per output token
    ttft_limit_ms: Optional[float] = None    # the bounds LoadGen judged them by (Server, Interactive)
    tpot_limit_ms: Optional[float] = None
    target_qps: Optional[float] = None   # the target LoadGen ran at
    target_latency_ms: Optional[float] = None   # SingleStream's: one query's expected latency
    target_source: str = ""              # where it came from: given, derived from ..., LoadGen default
    host_limit: str = ""                 # a latency bound this host cannot meet at any load (harness.hostlimit)

    @property
    def valid(self) -> bool:
        return self.verdict == "VALID"


# -- accuracy: ROUGE and the length metric against the targets ------------------------------------
@dataclass(frozen=True)
class MetricCheck(_Record):
    metric: str                          # ROUGE1 | ROUGE2 | ROUGEL | ROUGELSUM | TOKENS_PER_SAMPLE | GEN_LEN
    value: float
    minimum: float
    maximum: Optional[float]
    passed: bool


@dataclass(frozen=True)
class TargetCheck(_Record):
    """The values against one model's targets (llama2-70b-99: x0.99; llama2-70b-99.9: x0.999)."""
    model: str
    label: str                           # where the reference numbers come from
    passed: bool
    metrics: Tuple[MetricCheck, ...]
    note: str = ""                       # how the length reference was scaled to the rows scored ("": not)
    _nested: ClassVar[dict] = {"metrics": MetricCheck}


@dataclass(frozen=True)
class AccuracyVerdict(_Record):
    """One accuracy test, scored: the run's own model's targets first, then its sibling's. The
    values are the benchmark's checker metrics: llama2-70b's ROUGE-1/2/L and tokens per sample;
    llama3.1-8b's ROUGE-1/2/L/Lsum and GEN_LEN; gpt-oss-120b's exact_match (None where the
    benchmark has no such metric)."""
    scenario: str
    directory: str                       # .../<Scenario>/accuracy (accuracy.txt, accuracy.json)
    samples: int                         # samples scored
    targets: Tuple[TargetCheck, ...]
    rouge1: Optional[float] = None
    rouge2: Optional[float] = None
    rougeL: Optional[float] = None
    rougeLsum: Optional[float] = None    # ROUGELSUM (llama3.1-8b)
    exact_match: Optional[float] = None  # gpt-oss-120b: the repeat-weighted share of right answers, %
    tokens_per_sample: Optional[float] = None   # TOKENS_PER_SAMPLE (llama2-70b)
    gen_len: Optional[int] = None        # GEN_LEN (llama3.1-8b): characters of all predictions
    _nested: ClassVar[dict] = {"targets": TargetCheck}

    @property
    def passed(self) -> bool:
        return bool(self.targets) and self.targets[0].passed


# -- TEST06 --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Test06Verdict(_Record):
    """TEST06 of one scenario: PASS | FAIL, or NOT VERIFIED with the reason."""
    __test__: ClassVar[bool] = False

    scenario: str
    status: str                          # PASS | FAIL | NOT VERIFIED
    directory: str = ""                  # .../<Scenario>/TEST06 (verify_accuracy.txt)
    first_token: Optional[bool] = None   # None: not checked (Offline)
    eos: Optional[bool] = None
    sample_length: Optional[bool] = None
    samples: int = 0
    problems: Tuple[str, ...] = ()       # the first failing entries
    reason: str = ""                     # NOT VERIFIED: why


# -- TEST07, TEST09 (gpt-oss-120b) -----------------------------------------------------------------
@dataclass(frozen=True)
class ComplianceVerdict(_Record):
    """A compliance test verified by the round's own run_verification.py: PASS | FAIL."""
    test: str                            # TEST07 | TEST09
    scenario: str
    status: str                          # PASS | FAIL
    directory: str                       # .../<Scenario>/<TEST> (its verify file)
    detail: Tuple[str, ...] = ()         # the verification's last lines (the score and the bound)


# -- the submission and the checker --------------------------------------------------------------
@dataclass(frozen=True)
class SubmittedResult(_Record):
    model: str
    scenario: str
    value: float
    unit: str
    valid: bool


@dataclass(frozen=True)
class SubmissionOutcome(_Record):
    """Where the submission went: the tree, its summary page, the tarball."""
    directory: str
    summary_html: str
    submitter: str
    round: str
    tarball: str = ""
    tarball_sha1: str = ""
    warnings: Tuple[str, ...] = ()
    results: Tuple[SubmittedResult, ...] = ()
    _nested: ClassVar[dict] = {"results": SubmittedResult}


@dataclass(frozen=True)
class CheckerVerdict(_Record):
    """The official submission checker on the tree: PASS, PASS in test mode (only the checks a
    full-length run passes failed), FAIL on this host's latency limit alone (the harness found a
    bound out of reach at any load, and nothing else failed), FAIL, or NOT RUN with the reason."""
    round: str                           # the --version the checker ran with (v5.1)
    verdict: str                         # PASS | PASS-TEST-MODE | FAIL-HOST-LIMIT | FAIL | NOT RUN
    mode: str = ""                       # test | valid
    error_count: int = 0
    first_errors: Tuple[str, ...] = ()   # at most FIRST_ERRORS
    full_length_checks: Tuple[str, ...] = ()
    warnings: Tuple[str, ...] = ()
    host_limits: Tuple[str, ...] = ()    # FAIL-HOST-LIMIT: each bound out of this host's reach, said
    log: str = ""                        # the checker's full output
    reason: str = ""                     # NOT RUN: why
    FIRST_ERRORS: ClassVar[int] = 5

    @property
    def passed(self) -> bool:
        return self.verdict in ("PASS", "PASS-TEST-MODE")


_LISTS = {HARNESS: TestOutcome, ACCURACY: AccuracyVerdict, TEST06: Test06Verdict, COMPLIANCE: ComplianceVerdict}
_SINGLE = {SUBMISSION: SubmissionOutcome, CHECKER: CheckerVerdict}


def to_state(records) -> object:
    """The plain-JSON form of one record or a list of them."""
    return _plain(records)


def from_state(state: dict, key: str):
    """The records a step left under `key`: a list for the per-test keys, one record (or None) for
    the submission and the checker; [] / None when the step did not run."""
    value = state.get(key)
    if key in _LISTS:
        if value is None:
            return []
        if not isinstance(value, list):
            raise OutcomeError(f"state[{key!r}]: expected a list of {_LISTS[key].__name__}, "
                               f"got {type(value).__name__}")
        return [_LISTS[key].from_json(v) for v in value]
    if key in _SINGLE:
        return None if value is None else _SINGLE[key].from_json(value)
    raise OutcomeError(f"state key {key!r} is not a step result; use one of "
                       f"{', '.join(list(_LISTS) + list(_SINGLE))}")
