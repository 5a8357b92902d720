"""user.conf for one LoadGen test, and the find-performance heuristic.

`test` execution mode makes short runs (few queries, no minimum duration); `valid` leaves
the MLPerf minimums of the round's mlperf.conf in force and only sets the targets.
"""

from __future__ import annotations

from dataclasses import dataclass

EXECUTION_MODES = ("test", "valid")
FULL_SAMPLE_COUNT = 24576


class UserConfError(ValueError):
    pass


@dataclass(frozen=True)
class UserConfSpec:
    lg_model: str                       # LoadGen config model name (the benchmark table's loadgen_key)
    lg_scenario: str                    # Offline | Server | SingleStream
    execution_mode: str = "test"
    target_qps: float | None = None     # offline_target_qps or server_target_qps
    test_query_count: int | None = None
    max_test_duration_s: float | None = None
    dataset_count: int = FULL_SAMPLE_COUNT
    loadgen_version: str = ""           # the LoadGen that reads it ("" when not known)
    target_latency_ms: float | None = None  # SingleStream's target_latency: one query's expected latency
    full_sample_count: int = FULL_SAMPLE_COUNT  # the benchmark's performance sample count (mlperf.conf's)
    # an accuracy test of fewer rows than mlperf.conf's accuracy_sample_count_override (gpt-oss-120b's
    # 4,395): its rows (a LoadGen that does not cap the override at the QSL's size would ask for more)
    accuracy_sample_count: int | None = None

    def __post_init__(self) -> None:
        if self.execution_mode not in EXECUTION_MODES:
            raise UserConfError(f"execution_mode={self.execution_mode!r}: choose one of {', '.join(EXECUTION_MODES)}")
        if self.target_qps is not None and not self.target_qps > 0:
            raise UserConfError(f"target qps {self.target_qps}: must be a positive number of queries per second")
        if self.target_latency_ms is not None and not self.target_latency_ms > 0:
            raise UserConfError(f"target latency {self.target_latency_ms}: must be a positive number of milliseconds")
        if self.test_query_count is not None and self.test_query_count < 1:
            raise UserConfError(f"test_query_count={self.test_query_count}: must be at least 1")
        if self.max_test_duration_s is not None and not self.max_test_duration_s > 0:
            raise UserConfError(f"max_test_duration={self.max_test_duration_s}: must be a positive number of seconds")

    def lines(self) -> list[str]:
        p = f"{self.lg_model}.{self.lg_scenario}."
        out = [f"# user.conf for {self.lg_model} {self.lg_scenario}, execution_mode={self.execution_mode}"]
        if self.target_qps is not None:
            out.append(f"{p}target_qps = {self.target_qps:g}")
        if self.target_latency_ms is not None:
            out.append(f"{p}target_latency = {self.target_latency_ms:g}")
        queries = test_queries(self.test_query_count, self.dataset_count)
        samples = self.performance_sample_count()
        if samples < self.full_sample_count:
            out.append(f"{self.lg_model}.*.performance_sample_count_override = {samples}")
        if self.accuracy_sample_count is not None:
            out.append(f"{self.lg_model}.*.accuracy_sample_count_override = {self.accuracy_sample_count}")
        if self.execution_mode == "test":
            out.append(f"{p}min_query_count = {queries}")
            out.append(f"{p}min_duration = 0")
            # the LLMs' mlperf.conf turns on equal issue (sample_concatenate_permutation = 1), which
            # pads the query count to a multiple of the performance sample count: 10 test queries on
            # llama2-70b's full set would become 24,576 (SingleStream pads too: at least 2 x min_duration
            # / target_latency, rounded up). A test run issues what was asked; valid runs keep
            # equal issue. A LoadGen that pads whatever this says gets as many samples as queries.
            out.append(f"{p}sample_concatenate_permutation = 0")
        if self.max_test_duration_s is not None:
            out.append(f"{p}max_duration = {int(self.max_test_duration_s * 1000)}")
        return out

    def performance_sample_count(self) -> int:
        """The samples a performance test loads: the data set's rows (at most the full set), except
        in a test run on a LoadGen that pads equal issue whatever user.conf says, where it is the
        test's query count, so that the padding adds nothing."""
        rows = min(self.dataset_count, self.full_sample_count)
        if self.execution_mode == "test" and pads_whatever_user_conf_says(self.loadgen_version):
            return min(rows, test_queries(self.test_query_count, self.dataset_count))
        return rows

    def text(self) -> str:
        return "\n".join(self.lines()) + "\n"


# Fractions of the measured Offline rate used as Server / Interactive targets: the latency
# bounds (TTFT 2 s / 450 ms) leave less room than throughput alone.
SERVER_FRACTION = 0.7
INTERACTIVE_FRACTION = 0.35

# each scenario's target: the harness request's field and the run's input (--server_target_qps=...);
# SingleStream's is a latency in ms (user.conf's target_latency), the others' a rate in queries/s
TARGET_INPUTS = {"Offline": "offline_target_qps", "Server": "server_target_qps",
                 "Interactive": "interactive_target_qps", "SingleStream": "singlestream_target_latency"}


def pads_whatever_user_conf_says(loadgen_version: str) -> bool:
    """True for the LoadGen 4.1.x wheels: they log `requested_sample_concatenate_permutation: true`
    whatever user.conf says and pad each performance test to a multiple of the performance sample
    count (measured 2026-11-26 on 4.1.12 and 4.1.30: 4 queries on 20 loaded samples issued 20;
    5.0.20 and 6.0.17 issue 4). A LoadGen built from the v4.1 source (version "4.1") is not one of them."""
    parts = loadgen_version.split(".")
    return len(parts) == 3 and parts[:2] == ["4", "1"] and parts[2].isdigit()


def test_queries(test_query_count: int | None, dataset_count: int) -> int:
    """The queries a test-mode performance test issues (its min_query_count)."""
    return test_query_count or min(10, dataset_count)


def round_down(x: float) -> float:
    """Three significant digits, rounded down (a target a little low is safer than a little high)."""
    if x <= 0:
        return 0.0
    import math
    digits = 2 - math.floor(math.log10(x))
    return float(round(math.floor(round(x * 10 ** digits, 9)) / 10 ** digits, max(digits, 0)))


def pick_targets(measured_offline_qps: float) -> dict[str, float]:
    """Targets for each scenario from a short Offline run's samples/s."""
    if not measured_offline_qps > 0:
        raise UserConfError(f"find-performance measured {measured_offline_qps} samples/s: nothing completed; "
                            "check the server log")
    return {"Offline": round_down(measured_offline_qps),
            "Server": round_down(measured_offline_qps * SERVER_FRACTION),
            "Interactive": round_down(measured_offline_qps * INTERACTIVE_FRACTION)}
