"""What differs between MLPerf Inference rounds for the harness: the LoadGen wheel to install, the
Interactive layout. Wheel ranges and seeds come from `mlperf_llm.sysinfo.rounds` (measured per wheel);
each pin here applied its round's qsl_rng_seed in a LoadGen run (2026-11-22).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata

from mlperf_llm.sysinfo import rounds as sysinfo_rounds

SCENARIOS = ("Offline", "Server", "Interactive")
MODELS = ("llama2-70b-99", "llama2-70b-99.9")
# llama2-70b's latency bounds, p99 (TTFT, TPOT) in ms: LoadGen's ttft_latency/tpot_latency in
# mlperf.conf, and the checker's LLM_LATENCY_LIMITS (the same in v4.1, v5.0 and v5.1)
LATENCY_LIMITS_MS = {"Server": (2000, 200), "Interactive": (450, 40)}


@dataclass(frozen=True)
class Round:
    name: str               # "5.1"
    loadgen_pin: str        # the wheel to install for this round (named in fix messages)
    interactive: str        # "none" | "model" (llama2-70b-interactive-99/Server) | "scenario" (.../Interactive)

    @property
    def info(self) -> sysinfo_rounds.Round:
        """Wheel range and seed, measured per wheel (mlperf_llm.sysinfo.rounds)."""
        return sysinfo_rounds.round_info(self.name)

    @property
    def qsl_rng_seed(self) -> int:
        return self.info.qsl_rng_seed


ROUNDS = {
    "4.1": Round("4.1", "4.1.30", "none"),
    "5.0": Round("5.0", "5.0.20", "model"),
    "5.1": Round("5.1", "5.1.2", "scenario"),
}
DEFAULT_ROUND = "5.1"


class RoundError(ValueError):
    pass


def get_round(name: str) -> Round:
    key = name.strip().lstrip("rv").strip()
    if key.count(".") > 1:          # "5.1.1" -> "5.1"
        key = ".".join(key.split(".")[:2])
    if key not in ROUNDS:
        raise RoundError(f"round {name!r} is not supported; choose one of {', '.join(ROUNDS)}")
    return ROUNDS[key]


def installed_loadgen_version() -> str | None:
    try:
        return metadata.version("mlcommons-loadgen")
    except metadata.PackageNotFoundError:
        return None


def loadgen_check(rnd: Round, version: str | None) -> str | None:
    """A message when `version` of LoadGen cannot produce this round's results, else None."""
    if version is None:
        return (f"mlcommons-loadgen is not installed; fix: pip install mlcommons-loadgen=={rnd.loadgen_pin}")
    info = rnd.info
    if not sysinfo_rounds.in_range(version, info):
        return (f"mlcommons-loadgen {version} is installed but round {rnd.name} needs a wheel with its seeds "
                f"({info.loadgen_min} .. {info.loadgen_max}); fix: pip install mlcommons-loadgen=={rnd.loadgen_pin}")
    return None


def loadgen_model_and_dirs(model: str, scenario: str, rnd: Round) -> tuple[str, str, str, str]:
    """(LoadGen config model name, LoadGen scenario, results model dir, results scenario dir)."""
    if model not in MODELS:
        raise RoundError(f"model {model!r} is not supported; choose one of {', '.join(MODELS)}")
    if scenario not in SCENARIOS:
        raise RoundError(f"scenario {scenario!r} is not supported; choose one of {', '.join(SCENARIOS)}")
    if scenario != "Interactive":
        return "llama2-70b", scenario, model, scenario
    if rnd.interactive == "none":
        raise RoundError(f"scenario Interactive does not exist in round {rnd.name}; use 5.0 or later")
    if rnd.interactive == "model":
        return "llama2-70b-interactive", "Server", model.replace("llama2-70b", "llama2-70b-interactive"), "Server"
    return "llama2-70b-interactive", "Server", model, "Interactive"
