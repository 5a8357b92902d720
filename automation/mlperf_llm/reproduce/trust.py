"""What a replay takes from a record (or a measurement README's command) without being told to trust
it: the one closed list, owned here (docs/reproduce.md, "What a replay runs").

A record is written by whoever made the submission, and a third party replays it: it must not be
able to run another script, install from an index of its choosing, point the replayer's secrets at
a host it chose, start or join network services, or add server flags. So a replay repeats only the
benchmark app (`run-mlperf,inference` and its own variations), with the app's inputs that choose
what the benchmark measures, a few `--env` names that do the same, and dependency overrides that
only pick variations of the app's own dependencies. Everything else is named in the plan and
refused, unless the replayer passes `--trust_record=yes`, which replays the record as it stands.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from cmcontract.secret import is_secret

FLAG = "trust_record"
APP_TAGS = ("run-mlperf", "inference")
APP_ALIASES = ("", "run-mlperf-inference-app")
# the app's own variations (script/run-mlperf-inference-app/_cm.yaml); `_model.X` and `_rX.Y` by pattern
VARIATIONS = ("embedded", "performance-only", "accuracy-only", "find-performance", "submission", "full",
              "all-scenarios")
VARIATION_PATTERNS = (re.compile(r"^r\d+\.\d+$"), re.compile(r"^model\.[A-Za-z0-9._-]+$"))
# the app's inputs that choose what the benchmark runs and how it is measured and filed
INPUTS = frozenset((
    "model", "scenario", "division", "category", "device", "framework", "implementation", "execution_mode",
    "compliance", "quantization", "vllm_model_name", "hw_name", "submitter", "sut_json",
    "test_query_count", "test_sizes", "test06_query_count", "accuracy_sample_count", "max_test_duration",
    "offline_target_qps", "server_target_qps", "interactive_target_qps", "singlestream_target_latency",
    "find_target", "search_budget", "sweep", "num_workers", "endpoint_window", "balance",
    "max_model_len", "max_num_seqs", "gpu_memory_utilization", "tensor_parallel_size", "replicas",
    "api_server",       # kept only where it is this machine (loopback): checked below
    "results_dir", "submission_dir", "inference_src",     # replaced by the replay's own (replay.py)
    "vllm_python",      # a path of the original machine: never run, said (replay.py)
    "docker",           # vLLM served from an image built here from the recorded vLLM venv
    "container_engine",     # a program of the original machine: never run, said (replay.py)
))
# why the app's other inputs are not replayed from a record
NOT_REPLAYED = {
    "ray_address": "joins a Ray cluster at an address the record chose (a Ray head runs code on its nodes)",
    "ray_start": "starts a Ray node, whose ports listen on every interface",
    "ray_nodes": "starts Ray nodes, whose ports listen on every interface",
    "ray_node_ip": "a Ray node's address", "ray_port": "a Ray node's port", "ray_num_cpus": "a Ray node's CPUs",
    "ray_wait": "waits for Ray nodes",
    "usage_stats": "would send vLLM's and Ray's usage statistics to their makers",
    "keep_server": "leaves a server running after the replay",
}
# --env names that only choose what the benchmark computes (precision, lengths, tokens)
ENV = frozenset(("CM_VLLM_DTYPE", "CM_MLPERF_DTYPE", "CM_MLPERF_MAX_TOKENS", "CM_VLLM_MAX_MODEL_LEN",
                 "CM_VLLM_MAX_NUM_SEQS", "CM_MLPERF_INFERENCE_VERSION",
                 "CM_MLPERF_LOADGEN_SINGLESTREAM_TARGET_LATENCY"))
# the app's dependencies (their `names:`) whose variations a record may choose, and nothing else of them
ADR_NAMES = frozenset(("ml-model", "dataset", "vllm-server", "mlperf-harness", "accuracy", "compliance",
                       "submission", "submission-checker", "mlperf-implementation", "inference-src"))
ADR_TAGS = re.compile(r"^_[A-Za-z0-9._-]+(,_[A-Za-z0-9._-]+)*$")


@dataclass
class Screened:
    """What a record asks for, split: what a replay runs, and what it does not run unless trusted
    (each 'what: why')."""
    tags: list = field(default_factory=list)
    inputs: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    adr: dict = field(default_factory=dict)
    untrusted: list = field(default_factory=list)

    def refusal(self) -> str:
        return ("the record asks for what a replay does not run unless you trust the record: "
                + "; ".join(self.untrusted) + f". Read it, then pass --{FLAG}=yes to replay it as it stands")


def _variation_ok(tag: str) -> bool:
    name = tag[1:]
    return tag.startswith("_") and (name in VARIATIONS or any(p.match(name) for p in VARIATION_PATTERNS))


def loopback(url: str) -> bool:
    """An http(s) URL of this machine: localhost or a loopback address."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return False
    if parts.scheme not in ("http", "https"):
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def screen(tags: list, inputs: dict, env: dict, adr: dict, alias: str = "", trusted: bool = False) -> Screened:
    """The record's request, screened against the closed lists above; `trusted` (--trust_record=yes)
    keeps all of it, and `untrusted` still names what it keeps beyond them."""
    out = Screened()
    if alias not in APP_ALIASES:
        out.untrusted.append(f"the script {alias!r}: a replay runs only the benchmark app (run-mlperf-inference-app)")
    if list(tags[:2]) != list(APP_TAGS):
        out.untrusted.append(f"--tags={','.join(tags)}: a replay runs only the benchmark app "
                             f"(--tags={','.join(APP_TAGS)},...)")
    for tag in tags[2:]:
        if _variation_ok(tag):
            out.tags.append(tag)
        else:
            out.untrusted.append(f"the tag {tag}: not a variation of the benchmark app")
    out.tags = list(tags[:2]) + out.tags
    for name, value in inputs.items():
        if is_secret(name):             # never in a record: the plan asks the replayer for it (replay.py)
            out.inputs[name] = value
        elif name in NOT_REPLAYED:
            out.untrusted.append(f"--{name}={value}: {NOT_REPLAYED[name]}")
        elif name not in INPUTS:
            out.untrusted.append(f"--{name}={value}: not an input of the benchmark app that a replay repeats "
                                 "(an input of another step, such as pip's arguments, runs what the record chose)")
        elif name == "api_server" and not all(loopback(u.strip()) for u in str(value).split(",") if u.strip()):
            out.untrusted.append(f"--api_server={value}: sends the replay's queries to a machine the record chose")
        else:
            out.inputs[name] = value
    for name, value in env.items():
        if name in ENV or is_secret(name):     # a secret's value is not in a record (replay.py asks for it)
            out.env[name] = value
        else:
            out.untrusted.append(f"--env.{name}={value}: not an --env name a replay repeats (an environment "
                                 "variable reaches every step and process: an endpoint, an index or a path of the "
                                 "record's choosing)")
    for name, over in adr.items():
        ok = name in ADR_NAMES and isinstance(over, dict) and set(over) <= {"tags"} \
            and ADR_TAGS.match(str(over.get("tags", "_")))
        if ok:
            out.adr[name] = over
        else:
            out.untrusted.append(f"--adr.{name}={over}: a dependency override a replay does not repeat (only "
                                 "variations, `_x`, of the app's own dependencies)")
    if trusted:
        out.tags, out.inputs, out.env, out.adr = list(tags), dict(inputs), dict(env), dict(adr)
    return out
