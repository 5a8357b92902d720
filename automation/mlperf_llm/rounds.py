"""MLPerf Inference rounds: every fact that differs between rounds, in one table.

This is the only place a round number is written. Each other module asks it: the LoadGen step
(which wheels carry the round's seeds), the harness (which benchmarks, the Interactive layout),
TEST06 and the checker (which mlcommons/inference revision), the submission builder (layout,
mlperf.conf, calibration doc). What differs between benchmarks (scenarios, latency limits,
accuracy) is in mlperf_llm.benchmarks. Adding a round is one entry in ROUNDS plus its tests.

Sources: each round's checker (tools/submission of mlcommons/inference at the tag, or the package
`submission_checker` at master b66003e for v6.x: MODEL_CONFIG, seeds, LLM_LATENCY_LIMITS) and
mlperf.conf; copies of all four revisions are in ../shared/mlcommons-inference/ (see its README).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .benchmarks import Benchmark, BenchmarkError, get_benchmark, required_in

MASTER_B66003E = "b66003e10e2db4b8c36a448b0545ec90fcc6e9e9"   # mlcommons/inference master, 2026-08-20


class RoundError(ValueError):
    """A round or a round/model pair this tool cannot run; the message names the input and the fix."""


@dataclass(frozen=True)
class Seeds:
    qsl_rng_seed: int
    sample_index_rng_seed: int
    schedule_rng_seed: int


@dataclass(frozen=True)
class Round:
    name: str                                   # "6.1"
    benchmarks: tuple[str, ...]                 # the benchmarks of mlperf_llm.benchmarks the round has
    seeds: Seeds                                # the round's mlperf.conf (built into its LoadGen wheels)
    loadgen_min: str                            # the PyPI wheels whose built-in mlperf.conf has the seeds
    loadgen_max: str
    loadgen_pin: str                            # the wheel installed for the round
    src_ref: str                                # mlcommons/inference tag or commit: checker, TEST06, mlperf.conf
    shared_copy: str                            # its offline copy: ../shared/mlcommons-inference/<shared_copy>
    checker: str                                # "script": tools/submission/submission_checker.py;
                                                # "package": cd tools/submission && python3 -m submission_checker.main
    layout: str                                 # "v4": measurements/, compliance/, code/ beside results/;
                                                # "v6": all of a test under results/<system>/<benchmark>/<scenario>/, src/
    mlperf_conf_in_measurements: bool           # v4.1 wants mlperf.conf beside user.conf
    calibration_doc: bool                       # the checker wants documentation/calibration.md (closed)
    interactive: str                            # "none" | "model" (llama2-70b-interactive-99/Server) |
                                                # "scenario" (<benchmark>/Interactive)
    all_scenarios: tuple[str, ...] = ("Offline", "Server")   # of a datacenter benchmark, what `_all-scenarios` runs
    test06_dir: str = "compliance/TEST06"       # TEST06's folder (audit.config, run_verification.py) in src_ref

    @property
    def version(self) -> str:
        """"v6.1": as the checker's --version wants it."""
        return "v" + self.name

    @property
    def tag(self) -> str:
        """"_r6.1": the variation that selects the round."""
        return "_r" + self.name

    @property
    def qsl_rng_seed(self) -> int:
        return self.seeds.qsl_rng_seed

    @property
    def src_is_commit(self) -> bool:
        return bool(re.fullmatch(r"[0-9a-f]{7,40}", self.src_ref))

    def has_model(self, model: str) -> bool:
        """Whether the round has the benchmark `model` (v5.0's `llama2-70b-interactive-99` names
        llama2-70b-99's Interactive runs)."""
        return model.replace("-interactive", "") in self.benchmarks

    def interactive_of(self, bench: Benchmark) -> str:
        """How this round has `bench`'s Interactive runs: the round's way, or "none" before the round
        the benchmark's Interactive came in (deepseek-r1: v6.0; v5.1 requires its Server)."""
        if bench.interactive_since and _order(self.name) < _order(bench.interactive_since):
            return "none"
        return self.interactive

    def required(self, bench: Benchmark) -> tuple[tuple[str, ...], ...]:
        """The closed division's scenario requirements of `bench` in this round."""
        return required_in(bench, self.interactive_of(bench))

    def missing_scenarios(self, bench: Benchmark, present) -> list[str]:
        """The closed-division requirements not met by the scenarios `present` ("Server or
        Interactive" for a choice)."""
        have = set(present)
        return [" or ".join(alt) for alt in self.required(bench) if not have & set(alt)]

    def describe_scenarios(self, bench: Benchmark) -> str:
        return " + ".join(" or ".join(alt) for alt in self.required(bench))

    def scenarios_of(self, bench: Benchmark) -> tuple[str, ...]:
        """What `_all-scenarios` runs for `bench`: its scenarios, Interactive only from v6.0."""
        return tuple(s for s in bench.scenarios
                     if s != "Interactive" or (s in self.all_scenarios and self.interactive_of(bench) != "none"))

    def loadgen_in_range(self, version: str) -> bool:
        from cmcontract.versions import compare
        return bool(version) and compare(version, self.loadgen_min) >= 0 and compare(version, self.loadgen_max) <= 0


_LLAMA2 = ("llama2-70b-99", "llama2-70b-99.9")
_LLAMA31 = ("llama3.1-8b", "llama3.1-8b-edge")
_REASONING = ("gpt-oss-120b",)                  # from v6.0 (the v6.0 and master checkers' MODEL_CONFIG)
_DEEPSEEK = ("deepseek-r1",)                    # from v5.1 (the v5.1.1 checker; Interactive from v6.0)

# LoadGen wheels, measured on the PyPI wheels (TestSettings.FromConfig with an empty user.conf,
# llama2-70b Offline, the seed LoadGen applies):
# - 2026-11-22: 4.1.7 has no built-in mlperf.conf (seed 0); 4.1.12-4.1.30 carry the v4.1 seeds;
#   5.0.0-5.0.7 the v4.1 seeds, 5.0.8 an unreleased one, 5.0.9-5.0.21 v5.0's, 5.0.22-5.0.25 v5.1's;
#   5.1.0-5.1.2 v5.1's.
# - 2026-11-24 (this table's v6 rows; all three seeds read): 6.0.3 and 6.0.4 carry v5.1's seeds;
#   6.0.5 through 6.0.15 v6.0's (2465351861681999779 / 14276810075590677512 / 3936089224930324775,
#   the master checker's v6.0 seeds); 6.0.16 and 6.0.17 v6.1's (2085463073848966840 /
#   2747215439041700203 / 16159082839903944936, which is master-b66003e's loadgen/mlperf.conf).
#   6.0.17 was the newest wheel on PyPI.
ROUNDS: dict[str, Round] = {r.name: r for r in (
    Round("4.1", _LLAMA2,
          Seeds(3066443479025735752, 10688027786191513374, 14962580496156340209),
          "4.1.12", "4.1.30", "4.1.30", "v4.1", "v4.1", "script", "v4",
          mlperf_conf_in_measurements=True, calibration_doc=False, interactive="none",
          test06_dir="compliance/nvidia/TEST06"),
    Round("5.0", _LLAMA2,
          Seeds(6023615788873153749, 15036839855038426416, 9933818062894767841),
          "5.0.9", "5.0.21", "5.0.20", "v5.0", "v5.0", "script", "v4",
          mlperf_conf_in_measurements=False, calibration_doc=False, interactive="model",
          test06_dir="compliance/nvidia/TEST06"),
    Round("5.1", _LLAMA2 + _LLAMA31 + _DEEPSEEK,             # the v5.1 checker already takes Interactive for Server
          Seeds(1780908523862526354, 14771362308971278857, 18209322760996052031),
          "5.1.0", "5.1.999", "5.1.2", "v5.1", "v5.1.1", "script", "v4",
          mlperf_conf_in_measurements=False, calibration_doc=True, interactive="scenario"),
    Round("6.0", _LLAMA2 + _LLAMA31 + _REASONING + _DEEPSEEK,
          Seeds(2465351861681999779, 14276810075590677512, 3936089224930324775),
          "6.0.5", "6.0.15", "6.0.15", MASTER_B66003E, "master-b66003e", "package", "v6",
          mlperf_conf_in_measurements=False, calibration_doc=True, interactive="scenario",
          all_scenarios=("Offline", "Server", "Interactive")),
    # v6.1 dropped llama2-70b-99 (mlcommons/inference 44cc3a3 "Remove llama2-70b-99")
    Round("6.1", ("llama2-70b-99.9",) + _LLAMA31 + _REASONING + _DEEPSEEK,
          Seeds(2085463073848966840, 2747215439041700203, 16159082839903944936),
          "6.0.16", "6.0.17", "6.0.17", MASTER_B66003E, "master-b66003e", "package", "v6",
          mlperf_conf_in_measurements=False, calibration_doc=True, interactive="scenario",
          all_scenarios=("Offline", "Server", "Interactive")),
)}
def _order(name: str) -> tuple[int, ...]:
    return tuple(int(x) for x in name.split("."))


NEWEST = max(ROUNDS.values(), key=lambda r: _order(r.name))


def _known() -> str:
    return ", ".join(r.tag for r in ROUNDS.values())


def get_round(text) -> Round:
    """"r6.1", "_r6.1", "v6.1", "6.1", "6.1.2" (a point release of the round) -> Round."""
    raw = str(text or "").strip()
    key = re.sub(r"^_?[rv]", "", raw.lower())
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.\d+)*", key)
    if not raw:
        raise RoundError(f"no round given; use one of {_known()} (or leave the round out for the newest "
                         "round that has the model)")
    if not m or f"{int(m.group(1))}.{int(m.group(2))}" not in ROUNDS:
        raise RoundError(f"round {raw!r} is not one this tool runs; rounds: {_known()}; fix: choose one of them")
    return ROUNDS[f"{int(m.group(1))}.{int(m.group(2))}"]


def default_round(model: str = "") -> tuple[Round, str]:
    """The newest round that has `model` (the newest round of all when no model is given), and why."""
    if not model:
        return NEWEST, f"the newest round, v{NEWEST.name}"
    bench = _benchmark(model)
    having = [r for r in ROUNDS.values() if r.has_model(bench.name)]
    if not having:
        raise RoundError(f"model {model!r} is in no round this tool runs; rounds: {_known()}")
    best = having[-1]
    return best, f"the newest round that has {bench.name}" + (
        "" if best is NEWEST else f" (v{NEWEST.name} has {', '.join(NEWEST.benchmarks)})")


def oldest_newest(models) -> str:
    """Of several benchmarks (a tree's), the one whose newest round is the oldest: settling on it gives
    the newest round that has them all, where one does; '' for none this tool knows."""
    order = list(ROUNDS.values())
    known = []
    for name in models:
        try:
            known.append((order.index(default_round(name)[0]), name))
        except RoundError:
            continue
    return min(known)[1] if known else ""


def _benchmark(model: str) -> Benchmark:
    try:
        return get_benchmark(model)
    except BenchmarkError as e:
        raise RoundError(str(e)) from None


def check_model(rnd: Round, model: str) -> None:
    """RoundError naming the alternatives when `rnd` does not have `model`."""
    bench = _benchmark(model)
    if rnd.has_model(model):
        return
    other, _ = default_round(bench.name)
    runs = [b for b in rnd.benchmarks if not get_benchmark(b).runnable]
    listed = ", ".join(b if b in runs else f"{b} (not run by this tool yet)" for b in rnd.benchmarks)
    raise RoundError(f"round v{rnd.name} has no {model} (its benchmarks: {listed}); fix: choose one of "
                     f"{', '.join(runs)} with {rnd.tag}, or keep --model={model} with {other.tag}")


def default_benchmark(rnd: Round) -> Benchmark:
    """The benchmark a run without --model runs: the round's first that the chain runs."""
    return next(get_benchmark(b) for b in rnd.benchmarks if not get_benchmark(b).runnable)


def round_for(text: str, model: str = "") -> Round:
    """The round asked for (`text`), else the default one for `model`; checked to have the model."""
    rnd = get_round(text) if str(text or "").strip() else default_round(model)[0]
    if model:
        check_model(rnd, model)
    return rnd


def expand_scenarios(text: str, rnd: Round, model: str) -> list[str]:
    """"Offline,Server" -> its names; "all" -> what `_all-scenarios` runs for the benchmark `model` in
    the round (llama2-70b: Offline and Server up to v5.1, Offline, Server and Interactive from v6.0;
    llama3.1-8b-edge: Offline and SingleStream)."""
    names = [s.strip() for s in str(text or "").replace(";", ",").split(",") if s.strip()]
    if [n.lower() for n in names] == ["all"]:
        return list(rnd.scenarios_of(_benchmark(model)))
    return names


def settle(given: str, model: str = "") -> tuple[Round, str]:
    """The round of a run and, when none was given, a note saying which was taken and why (for the
    plan); RoundError when the round is unknown or lacks the model. The note is "" for a round given."""
    if str(given or "").strip():
        return round_for(given, model), ""
    rnd, why = default_round(model)
    return rnd, f"round v{rnd.name} ({rnd.tag}): no round given, so {why}"


def settle_benchmark(env: dict, model_key: str = "CM_MLPERF_MODEL") -> tuple[Round, Benchmark, list[str], list[str]]:
    """The round and the benchmark of a run that runs one: (round, benchmark, the variations that
    select what was not given, the notes saying why). No --model: the round's first benchmark this
    tool runs (variation `model.<name>`). RoundError when the round is unknown or lacks the model,
    or the chain cannot run the benchmark yet."""
    model = env.get(model_key, "")
    rnd, note = settle(env.get("CM_MLPERF_INFERENCE_VERSION", ""), model)
    variations = [rnd.tag[1:]] if note else []
    notes = [note] if note else []
    if not model:
        bench = default_benchmark(rnd)
        variations.append(f"model.{bench.name}")
        notes.append(f"benchmark {bench.name}: no --model given, so the first of round v{rnd.name}'s benchmarks "
                     f"({', '.join(rnd.benchmarks)}) that this tool runs")
        return rnd, bench, variations, notes
    bench = get_benchmark(model)
    if bench.runnable:
        raise RoundError(f"--model={model}: this tool cannot run it yet: {bench.runnable}; fix: choose one of "
                         f"{', '.join(b for b in rnd.benchmarks if not get_benchmark(b).runnable)}")
    return rnd, bench, variations, notes


def validate_hook_result(env: dict, model_key: str = "CM_MLPERF_MODEL", benchmark: bool = False) -> dict:
    """What a round-aware step's `validate(i)` returns: an error naming the fix, or (no round given)
    the variations to plan with and the note the plan prints. A step that runs a benchmark
    (`benchmark`) also settles one (settle_benchmark) and the steps it needs (env: steps_env)."""
    try:
        if not benchmark:
            rnd, note = settle(env.get("CM_MLPERF_INFERENCE_VERSION", ""), env.get(model_key, ""))
            return {"return": 0, "variations": [rnd.tag[1:]], "note": note} if note else {"return": 0}
        rnd, bench, variations, notes = settle_benchmark(env, model_key)
    except RoundError as e:
        return {"return": 1, "error": str(e)}
    return {"return": 0, "variations": variations, "note": "; ".join(notes), "env": steps_env(bench)}


def steps_env(bench: Benchmark) -> dict[str, str]:
    """What differs between benchmarks in run-mlperf-inference-app's dependencies: the tags of the
    data set and model steps (`update_tags_from_env`) and the compliance tests ('' skips TEST06)."""
    return {"CM_MLPERF_DATASET_TAGS": bench.dataset_tags, "CM_MLPERF_MODEL_TAGS": bench.model_tags,
            "CM_MLPERF_COMPLIANCE_TESTS": ",".join(bench.compliance)}
