"""The size each test of a test run ran at, kept and given back.

A test-mode test's size is what decides what it measures and, for an accuracy test, which samples it
scores (the first N of the data set): a performance test's queries (user.conf's min_query_count), an
accuracy test's samples, TEST06's queries (its audit.config's count). A run sized to its host
(sizing.py) chooses them from the rate it measured, so the same command on another host, or the
same host at another moment, picks other sizes and scores other samples.

So every test-mode run writes the sizes it ran at into its results folder (SIZES_FILE, one entry
per test, "Offline/accuracy": 9), the reproduction record keeps them, and a replay gives them back
with `--test_sizes=Offline/performance=12,Offline/accuracy=9,...` (CM_MLPERF_TEST_SIZES): each
test listed runs at that size and the run is not sized again. This module is the one place that
writes, reads and parses them.
"""
from __future__ import annotations

import json
import os

from ..benchmarks import SCENARIOS
from ..files import write_atomic
from .testconfig import MODES

SIZES_FILE = "test_sizes.json"
KINDS = MODES                # performance, accuracy and the compliance tests (testconfig.py)
NAME = "test_sizes"         # the chain's input (run-mlperf-inference-app, app-mlperf-inference, TEST06)
INPUT = f"--{NAME}"


class TestSizesError(ValueError):
    __test__ = False        # not a pytest class


def key(scenario: str, mode: str) -> str:
    return f"{scenario}/{mode}"


def parse(text: str, where: str = INPUT) -> dict[str, int]:
    """'Offline/performance=12,Offline/accuracy=9' -> {'Offline/performance': 12, ...}; '' -> {}.
    A malformed entry is named with the form it needs."""
    out: dict[str, int] = {}
    for item in [p.strip() for p in str(text or "").replace(";", ",").split(",") if p.strip()]:
        name, eq, count = item.partition("=")
        scenario, slash, mode = name.strip().partition("/")
        if not (eq and slash) or scenario not in SCENARIOS or mode not in KINDS:
            raise TestSizesError(f"{where}: {item!r} is not SCENARIO/KIND=N (SCENARIO one of {', '.join(SCENARIOS)}; "
                                 f"KIND one of {', '.join(KINDS)}), e.g. Offline/accuracy=9")
        if not count.strip().isdigit() or int(count) < 1:
            raise TestSizesError(f"{where}: {item!r}: the size must be a whole number of queries, at least 1")
        out[key(scenario, mode)] = int(count)
    return out


def from_mapping(data, where: str) -> dict[str, int]:
    """A stored {"Scenario/kind": N} (the folder's file, a record's section), checked as parse checks
    the input form."""
    if not isinstance(data, dict):
        raise TestSizesError(f"{where}: holds a {type(data).__name__}, not {{\"Scenario/kind\": N}}")
    return parse(",".join(f"{k}={v}" for k, v in data.items()), where)


def format_sizes(sizes: dict[str, int]) -> str:
    """The --test_sizes value of sizes, in scenario order, performance before accuracy before TEST06."""
    def order(k: str) -> tuple:
        scenario, _, mode = k.partition("/")
        return (SCENARIOS.index(scenario) if scenario in SCENARIOS else len(SCENARIOS),
                KINDS.index(mode) if mode in KINDS else len(KINDS), k)
    return ",".join(f"{k}={sizes[k]}" for k in sorted(sizes, key=order))


def read(results_dir: str) -> dict[str, int]:
    """The sizes the tests in results_dir ran at ({} where none were written); an unreadable file
    is named with the fix."""
    path = os.path.join(results_dir or "", SIZES_FILE)
    if not os.path.isfile(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            return from_mapping(json.load(f), path)
    except (OSError, ValueError) as e:
        raise TestSizesError(f"{path} is not a record of test sizes ({e}); fix: delete it (the next test run "
                             "writes it again)") from None


def write(results_dir: str, sizes: dict[str, int], forget: tuple[str, ...] = ()) -> str:
    """Adds sizes to the folder's record (a TEST06 run adds its own to its benchmark run's) and drops
    the entries in `forget` (tests a valid run has just replaced: their size is the round's), whole."""
    merged = {k: v for k, v in {**read(results_dir), **sizes}.items() if k not in forget}
    path = os.path.join(results_dir, SIZES_FILE)
    write_atomic(path, json.dumps(merged, indent=1, sort_keys=True) + "\n")
    return path


def accuracy_keys(sizes: dict[str, int]) -> list[str]:
    """The entries that decide which samples an accuracy test scores."""
    return [k for k in sizes if k.endswith("/accuracy")]
