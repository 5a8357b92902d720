"""What the harness asks of a round (`mlperf_llm.rounds`): is the LoadGen it imports the round's,
and where LoadGen's config and the results of a (model, scenario) go."""

from __future__ import annotations

from importlib import metadata

from mlperf_llm.rounds import LLAMA2, ROUNDS, SCENARIOS, Round, RoundError, check_model, get_round

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
    if model not in LLAMA2:
        raise RoundError(f"model {model!r} is not supported; choose one of {', '.join(LLAMA2)}")
    check_model(rnd, model)
    if scenario not in SCENARIOS:
        raise RoundError(f"scenario {scenario!r} is not supported; choose one of {', '.join(SCENARIOS)}")
    if scenario != "Interactive":
        return "llama2-70b", scenario, model, scenario
    if rnd.interactive == "none":
        later = [r.name for r in ROUNDS.values() if r.interactive != "none"]
        raise RoundError(f"scenario Interactive does not exist in round {rnd.name}; use {later[0]} or later")
    if rnd.interactive == "model":
        return "llama2-70b-interactive", "Server", model.replace("llama2-70b", "llama2-70b-interactive"), "Server"
    return "llama2-70b-interactive", "Server", model, "Interactive"
