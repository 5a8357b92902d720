"""What differs between MLPerf Inference rounds for llama2-70b: LoadGen pins, seeds, layout.

Each pin was checked by the seeds built into that wheel's mlperf.conf (`strings` on the .so).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata

SCENARIOS = ("Offline", "Server", "Interactive")
MODELS = ("llama2-70b-99", "llama2-70b-99.9")


@dataclass(frozen=True)
class Round:
    name: str               # "5.1"
    loadgen_pin: str        # an exact mlcommons-loadgen version with this round's seeds
    loadgen_series: str     # versions "X.Y." whose seeds must still be checked in the log
    qsl_rng_seed: int
    interactive: str        # "none" | "model" (llama2-70b-interactive-99/Server) | "scenario" (.../Interactive)


ROUNDS = {
    "4.1": Round("4.1", "4.1.30", "4.1.", 3066443479025735752, "none"),
    "5.0": Round("5.0", "5.0.20", "5.0.", 6023615788873153749, "model"),
    "5.1": Round("5.1", "5.1.2", "5.1.", 1780908523862526354, "scenario"),
}
DEFAULT_ROUND = "5.1"


class RoundError(ValueError):
    pass


def get_round(name: str) -> Round:
    key = name.lstrip("v").strip()
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
    if not version.startswith(rnd.loadgen_series):
        return (f"mlcommons-loadgen {version} is installed but round {rnd.name} needs its own seeds "
                f"({rnd.loadgen_series}x); fix: pip install mlcommons-loadgen=={rnd.loadgen_pin}")
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
