"""Whether this host can meet a benchmark's latency bounds at any load.

A Server or Interactive test is judged by its p99 TTFT and TPOT. However low the load, no query is
faster than one alone on the server: where one query alone already takes about the bound, lowering
the target cannot help, and the run says so before the test instead of retrying it at lower loads
(latency.py), runs it once at the lowest load, and the checker's verdict names the host limit apart
from other failures (submission/checker.py).

"About the bound": at or over REACH of it. A p99 over many queries of several lengths runs above
one query alone (on the slow kind of host, 2026-11-27: this probe 91.4 ms a token on the embedded
stand-in, while Server tests of llama3.1-8b measured p99 TPOT 103-107 ms at 0.11 QPS, 13-17% above
it, and 113.7 ms at 4 QPS), so a host within 1 - REACH of the bound meets it by chance if at all.

The probe: PROBE_ANSWERS greedy answers of exactly PROBE_TOKENS tokens, one after the other, on the
run's first server, streamed, on the data set's longest prompt (a p99 is set by the slowest queries,
and a token's time grows with its context); the faster of each figure is kept (a first answer may
pay a warm-up).

Where the probe finds the bound within reach and the run's own target misses it all the same, the
target is lowered and retried (latency.py); a miss at the lowest load (about one query in flight at a
time) is a host limit too, measured instead of foreseen (`measured`): the verdict names it alike.
"""
from __future__ import annotations

import asyncio
import math
import time
from dataclasses import asdict, dataclass

PROBE_TOKENS = 16
PROBE_ANSWERS = 2
REACH = 0.8
FIGURES = ("TTFT", "TPOT")     # the order of a benchmark's latency_limits_ms pairs


class ProbeError(RuntimeError):
    pass


@dataclass(frozen=True)
class Alone:
    """One query alone on the server: time to its first token, and per later token (LoadGen's TPOT)."""
    ttft_ms: float
    tpot_ms: float

    def line(self) -> str:
        return (f"one query alone on this host: first token in {self.ttft_ms:.0f} ms, then {self.tpot_ms:.1f} ms "
                f"a token ({PROBE_ANSWERS} answers of {PROBE_TOKENS} tokens to the data set's longest prompt, "
                "the faster kept)")


@dataclass(frozen=True)
class HostLimit:
    """A latency bound this host cannot be relied on to meet at any load."""
    model: str
    scenario: str
    figure: str              # TTFT | TPOT
    alone_ms: float          # one query alone (the probe); with measured_qps: the p99 measured at that load
    bound_ms: float
    measured_qps: float | None = None     # the lowest load, at which a Server test measured alone_ms

    def sentence(self) -> str:
        bound = f"{self.model}'s {self.scenario} {self.figure} bound of {self.bound_ms:g} ms"
        if self.measured_qps is not None:
            return (f"at {self.measured_qps:g} QPS, about one query in flight at a time, this host's p99 "
                    f"{self.figure} was {self.alone_ms:.0f} ms: the {bound} cannot be met here at any load")
        alone = (f"this host decodes ~{self.alone_ms:.0f} ms a token alone" if self.figure == "TPOT"
                 else f"this host takes ~{self.alone_ms:.0f} ms to a first token alone")
        if self.alone_ms >= self.bound_ms:
            return f"{alone}: the {bound} cannot be met here at any load"
        return (f"{alone}, within {1 - REACH:.0%} of the {bound}: a p99 over many queries runs above one "
                "query alone, so the bound cannot be relied on here at any load")

    def to_json(self) -> dict:
        return {**asdict(self), "sentence": self.sentence()}

    @classmethod
    def from_json(cls, data: dict) -> "HostLimit":
        return cls(**{k: data[k] for k in ("model", "scenario", "figure", "alone_ms", "bound_ms")},
                   measured_qps=data.get("measured_qps"))


def judge(model: str, scenario: str, alone: Alone, bounds: tuple[float, float]) -> HostLimit | None:
    """The bound (TPOT first: the usual one) that one query alone is at or within 1 - REACH of;
    None when both are within reach."""
    figures = dict(zip(FIGURES, bounds))
    for figure, measured in (("TPOT", alone.tpot_ms), ("TTFT", alone.ttft_ms)):
        if measured >= REACH * figures[figure]:
            return HostLimit(model, scenario, figure, round(measured, 1), figures[figure])
    return None


def measured(model: str, scenario: str, summary: dict, bounds: tuple[float, float], qps: float) -> HostLimit | None:
    """The bound a Server test at the lowest load (qps) still missed, from its p99s (summary: ns), or None."""
    for figure, key, bound in (("TPOT", "tpot_p99_ns", bounds[1]), ("TTFT", "ttft_p99_ns", bounds[0])):
        p99 = summary.get(key)
        if p99 and p99 / 1e6 > bound:
            return HostLimit(model, scenario, figure, round(p99 / 1e6, 1), bound, measured_qps=qps)
    return None


LOADS_ENV = "CM_MLPERF_PERFORMANCE_LOADS"     # "Server=0.0581": the load a performance test runs at, given
LOAD_SCENARIOS = ("Server", "Interactive")   # the scenarios judged by latency bounds


class LoadsError(ValueError):
    pass


def parse_loads(text: str) -> dict[str, float]:
    """'Server=0.0581,Interactive=0.02' -> {'Server': 0.0581, ...}; '' -> {}. A replay gives the
    recorded run's (its performance test ran at the lowest load, its accuracy tests at the target)."""
    out: dict[str, float] = {}
    for item in [p.strip() for p in str(text or "").split(",") if p.strip()]:
        scenario, eq, value = item.partition("=")
        try:
            qps = float(value)
        except ValueError:
            qps = 0.0
        if not eq or scenario.strip() not in LOAD_SCENARIOS or not (qps > 0 and math.isfinite(qps)):
            raise LoadsError(f"{LOADS_ENV}: {item!r} is not SCENARIO=QPS (SCENARIO one of {', '.join(LOAD_SCENARIOS)}, "
                             "QPS a positive number), e.g. Server=0.0581")
        out[scenario.strip()] = qps
    return out


def format_loads(loads: dict[str, float]) -> str:
    return ",".join(f"{s}={q:g}" for s, q in sorted(loads.items()))


def lowest_load(mean_answer_s: float) -> float:
    """About one query in flight at a time: a query per mean answer's time, rounded down to 3
    significant digits (0 without a measured answer)."""
    if not mean_answer_s > 0:
        return 0.0
    qps = 1.0 / mean_answer_s
    scale = 10 ** (math.floor(math.log10(qps)) - 2)
    return math.floor(qps / scale) * scale


def longest_prompt(prompts: list[list[int]]) -> list[int]:
    if not prompts:
        raise ProbeError("the data set has no prompt to probe the server with")
    return max(prompts, key=len)


def probe(url: str, model_name: str, prompt: list[int], token_ids_via: str = "return_token_ids",
          api_key: str | None = None) -> Alone:
    """PROBE_ANSWERS answers of PROBE_TOKENS tokens on url, one after the other, streamed."""
    from .apierrors import ApiError
    from .client import ApiClient, GenerationParams

    params = GenerationParams(max_tokens=PROBE_TOKENS, min_tokens=PROBE_TOKENS, token_ids_via=token_ids_via)

    async def answers() -> list[tuple[float, float]]:
        out = []
        async with ApiClient([url], model_name, params, request_timeout_s=600.0, api_key=api_key) as client:
            for _ in range(PROBE_ANSWERS):
                t0 = time.perf_counter()
                comp = await client.complete(prompt, stream=True)
                t1 = time.perf_counter()
                n = len(comp.token_ids)
                if comp.first_token_s is None or n < 2:
                    raise ProbeError(f"{url} answered {n} token(s) to a probe that asked for {PROBE_TOKENS}")
                out.append(((comp.first_token_s - t0) * 1e3, (t1 - comp.first_token_s) * 1e3 / (n - 1)))
        return out

    try:
        got = asyncio.run(answers())
    except ApiError as e:
        raise ProbeError(str(e)) from None
    return Alone(ttft_ms=min(t for t, _ in got), tpot_ms=min(p for _, p in got))
