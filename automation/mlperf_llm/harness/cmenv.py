"""The CM_* env contract of `app-mlperf-inference` <-> a typed `HarnessRequest`."""

from __future__ import annotations

import json
import os
import sys

from cmcontract.yesno import is_yes

from ..benchmarks import SCENARIOS
from ..outcomes import TestOutcome
from ..sysinfo.pyenv import HARNESS_PYTHON_ENV
from ..vllm.records import started_records
from ..vllm.server import ServerError, ServerRecord
from ..vllm.inputs import api_key_of
from .request import HarnessInputError, HarnessRequest
from .testrun import RunOutcome
from .testconfig import ManagedServer
from .userconf import TARGET_INPUTS

SCENARIO_NAMES = {s.lower(): s for s in SCENARIOS}
MODE_NAMES = {"performance": "performance", "performanceonly": "performance", "accuracy": "accuracy",
              "accuracyonly": "accuracy", "test06": "TEST06", "test07": "TEST07", "test09": "TEST09"}


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.replace(";", ",").split(",") if v.strip()]


def _num(env: dict, key: str, kind=float):
    raw = str(env.get(key, "")).strip()
    if not raw:
        return None
    try:
        return kind(raw)
    except ValueError:
        raise HarnessInputError(f"{key}={raw!r} is not a{'n integer' if kind is int else ' number'}; "
                                f"fix: pass a number, e.g. {key}=10") from None


def _accuracy_count(env: dict) -> int | None:
    raw = str(env.get("CM_MLPERF_ACCURACY_SAMPLE_COUNT", "")).strip().lower()
    if raw in ("all", "full"):
        return 0
    return _num(env, "CM_MLPERF_ACCURACY_SAMPLE_COUNT", int)


def _test_sizes(env: dict) -> dict[str, int]:
    from .testsizes import TestSizesError, parse
    try:
        return parse(env.get("CM_MLPERF_TEST_SIZES", ""))
    except TestSizesError as e:
        raise HarnessInputError(str(e)) from None


def _performance_loads(env: dict) -> dict[str, float]:
    from .hostlimit import LOADS_ENV, LoadsError, parse_loads
    try:
        return parse_loads(env.get(LOADS_ENV, ""))
    except LoadsError as e:
        raise HarnessInputError(str(e)) from None


def _names(raw: str, table: dict[str, str], what: str, key: str) -> tuple[str, ...]:
    out = []
    for v in _split(raw):
        if v.lower() not in table:
            raise HarnessInputError(f"{key}: unknown {what} {v!r}; choose from {', '.join(sorted(set(table.values())))}")
        out.append(table[v.lower()])
    return tuple(dict.fromkeys(out))


def endpoint_window(env: dict, servers: list[str]) -> int | None:
    """--endpoint_window, else, over several servers this run started (--replicas), their
    max_num_seqs: more in flight would queue in one replica while another may be idle."""
    given = _num(env, "CM_MLPERF_ENDPOINT_WINDOW", int)
    if given is not None or len(servers) < 2 or not is_yes(env.get("CM_VLLM_SERVER_STARTED")):
        return given
    return _num(env, "CM_VLLM_SERVER_MAX_NUM_SEQS", int)


def hf_device(env: dict) -> str:
    """The transformers backend's torch device from --device (CM_MLPERF_DEVICE): cpu, else cuda
    (ROCm builds of torch name their GPUs cuda too)."""
    return "cpu" if (env.get("CM_MLPERF_DEVICE") or "cpu").strip().lower() == "cpu" else "cuda"


def managed_servers(env: dict, api_servers: list[str]) -> tuple[ManagedServer, ...]:
    """The servers run-vllm-server started for this run (CM_VLLM_SERVER_RECORD: one per replica) that
    the tests use."""
    if not is_yes(env.get("CM_VLLM_SERVER_STARTED")):
        return ()
    used = [u.rstrip("/") for u in api_servers]
    out = []
    for path in started_records(env):
        try:
            r = ServerRecord.load(path)
        except ServerError as e:
            raise HarnessInputError(f"CM_VLLM_SERVER_RECORD: {e}") from None
        if r.url.rstrip("/") in used:
            out.append(ManagedServer(url=r.url, pid=r.pid, start_ticks=r.start_ticks, log_path=r.log_path,
                                         where=r.where))
    return tuple(out)


def request_from_env(env: dict, cwd: str | None = None) -> HarnessRequest:
    """Build the request from the script's env (see docs/harness.md for every key); the process's
    environment only for the key its servers require (VLLM_API_KEY: vllm/inputs.api_key_of)."""
    if not env.get("CM_MLPERF_MODEL"):
        from ..benchmarks import known
        raise HarnessInputError(f"no benchmark: CM_MLPERF_MODEL is empty; fix: pass --model=NAME (benchmarks: {known()})")
    scen_raw = env.get("CM_MLPERF_LOADGEN_SCENARIO") or env.get("CM_MLPERF_LOADGEN_SCENARIOS") or "Offline"
    if scen_raw.strip().lower() == "all":
        from ..rounds import expand_scenarios, round_for
        rnd = round_for(env.get("CM_MLPERF_INFERENCE_VERSION") or "", env.get("CM_MLPERF_MODEL") or "")
        scen_raw = ",".join(expand_scenarios(scen_raw, rnd, env.get("CM_MLPERF_MODEL") or ""))
    mode_raw = env.get("CM_MLPERF_LOADGEN_MODE") or env.get("CM_MLPERF_LOADGEN_MODES") or "performance,accuracy"
    dataset = env.get("CM_DATASET_PREPROCESSED_PATH") or env.get("CM_DATASET_PATH") or ""
    if not dataset:
        from ..benchmarks import BENCHMARKS
        bench = BENCHMARKS.get(env.get("CM_MLPERF_MODEL") or "")
        step = bench.dataset_tags if bench else "the benchmark's data set"
        raise HarnessInputError("no data set: CM_DATASET_PREPROCESSED_PATH is empty; fix: pass "
                                f"--dataset_path=FILE (the benchmark's data set file) or let the {step} dep run")
    servers = env.get("CM_MLPERF_API_SERVER") or env.get("CM_VLLM_SERVER_URL") or ""
    duration = _num(env, "CM_MLPERF_MAX_DURATION_TEST")
    return HarnessRequest(
        results_dir=env.get("CM_MLPERF_RESULTS_DIR") or os.path.join(cwd or os.getcwd(), "mlperf_results"),
        dataset_path=dataset,
        scenarios=_names(scen_raw, SCENARIO_NAMES, "scenario", "CM_MLPERF_LOADGEN_SCENARIOS"),
        modes=_names(mode_raw, MODE_NAMES, "mode", "CM_MLPERF_LOADGEN_MODES"),
        model=env["CM_MLPERF_MODEL"],
        round=env.get("CM_MLPERF_INFERENCE_VERSION") or "",   # "": the newest round with the model
        execution_mode=(env.get("CM_MLPERF_EXECUTION_MODE") or "test").lower(),
        backend=(env.get("CM_MLPERF_BACKEND") or "vllm").lower(),
        api_servers=tuple(_split(servers)),
        managed_servers=managed_servers(env, _split(servers)),
        api_model_name=env.get("CM_MLPERF_API_MODEL_NAME") or env.get("CM_VLLM_SERVER_MODEL_NAME") or "",
        api_key=api_key_of(env, os.environ),
        model_path=env.get("CM_ML_MODEL_PATH") or "",
        num_workers=_num(env, "CM_MLPERF_NUM_WORKERS", int) or 1,
        max_inflight=_num(env, "CM_MLPERF_MAX_INFLIGHT", int) or 1024,
        balance=(env.get("CM_MLPERF_BALANCE") or "least").strip().lower(),
        endpoint_window=endpoint_window(env, _split(servers)),
        offline_target_qps=_num(env, "CM_MLPERF_LOADGEN_OFFLINE_TARGET_QPS"),
        server_target_qps=_num(env, "CM_MLPERF_LOADGEN_SERVER_TARGET_QPS"),
        interactive_target_qps=_num(env, "CM_MLPERF_LOADGEN_INTERACTIVE_TARGET_QPS"),
        singlestream_target_latency=_num(env, "CM_MLPERF_LOADGEN_SINGLESTREAM_TARGET_LATENCY"),
        test_query_count=_num(env, "CM_MLPERF_LOADGEN_TEST_QUERY_COUNT", int),
        max_test_duration_s=duration,
        total_sample_count=_num(env, "CM_MLPERF_TOTAL_SAMPLE_COUNT", int),
        accuracy_sample_count=_accuracy_count(env),
        find_performance=is_yes(env.get("CM_MLPERF_FIND_PERFORMANCE")) or bool(find_target(env)),
        find_target=find_target(env),
        search_budget_s=60 * (_num(env, "CM_MLPERF_SEARCH_BUDGET") or 10),
        sweep=(env.get("CM_MLPERF_SWEEP") or "").strip(),
        size_to_host=is_yes(env.get("CM_MLPERF_SIZE_TO_HOST")),
        test_sizes=_test_sizes(env),
        performance_loads=_performance_loads(env),
        audit_conf=env.get("CM_MLPERF_AUDIT_CONF") or "",
        skip_tokenizer_check=is_yes(env.get("CM_MLPERF_SKIP_TOKENIZER_CHECK")),
        token_ids_via=env.get("CM_MLPERF_VLLM_TOKEN_IDS") or "return_token_ids",
        batch_size=_num(env, "CM_MLPERF_BATCH_SIZE", int) or 1,
        dtype=env.get("CM_MLPERF_DTYPE") or "float32",
        device=hf_device(env),
        max_tokens=_num(env, "CM_MLPERF_MAX_TOKENS", int),
        python=harness_python(env),
        loadgen_path=env.get("CM_LOADGEN_PYTHONPATH") or "",
        loadgen_version=env.get("CM_LOADGEN_VERSION") or "",
        progress=not is_yes(env.get("CM_MLPERF_NO_PROGRESS")),
        performance_dataset_path=env.get("CM_DATASET_PERFORMANCE_PATH") or "",
        compliance_dataset_path=env.get("CM_DATASET_COMPLIANCE_PATH") or "",
        audit_dir=env.get("CM_MLPERF_AUDIT_DIR") or "",
        sampling_seed=_num(env, "CM_MLPERF_SAMPLING_SEED", int) or 0,
        greedy=is_yes(env.get("CM_MLPERF_GREEDY")),
    )


def harness_python(env: dict) -> str:
    """The interpreter the harness runs in: pyenv.HARNESS_PYTHON_ENV where given (a replay's venv of
    the recorded run environment), else the one LoadGen was installed for."""
    return (env.get(HARNESS_PYTHON_ENV) or env.get("CM_LOADGEN_PYTHON") or env.get("CM_VENV_PYTHON")
            or env.get("CM_PYTHON_BIN_WITH_PATH") or sys.executable)


def find_target(env: dict) -> tuple[str, ...]:
    """--find_target=server|interactive (or both, comma-separated): the scenarios whose target
    _find-performance searches; () = the run's Server and Interactive."""
    names = {"server": "Server", "interactive": "Interactive"}
    out = []
    for part in _split(env.get("CM_MLPERF_FIND_TARGET") or ""):
        if part.lower() not in names:
            raise HarnessInputError(f"find_target={part!r}: choose server or interactive (comma-separated for both)")
        out.append(names[part.lower()])
    return tuple(out)


def env_from_outcomes(req: HarnessRequest, outcomes: list[RunOutcome]) -> dict[str, str]:
    """What the script hands to its caller."""
    worst = "VALID"
    for o in outcomes:
        if o.verdict == "FAILED" or (o.verdict == "INVALID" and worst == "VALID"):
            worst = o.verdict
    out = {"CM_MLPERF_RESULTS_DIR": os.path.abspath(req.results_dir),
           "CM_MLPERF_HARNESS_STATUS": worst,
           "CM_MLPERF_HARNESS_OUTCOMES": os.path.join(os.path.abspath(req.results_dir), "harness_outcomes.json")}
    out.update(derived_targets_env(req.results_dir))
    return out


def derived_targets_env(results_dir: str) -> dict[str, str]:
    """Targets the run derived (targets.json), as the env keys a later step of the same command
    (TEST06) reads; targets the user gave are already in its env."""
    try:
        with open(os.path.join(results_dir, "targets.json"), encoding="utf-8") as f:
            used = json.load(f)
    except (OSError, ValueError):
        return {}
    return {f"CM_MLPERF_LOADGEN_{scenario.upper()}_TARGET_QPS": f"{t['target_qps']:g}"
            for scenario, t in used.items()
            if t.get("target_qps") is not None and t.get("source") not in ("given", None)}


def _targets_used(results_dir: str) -> dict:
    try:
        with open(os.path.join(results_dir, "targets.json"), encoding="utf-8") as f:
            used = json.load(f)
    except (OSError, ValueError):
        return {}
    return used if isinstance(used, dict) else {}


def _ms(ns) -> float | None:
    return None if ns is None else float(ns) / 1e6


def outcome_records(req: HarnessRequest, outcomes: list[RunOutcome]) -> list[TestOutcome]:
    """The typed result of each test, for `state` (mlperf_llm.outcomes): LoadGen's verdict and
    the conditions it failed, the reported metric in its unit (submission.spec.RESULT_KEYS: tokens/s,
    SingleStream's p90 latency in ms), p99 latencies against their bounds, the target and where it
    came from (targets.json)."""
    used = _targets_used(req.results_dir)
    out = []
    for o in outcomes:
        s = o.summary
        reasons = [r for r in o.reasons if not r.startswith("LoadGen result is ")] or list(o.reasons)
        perf = o.mode != "accuracy"
        source = (used.get(o.scenario) or {}).get("source", "") if perf else ""
        limit = (used.get(o.scenario) or {}).get("host_limit") if o.mode == "performance" else None
        if isinstance(limit, dict) and limit.get("performance_target_qps") is not None:
            source = "the lowest load: the latency bounds are out of this host's reach"
        elif o.mode == "performance" and (used.get(o.scenario) or {}).get("performance_target_qps") is not None:
            source = "the load given for its performance test (a replay's: the recorded run's)"
        flag = f"--{TARGET_INPUTS[o.scenario]}"
        latency_target = o.scenario == "SingleStream"
        out.append(TestOutcome(
            model=req.model, scenario=o.scenario, mode=o.mode, verdict=o.verdict, directory=o.directory,
            reasons=tuple(reasons),
            metric=s.get("metric") if o.mode == "performance" else None,
            unit=(s.get("metric_unit") or "") if o.mode == "performance" else "",
            samples_per_second=s.get("samples_per_second") if perf else None,
            queries=s.get("queries"),
            ttft_p99_ms=_ms(s.get("ttft_p99_ns")) if perf else None,
            tpot_p99_ms=_ms(s.get("tpot_p99_ns")) if perf else None,
            ttft_limit_ms=_ms(s.get("ttft_limit_ns")) if perf else None,
            tpot_limit_ms=_ms(s.get("tpot_limit_ns")) if perf else None,
            target_qps=s.get("target_qps") if perf and not latency_target else None,
            target_latency_ms=_ms(s.get("target_latency_ns")) if perf else None,
            target_source=f"given as {flag}" if source == "given" else source,
            host_limit=str(limit.get("sentence", "")) if isinstance(limit, dict) else ""))
    return out
