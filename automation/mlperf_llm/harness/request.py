"""A harness request: the tests to run (scenarios, modes, targets, sizes, the round's LoadGen) and
the checks made before any runs (`validate`)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from . import testsizes
from .rounds import loadgen_model_and_dirs
from .sweep import SweepError, parse_loads
from .testconfig import BACKENDS, MODES, TestSettings
from .userconf import INTERACTIVE_FRACTION, SERVER_FRACTION
from ..benchmarks import Benchmark, get_benchmark
from ..rounds import Round, round_for

# the scenarios whose target is a share of the Offline rate (and whose latency bounds a search meets)
FRACTIONS = {"Server": SERVER_FRACTION, "Interactive": INTERACTIVE_FRACTION}


class HarnessInputError(ValueError):
    pass

@dataclass(frozen=True, kw_only=True)
class HarnessRequest(TestSettings):
    """The tests to run: the settings each test shares (TestSettings), and the request's own."""
    results_dir: str
    scenarios: tuple[str, ...] = ("Offline",)
    modes: tuple[str, ...] = ("performance", "accuracy")
    offline_target_qps: float | None = None
    server_target_qps: float | None = None
    interactive_target_qps: float | None = None
    singlestream_target_latency: float | None = None   # ms: one query's expected latency (user.conf target_latency)
    test_query_count: int | None = None
    max_test_duration_s: float | None = None
    accuracy_sample_count: int | None = None   # 0 = the whole data set; None = test_query_count in test mode
    find_performance: bool = False
    find_target: tuple[str, ...] = ()     # scenarios whose target find_performance searches (search.py);
                                          # () = the request's Server / Interactive
    search_budget_s: float = 600.0        # the whole find-performance run's time, the searches' probes in it
    sweep: str = ""                       # "auto" or "QPS,QPS,...": a load sweep of Server tests (sweep.py)
    size_to_host: bool = False            # test mode: each test's query count from the host's rate (sizing.py)
    test_sizes: dict = field(default_factory=dict)   # test mode: "Scenario/kind" -> its size, as given (testsizes.py)
    performance_loads: dict = field(default_factory=dict)   # scenario -> its performance test's load, given
                                                            # (hostlimit.LOADS_ENV: a replay's, the recorded run's)
    python: str = sys.executable
    loadgen_path: str = ""          # the round's LoadGen (get-mlperf-inference-loadgen site/), first on PYTHONPATH
    loadgen_version: str = ""       # its version, where known (user.conf works around the 4.1 wheels' padding)
    api_key: str = field(default="", repr=False)   # the servers' key (--api_key): a secret, in no test's config

    def validate(self) -> None:
        for s in self.scenarios:
            loadgen_model_and_dirs(self.model, s, self.rnd)
        bad = [m for m in self.modes if m not in MODES]
        if bad or not self.modes:
            raise HarnessInputError(f"mode {bad or '(none)'}: choose from {', '.join(MODES)}")
        if "TEST06" in self.modes and not os.path.isfile(self.audit_conf):
            raise HarnessInputError(f"TEST06 needs its audit.config: audit_conf={self.audit_conf!r} is not a file; "
                                    "fix: pass the path of compliance/TEST06/audit.config from the inference source")
        for test in ("TEST07", "TEST09"):
            if test in self.modes and not os.path.isfile(self.audit_config(test)):
                raise HarnessInputError(f"{test} needs its audit.config: {self.audit_config(test) or 'no audit_dir'} is "
                                        f"not a file; fix: run it through its step (run,mlperf,compliance,test07-test09), "
                                        f"which writes <audit_dir>/{test}/audit.config from the round's source")
        unknown = [s for s in self.find_target if s not in FRACTIONS]
        if unknown:
            raise HarnessInputError(f"find_target={','.join(unknown)}: the target search is for "
                                    f"{' and '.join(s.lower() for s in FRACTIONS)} (their latency bounds)")
        if self.sweep:
            try:
                parse_loads(self.sweep)
            except SweepError as e:
                raise HarnessInputError(str(e)) from None
        if not self.search_budget_s > 0:
            raise HarnessInputError(f"search_budget={self.search_budget_s / 60:g} minutes: give a positive number")
        if self.backend not in BACKENDS:
            raise HarnessInputError(f"backend {self.backend!r}: choose {' or '.join(BACKENDS)}")
        if self.backend == "vllm" and not self.api_servers:
            raise HarnessInputError("api_server is empty; fix: pass --api_server=http://HOST:PORT[,URL2...]")
        if self.backend == "transformers" and not self.model_path:
            raise HarnessInputError("the transformers backend needs --model_path=<HF model folder>")
        if self.num_workers < 1:
            raise HarnessInputError(f"num_workers={self.num_workers}: must be at least 1")
        if self.accuracy_sample_count and self.execution_mode == "valid":
            raise HarnessInputError(f"accuracy_sample_count={self.accuracy_sample_count} with execution_mode=valid: "
                                    "a valid run's accuracy test covers the whole data set (the checker "
                                    "requires it); fix: drop --accuracy_sample_count, or use --execution_mode=test")
        if ("SingleStream" in self.scenarios and self.execution_mode == "valid" and "performance" in self.modes
                and self.singlestream_target_latency is None):
            raise HarnessInputError(
                "SingleStream in valid mode needs its target latency: LoadGen plans at least 2 x min_duration / "
                "target_latency queries, a multiple of the performance sample count under equal issue, and "
                "mlperf.conf's 10 ms plans 125,000 on a 5000-sample set (days at a second a query); fix: pass "
                "--singlestream_target_latency=MS (CM_MLPERF_LOADGEN_SINGLESTREAM_TARGET_LATENCY), one query's "
                "expected latency, e.g. the '90.00 percentile latency (ns)' of a test run's summary / 1e6")
        if self.test_sizes and self.execution_mode == "valid":
            raise HarnessInputError(f"{testsizes.INPUT}={testsizes.format_sizes(self.test_sizes)} with "
                                    "execution_mode=valid: a valid run's sizes are the round's; fix: drop "
                                    f"{testsizes.INPUT}, or use --execution_mode=test")
        if self.accuracy_sample_count is not None and self.accuracy_sample_count < 0:
            raise HarnessInputError(f"accuracy_sample_count={self.accuracy_sample_count}: must be a count of "
                                    "samples, or 0 (or 'all') for the whole data set")

    @property
    def rnd(self) -> Round:
        return round_for(self.round, self.model)

    @property
    def sized_run(self) -> bool:
        """A test run whose query counts come from the host's measured rate (sizing.py)."""
        return self.size_to_host and self.execution_mode == "test" and not self.test_sizes

    @property
    def bench(self) -> Benchmark:
        return get_benchmark(self.model)

    def accuracy_rows(self, rows: int) -> int:
        """Samples an accuracy test covers: the whole data set in valid mode; in test mode the
        first test_query_count (as CM's test runs do) unless accuracy_sample_count says otherwise."""
        n = self.accuracy_sample_count
        if n is None:
            n = self.test_query_count if self.execution_mode == "test" else 0
        return min(rows, n) if n else rows

    def target_for(self, scenario: str) -> float | None:
        """The scenario's target: queries/s, SingleStream's a latency in ms (TARGET_INPUTS)."""
        return {"Offline": self.offline_target_qps, "Server": self.server_target_qps,
                "Interactive": self.interactive_target_qps or self.server_target_qps,
                "SingleStream": self.singlestream_target_latency}[scenario]
