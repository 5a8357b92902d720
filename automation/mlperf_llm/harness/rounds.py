"""What the harness asks of a round (`mlperf_llm.rounds`): is the LoadGen it imports the round's,
and where LoadGen's config and the results of a (model, scenario) go."""

from __future__ import annotations

from importlib import metadata

from mlperf_llm.benchmarks import BenchmarkError, get_benchmark
from mlperf_llm.rounds import ROUNDS, Round, RoundError, check_model, get_round

__all__ = ["Round", "RoundError", "get_round", "installed_loadgen_version", "loadgen_check",
           "loadgen_model_and_dirs"]


def installed_loadgen_version() -> str | None:
    try:
        return metadata.version("mlcommons-loadgen")
    except metadata.PackageNotFoundError:
        return None


def loadgen_check(rnd: Round, version: str | None, built_from_source: bool = False) -> str | None:
    """A message when `version` of LoadGen cannot produce this round's results, else None. A LoadGen
    built from the round's source (TEST06 on v4.1: mlperf_llm.sysinfo.loadgen_src) carries the bare
    round number ("4.1") and reads the round's mlperf.conf beside it; its seed was checked when built."""
    if built_from_source and version and version.split(".")[:2] == rnd.name.split("."):
        return None
    if version is None:
        return (f"mlcommons-loadgen is not installed; fix: pip install mlcommons-loadgen=={rnd.loadgen_pin}")
    if not rnd.loadgen_in_range(version):
        return (f"mlcommons-loadgen {version} is installed but round {rnd.name} needs a wheel with its seeds "
                f"({rnd.loadgen_min} .. {rnd.loadgen_max}); fix: pip install mlcommons-loadgen=={rnd.loadgen_pin}")
    return None


def loadgen_model_and_dirs(model: str, scenario: str, rnd: Round) -> tuple[str, str, str, str]:
    """(LoadGen config model name, LoadGen scenario, results model dir, results scenario dir)."""
    try:
        bench = get_benchmark(model)
        check_model(rnd, model)
        bench.check_scenario(scenario)
    except BenchmarkError as e:
        raise RoundError(str(e)) from None
    if scenario != "Interactive":
        return bench.loadgen_key, scenario, model, scenario
    way = rnd.interactive_of(bench)
    if way == "none":
        later = [r.name for r in ROUNDS.values() if r.interactive_of(bench) != "none" and r.has_model(model)]
        raise RoundError(f"scenario Interactive does not exist for {model} in round {rnd.name}; "
                         f"use {later[0] if later else 'a later round'} or later, or --scenario=Server")
    if way == "model":      # v5.0: a benchmark of its own, run as its Server
        return bench.interactive_key, "Server", bench.interactive_benchmark, "Server"
    return bench.interactive_key, "Server", model, "Interactive"
