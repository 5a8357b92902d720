"""What the end-to-end tests cost, and how long they may wait.

Each e2e test (or the shared fixture that does the work for several) charges the real work it did:
vLLM servers started, LoadGen queries completed, tokens generated, `cm` runs. pytest prints the
ledger at the end of the run (tests/e2e/conftest.py), so every CI log shows where the time went and
two hosts can be compared by work, not only by seconds.

Limits come from the work too: `Pace` is measured on this host (a server start and a few greedy
answers on the session's server), and a run that issues N queries may take N x the measured
seconds per query, with a wide margin, plus its server starts. A slow host makes the tests slower,
never red; only a run that makes no progress for many times its expected work fails.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field, fields
from pathlib import Path

from mlperf_llm.harness.results import STATUS_FILE     # what the harness writes beside LoadGen's logs

SERVER_READY = re.compile(r"vLLM server ready at ")


@dataclass
class Work:
    server_starts: int = 0
    queries: int = 0
    tokens: int = 0
    cm_runs: int = 0
    seconds: float = 0.0

    def __add__(self, other: "Work") -> "Work":
        return Work(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})


def work_in(results_dir: Path | None = None, output: str = "", cm_runs: int = 0, seconds: float = 0.0) -> Work:
    """The work a run did: its harness status files under results_dir (every test, moved-aside
    latency-search tries included) and the server starts its output reports."""
    queries = tokens = 0
    if results_dir is not None and Path(results_dir).is_dir():
        for path in Path(results_dir).rglob(STATUS_FILE):
            status = json.loads(path.read_text())
            queries += int(status.get("completed", 0))
            tokens += int(status.get("generated_tokens", 0))
    return Work(server_starts=len(SERVER_READY.findall(output)), queries=queries, tokens=tokens,
                cm_runs=cm_runs, seconds=seconds)


@dataclass
class Ledger:
    """Work per test or per shared fixture, in the order it was charged, and the host's pace the
    session measured (printed under the table: how fast this host was, beside how long the work took)."""
    rows: dict[str, Work] = field(default_factory=dict)
    pace: Pace | None = None

    def charge(self, who: str, work: Work) -> None:
        self.rows[who] = self.rows.get(who, Work()) + work

    def to_json(self) -> str:
        """The rows and the pace, for a pytest-xdist worker to hand to the controller (config.workeroutput)."""
        return json.dumps({"rows": [[who, vars(w)] for who, w in self.rows.items()],
                           "pace": vars(self.pace) if self.pace else None})

    def add_json(self, text: str) -> None:
        """A worker's rows (to_json), charged here in their order, and its pace."""
        data = json.loads(text)
        for who, work in data["rows"]:
            self.charge(who, Work(**work))
        if data["pace"]:
            self.pace = Pace(**data["pace"])

    def lines(self) -> list[str]:
        if not self.rows:
            return []
        width = max(len(k) for k in self.rows)
        head = f"{'test or shared fixture':<{width}}  servers  queries   tokens  cm runs  seconds"
        out = [head]
        total = Work()
        for who, w in self.rows.items():
            total = total + w
            out.append(f"{who:<{width}}  {w.server_starts:7d}  {w.queries:7d}  {w.tokens:7d}  {w.cm_runs:7d}"
                       f"  {w.seconds:7.0f}")
        out.append(f"{'total':<{width}}  {total.server_starts:7d}  {total.queries:7d}  {total.tokens:7d}"
                   f"  {total.cm_runs:7d}  {total.seconds:7.0f}")
        if self.pace:
            out.append(f"pace of this host (fixture pace): a vLLM server start {self.pace.server_start_s:.1f} s, "
                       f"one greedy {PACE_TOKENS}-token answer {self.pace.query_s:.2f} s")
        return out


LEDGER = Ledger()


# Limits that are not the host's pace, named so that no e2e test writes a wall-clock number of its own
# (tests/unit/e2e_costs/test_no_literal_loads.py fails on one):
NO_QUERY_WORK_S = 600.0    # a `cm` command that issues no LoadGen query (cached steps, a checker, a listing)
STOP_WAIT_S = 60.0         # a process told to stop (SIGTERM, then the test's own kill): stuck past this
BURST_SHARE = 0.25         # Pace.burst_qps issues its queries within this share of one answer alone
PACE_TOKENS = 128          # measure_pace: the greedy answer it times, in tokens
PACE_ANSWERS = 2           # and how many times it times it (the slower kept)


@dataclass(frozen=True)
class Pace:
    """This host's speed on the embedded model, measured once per session."""
    server_start_s: float      # a vLLM server start, until it answers
    query_s: float             # one greedy answer of up to PACE_TOKENS tokens, alone on the server

    MARGIN = 5.0               # a busy host, a latency-search retry, a slow tokenizer load
    FLOOR_S = NO_QUERY_WORK_S  # the cached steps, LoadGen's start, the checker: work without queries

    def limit_s(self, queries: int, server_starts: int = 1) -> float:
        """How long a run that issues `queries` LoadGen queries and starts `server_starts` servers
        may take before it is called stuck."""
        return self.FLOOR_S + self.MARGIN * (queries * self.query_s + server_starts * self.server_start_s)

    def burst_qps(self, queries: int) -> float:
        """A Server target that issues `queries` within a quarter of one answer alone here (BURST_SHARE; 3
        significant digits): the test then waits for the answers, not for LoadGen's schedule. For tests
        that judge no latency: whether the bounds are met at it depends on the host."""
        return float(f"{queries / (BURST_SHARE * self.query_s):.3g}")


def measure_pace(server_started_s: float, answer) -> Pace:
    """answer() sends one greedy request of PACE_TOKENS tokens to a ready server; timed PACE_ANSWERS
    times, the slower kept."""
    times = []
    for _ in range(PACE_ANSWERS):
        t0 = time.monotonic()
        answer()
        times.append(time.monotonic() - t0)
    return Pace(server_start_s=server_started_s, query_s=max(times))
