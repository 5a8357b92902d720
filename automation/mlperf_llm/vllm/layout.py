"""vLLM on a node of GPUs: how many GPUs one server spans (tensor parallelism), how many servers the
node runs (replicas, the harness balancing the queries over them), and the settings each gets, for
one benchmark. Every choice carries where it came from; an input the user gave always wins.

The order:
1. A published vLLM result of the benchmark on the same accelerator model (benchmarks.GpuServing:
   the round, the submitter and the file that says it), of a node of as many GPUs where there is one:
   its tensor parallel size, where the node has enough GPUs for it, and its vLLM settings.
2. Otherwise the weights: the smallest tensor parallel size (a power of two dividing the node's GPUs)
   whose share of the checkpoint leaves at least KV_SHARE of each GPU's memory to the KV cache; the
   other GPUs run more replicas (a small model: one server per GPU).
3. Settings neither gives: GPU_DEFAULTS (the published H100 command of seed 004).

`choose()` decides, `Layout.env()` gives what the server step reads (only what the user left unset),
`Layout.describe()` the lines the plan and the run print.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..benchmarks import Benchmark
from ..sysinfo.gpu import accelerator_key
from .inputs import REPLICAS_KEY, env_key

KV_SHARE = 0.4                       # of each GPU's memory, at least, left for the KV cache and activations
GPU_DEFAULTS = (("max_num_seqs", 256), ("gpu_memory_utilization", 0.95), ("enable_chunked_prefill", True),
                ("max_num_batched_tokens", 2048))
GPU_DEFAULTS_SOURCE = ("where no published result on this GPU gives them: the settings of Neural Magic's published "
                       "H100 command (v4.1, open/NeuralMagic/README.md)")


@dataclass(frozen=True)
class GpuNode:
    count: int
    memory_gb: float                 # one GPU's, in the GB the systems JSON uses (the driver's MiB / 1024)
    name: str = ""                   # e.g. "NVIDIA H100 80GB HBM3", "AMD Instinct MI300X"

    @classmethod
    def from_env(cls, env: dict) -> "GpuNode | None":
        """The node detect-gpu saw (CM_GPU_COUNT, CM_GPU_MEMORY_MIB, CM_GPU_NAME); None without GPUs."""
        count = str(env.get("CM_GPU_COUNT") or "0")
        if not count.isdigit() or int(count) < 1:
            return None
        mib = str(env.get("CM_GPU_MEMORY_MIB") or "")
        return cls(int(count), int(mib) / 1024 if mib.isdigit() else 0.0, env.get("CM_GPU_NAME") or "")

    def describe(self) -> str:
        memory = f" ({self.memory_gb:.0f} GB each)" if self.memory_gb else " (memory not known)"
        return f"{self.count}x {self.name or 'GPU'}{memory}"


@dataclass(frozen=True)
class Choice:
    name: str                        # a ServeConfig field, or "replicas"
    value: object
    source: str                      # "as given", or where the value came from


@dataclass(frozen=True)
class Layout:
    node: GpuNode
    benchmark: str
    choices: tuple[Choice, ...]      # tensor_parallel_size and replicas first

    def value(self, name: str):
        return next(c.value for c in self.choices if c.name == name)

    @property
    def tensor_parallel_size(self) -> int:
        return int(self.value("tensor_parallel_size"))

    @property
    def replicas(self) -> int:
        return int(self.value("replicas"))

    def env(self) -> dict[str, str]:
        """CM_VLLM_* of every choice the user did not give (a given one is already in the env)."""
        out = {}
        for c in self.choices:
            if c.source == "as given":
                continue
            key = REPLICAS_KEY if c.name == "replicas" else env_key(c.name)
            out[key] = ("yes" if c.value else "no") if isinstance(c.value, bool) else str(c.value)
        return out

    def describe(self) -> str:
        what = f"{self.benchmark} on " if self.benchmark else ""
        lines = [f"vLLM on this node's GPUs: {what}{self.node.describe()}: {self.replicas} server(s) of "
                 f"{self.tensor_parallel_size} GPU(s) each"]
        groups: list[tuple[str, list[Choice]]] = []       # choices of one source on one line, in order
        for c in self.choices:
            if groups and groups[-1][0] == c.source and c.name not in ("tensor_parallel_size", "replicas"):
                groups[-1][1].append(c)
            else:
                groups.append((c.source, [c]))
        lines += ["  " + " ".join(f"--{c.name}={_shown(c.value)}" for c in cs) + f": {source}" for source, cs in groups]
        return "\n".join(lines)


def _shown(value) -> str:
    return ("yes" if value else "no") if isinstance(value, bool) else str(value)


def _given(env: dict, name: str) -> str:
    return str(env.get(REPLICAS_KEY if name == "replicas" else env_key(name)) or "").strip()


def _published(bench: Benchmark | None, node: GpuNode):
    """The published layout of this accelerator model on a node of as many GPUs, else the first whose
    tensor parallel size this node has (None: none)."""
    if bench is None or bench.gpu is None:
        return None
    model = accelerator_key(node.name)[1]
    fits = [p for p in bench.gpu.published if model and p.accelerator == model
            and p.tensor_parallel_size <= node.count and node.count % p.tensor_parallel_size == 0]
    return next((p for p in fits if p.gpus == node.count), fits[0] if fits else None)


def _by_weights(weights_gb: float | None, what: str, node: GpuNode) -> tuple[int, str]:
    """(tensor parallel size, why) from the weights and one GPU's memory."""
    sizes = [t for t in (1, 2, 4, 8, 16) if t <= node.count and node.count % t == 0]
    if not weights_gb or not node.memory_gb:
        return node.count, (f"all {node.count} GPUs: the {'weights' if not weights_gb else 'GPU memory'} "
                            "not known, so one server spans the node")
    room = (1 - KV_SHARE) * node.memory_gb
    for t in sizes:
        if weights_gb / t <= room:
            left = node.memory_gb - weights_gb / t
            return t, (f"{what}: {weights_gb:g} GB of weights over {t} GPU(s) leave {left:.0f} GB of "
                       f"{node.memory_gb:.0f} GB on each for the KV cache (at least {KV_SHARE:.0%}); no "
                       "published vLLM result on this GPU")
    return sizes[-1], (f"{what}: {weights_gb:g} GB of weights need more than {node.count} GPU(s) of "
                       f"{node.memory_gb:.0f} GB with {KV_SHARE:.0%} left for the KV cache: one server "
                       "spans the node (more nodes: docs/ray.md)")


def choose(bench: Benchmark | None, node: GpuNode, env: dict, weights_gb: float | None = None) -> Layout:
    """The layout of `bench` (None: a server of no benchmark, sized by `weights_gb`) on `node`; `env`
    holds what the user gave (CM_VLLM_*, CM_VLLM_REPLICAS)."""
    published = _published(bench, node)
    what = ""
    if bench is not None and bench.gpu is not None:
        weights_gb = bench.gpu.weights_gb
        what = bench.gpu.checkpoint
    elif weights_gb:
        what = "the checkpoint"
    choices: list[Choice] = []

    given_tp = _given(env, "tensor_parallel_size")
    width = int(given_tp) * int(_given(env, "pipeline_parallel_size") or 1) if given_tp.isdigit() else None
    if width is not None:
        choices.append(Choice("tensor_parallel_size", int(given_tp), "as given"))
    elif published is not None:
        width = published.tensor_parallel_size
        choices.append(Choice("tensor_parallel_size", width, f"as published: {published.source}"))
    else:
        width, why = _by_weights(weights_gb, what, node)
        choices.append(Choice("tensor_parallel_size", width, why))

    given_replicas = _given(env, "replicas")
    if given_replicas:
        choices.append(Choice("replicas", given_replicas, "as given"))
    else:
        n = max(1, node.count // max(1, width))
        choices.append(Choice("replicas", n, f"{node.count} GPU(s) / {width} per server; the harness balances "
                                             "the queries over the servers" if n > 1 else
                                             f"one server of {width} GPU(s) on {node.count}"))

    settings = dict(published.settings) if published is not None else {}
    for name, value in [*settings.items(), *((k, v) for k, v in GPU_DEFAULTS if k not in settings)]:
        if _given(env, name):
            choices.append(Choice(name, _given(env, name), "as given"))
        elif name in settings:
            choices.append(Choice(name, value, f"as published: {published.source}"))
        else:
            choices.append(Choice(name, value, GPU_DEFAULTS_SOURCE))
    return Layout(node, bench.name if bench is not None else "", tuple(choices))
