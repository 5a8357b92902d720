"""What a replay of a published result would run here, per test, and what this machine lacks for it:
the round, benchmark, division and scenario, the published target, the system (accelerators, kind and
count), the serving engine and how the server was set up (a `vllm serve` line of the submitter's
README, or the engine settings of the code folder's YAML), the weights, and where the plan cannot
follow the submitter (another engine, a checkpoint on the submitter's own disk, no such accelerators
here). Built from what every folder has (logs, user.conf, systems and measurement JSONs); a recorded
command is one more source."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..benchmarks import BENCHMARKS
from ..sysinfo.gpu import VENDOR_LABELS, accelerator_key, same_model
from .reader import PublishedResult, PublishedTest
from .translate import DROP, translate

SERVER_KEYS = ("tensor_parallel_size", "pipeline_parallel_size", "max_num_seqs", "max_model_len", "quantization",
               "max_num_batched_tokens", "gpu_memory_utilization", "enable_chunked_prefill", "kv_cache_dtype",
               "dtype", "enforce_eager", "block_size")
ENGINES = (("vllm", "vLLM"), ("tensorrt", "TensorRT-LLM"), ("trt-llm", "TensorRT-LLM"), ("sglang", "SGLang"))


def model_label(key: tuple[str, str]) -> str:
    vendor, model = key
    return " ".join(w for w in (VENDOR_LABELS.get(vendor, vendor), model.upper()) if w) or "accelerator"


@dataclass(frozen=True)
class HostFacts:
    """What this machine has that a replay needs: its accelerators, their model's name (one for all,
    or just the vendor, "NVIDIA GPU", where no tool named them) and, where known, each one's name as
    nvidia-smi lists them (a host of two models)."""
    accelerators: int = 0
    accelerator_name: str = ""
    accelerator_names: tuple[str, ...] = ()

    def devices(self) -> list[str]:
        """One name per accelerator ('' for those no name is known of)."""
        names = list(self.accelerator_names)
        return names + [self.accelerator_name] * max(0, self.accelerators - len(names))

    def describe(self) -> str:
        """'4x Tesla T4', '2x NVIDIA H100 80GB HBM3 and 1x Tesla T4', '8x accelerators of a model not known'."""
        names = self.devices()
        if not names:
            return "no accelerators"
        counts = {n: names.count(n) for n in dict.fromkeys(names)}
        return " and ".join(f"{c}x {n or 'accelerators of a model not known'}" for n, c in counts.items())


@dataclass
class TestPlan:
    test: PublishedTest
    engine: str                                  # as published: vLLM, TensorRT-LLM, SGLang, or the framework text
    model: str                                   # what the server served (a hub id or a path on their disk)
    server: dict = field(default_factory=dict)   # vLLM settings, as published
    server_source: str = ""
    replicas: int = 1                            # servers of tensor_parallel_size x pipeline_parallel_size devices
    accelerators: int = 0                        # published: nodes x per node
    notes: list[str] = field(default_factory=list)      # where the replay cannot follow the submitter
    missing: list[str] = field(default_factory=list)    # what this machine lacks, with the fix


def engine_of(test: PublishedTest) -> str:
    framework = str(test.system_desc.get("framework", ""))
    lowered = framework.lower()
    return next((name for key, name in ENGINES if key in lowered), framework.split(",")[0].strip() or "unknown")


def _number(value):
    if isinstance(value, bool):
        return value
    try:
        f = float(value)
        return int(f) if f == int(f) else f
    except (TypeError, ValueError):
        return value


def _from_yaml(root: str, test: PublishedTest) -> tuple[dict, str, str]:
    """(settings, model, file) from the engine YAML of the test's scenario (vllm_engine_config)."""
    family = BENCHMARKS[test.benchmark].family if test.benchmark in BENCHMARKS else test.benchmark
    # the YAML of the published accelerator first (code folders keep those of other machines too)
    hints = [w.lower() for w in re.findall(r"[A-Za-z]+\d+[A-Za-z]*", str(test.system_desc.get("accelerator_model_name", "")))]
    files = sorted(test.engine_files, key=lambda f: (family not in f, not any(h in Path(f).name.lower() for h in hints), f))
    for rel in files:
        if not rel.endswith((".yaml", ".yml")):
            continue
        try:
            data = yaml.safe_load(Path(root, rel).read_text(encoding="utf-8", errors="replace"))
        except (OSError, yaml.YAMLError):
            continue
        engine = (data or {}).get("vllm_engine_config") if isinstance(data, dict) else None
        if isinstance(engine, dict):
            return ({k: _number(engine[k]) for k in SERVER_KEYS if k in engine}, str(engine.get("model", "")), rel)
    return {}, "", ""


def _from_command(test: PublishedTest) -> tuple[dict, str, str]:
    """(settings, model, where) from the `vllm serve` line of the model the recorded command names."""
    named = test.made_with.options().get("vllm_model_name", "") if test.made_with else ""
    lines = [c for c in test.server_commands if c.kind == "vllm"]
    chosen = next((c for c in lines if named and c.model() == named), lines[0] if lines else None)
    if chosen is None:
        return {}, named, ""
    opts = chosen.options()
    settings = {k: _number(opts[k]) for k in SERVER_KEYS if k in opts}
    return settings, chosen.model() or named, "the `vllm serve` line of the submitter's README"


def plan_test(root: str, test: PublishedTest, host: HostFacts) -> TestPlan:
    engine = engine_of(test)
    settings, model, source = _from_command(test)
    if not settings:
        settings, yaml_model, rel = _from_yaml(root, test)
        model, source = model or yaml_model, (f"{rel} (the engine YAML of its code folder)" if rel else "")
    per_node = int(_number(test.system_desc.get("accelerators_per_node", 0)) or 0)
    nodes = int(_number(test.system_desc.get("number_of_nodes", 1)) or 1)
    plan = TestPlan(test, engine, model, settings, source, accelerators=per_node * nodes)
    width = int(settings.get("tensor_parallel_size", 1) or 1) * int(settings.get("pipeline_parallel_size", 1) or 1)
    if plan.accelerators and width and plan.accelerators % width == 0:
        plan.replicas = plan.accelerators // width
    if engine != "vLLM":
        plan.notes.append(f"published on {engine}: this plan serves the model with vLLM, so a replay compares "
                          "engines rather than reproducing the result")
    elif "mlperf" in str(test.system_desc.get("framework", "")).lower() or "dev" in str(test.system_desc.get("framework", "")):
        plan.notes.append(f"published on a vLLM build of its own ({test.system_desc.get('framework')}): a "
                          "replay on released vLLM differs by what that build changed")
    if model.startswith("/"):
        plan.notes.append(f"the weights are a path on the submitter's machine ({model}): make them as "
                          "documentation/calibration.md says, or pass --model_path")
    if not settings:
        plan.notes.append("no server settings published (no `vllm serve` line, no engine YAML): vLLM's defaults")
    if plan.accelerators:
        _check_accelerators(plan, test, per_node, nodes, host)
    if model.startswith("meta-llama/"):
        plan.missing.append(f"access to the gated {model} on Hugging Face: request it, then set HF_TOKEN")
    return plan


def _check_accelerators(plan: TestPlan, test: PublishedTest, per_node: int, nodes: int, host: HostFacts) -> None:
    """What this machine lacks of the published accelerators, by model (accelerator_key) and count:
    none at all, none of the published model, or fewer of it than nodes x per node."""
    name = str(test.system_desc.get("accelerator_model_name", "")).strip() or "accelerators"
    need, want = plan.accelerators, accelerator_key(name)
    fix = "--allow_device_change=yes to replay on this one (throughput not comparable)"
    if not host.accelerators:
        plan.missing.append(f"{need}x {name}: this machine has no accelerators; run the replay on such a "
                            "machine, or --allow_device_change=yes to replay on this one (nothing comparable)")
        return
    keys = [accelerator_key(n) for n in host.devices()]
    have = [k for k in keys if same_model(want, k)]
    if not have:
        plan.missing.append(f"{need}x {name} (published) vs {host.describe()} here: another accelerator model "
                            f"({model_label(want)}, not {' or '.join(dict.fromkeys(model_label(k) for k in keys))}); "
                            f"run the replay on a machine with {need} of them, or {fix}")
    elif len(have) < need:
        spread = f" ({nodes} nodes x {per_node})" if nodes > 1 else ""
        plan.missing.append(f"{need}x {name} published{spread}, {len(have)} here ({host.describe()}): "
                            f"{need - len(have)} more {model_label(want)} needed; run the replay on a machine "
                            f"with {need}, or {fix}")
    if have and want[1] and not all(k[1] for k in have):
        plan.notes.append(f"the model of this machine's accelerators is not known ({host.describe()}): only "
                          f"their vendor and count were checked against the published {name}")
    elif have and not want[1]:
        plan.notes.append(f"the published accelerator model is not known ({name}): only the count was checked")


def plan_published(result: PublishedResult, host: HostFacts) -> list[TestPlan]:
    return [plan_test(result.root, t, host) for t in result.tests]


# the published server settings the main command takes as its own inputs
APP_SERVER_INPUTS = ("tensor_parallel_size", "max_num_seqs")


def replay_request(plans: list[TestPlan]) -> dict:
    """This tool's one command for the published tests of one benchmark (the first one's): from its
    recorded CM/MLC command where it has one (translated, published/translate.py), else from what
    the folder says (round, benchmark, division, category, scenarios, a valid run); every scenario's
    published target; the server as published (the served model, tensor parallelism, max_num_seqs,
    one replica per group of devices)."""
    from ..harness.userconf import TARGET_INPUTS
    if not plans:
        return {}
    first = plans[0]
    t = first.test
    same = [p for p in plans if p.test.benchmark == t.benchmark]
    if t.made_with is not None:
        request = dict(translate(t.made_with).request)
    else:
        request = {"tags": "run-mlperf,inference,_full", "model": t.benchmark, "division": t.division,
                   "execution_mode": "valid"}
        if t.system_desc.get("system_type") in ("datacenter", "edge"):
            request["category"] = t.system_desc["system_type"]
    if t.round and f"_r{t.round}" not in request["tags"].split(","):
        request["tags"] += f",_r{t.round}"
    request["scenario"] = ",".join(sorted({p.test.scenario for p in same}))
    for p in same:
        name = TARGET_INPUTS.get(p.test.scenario)
        if name and p.test.target_qps and name not in request and p.test.scenario != "SingleStream":
            request[name] = f"{p.test.target_qps:g}"
    if first.model and not first.model.startswith("/"):
        request.setdefault("vllm_model_name", first.model)
    for key in APP_SERVER_INPUTS:
        if key in first.server:
            request[key] = str(first.server[key])
    if first.replicas > 1:
        request["replicas"] = str(first.replicas)
    request["quiet"] = True
    return request


def _qps(x) -> str:
    return "-" if x is None else f"{x:g}"


def render(result: PublishedResult, plans: list[TestPlan]) -> str:
    """The plan in words, one block per test, then the findings."""
    lines = [f"Published result: {result.root}"]
    for p in plans:
        t = p.test
        lines += ["", f"{t.submitter} ({t.division}), round v{t.round or '?'} ({t.round_source or 'not found'}): "
                      f"{t.benchmark} {t.scenario}, {t.system}",
                  f"  published: target {_qps(t.target_qps)} QPS, {t.validity or 'no verdict'}"
                  + "".join(f", {k.replace('_', ' ')} {v:g}" for k, v in t.performance.items()
                            if k.endswith("second")),
                  "  accuracy: " + (", ".join(f"{k} {v:g}" for k, v in t.accuracy.items()) or "none published"),
                  f"  system: {p.accelerators or '?'}x {t.system_desc.get('accelerator_model_name', '?')} "
                  f"({t.system_desc.get('number_of_nodes', 1)} node(s)); framework: "
                  f"{t.system_desc.get('framework', '?')}",
                  f"  weights (measurement JSON): {t.weights.get('weight_data_types', '?')}, from "
                  f"{t.weights.get('starting_weights_filename', '?')}",
                  f"  made by: {t.made_by.upper() + ' (its command is one more source)' if t.made_by else 'no CM or MLC command'}",
                  f"  server: {p.engine}, model {p.model or '?'}, {p.replicas} replica(s) of "
                  f"{p.server.get('tensor_parallel_size', 1)} device(s)"
                  + (f"; {', '.join(f'{k}={v}' for k, v in p.server.items())}" if p.server else "")
                  + (f" (from {p.server_source})" if p.server_source else "")]
        if t.made_with is not None:
            tr = translate(t.made_with)
            dropped = [r[0] for r in tr.rows if r[2] == DROP]
            lines.append(f"  as this tool's command: {' '.join(tr.argv)}"
                         + (f" (not reproduced: {', '.join(dropped)})" if dropped else ""))
        lines += [f"  note: {n}" for n in p.notes]
        lines += [f"  missing here: {m}" for m in p.missing] or ["  missing here: nothing"]
    if result.findings:
        lines += ["", f"Findings ({len(result.findings)}):"] + [f"  - {f}" for f in result.findings]
    return "\n".join(lines)
