"""Settings for vLLM chosen from the machine it runs on: threads and core binding, dtype, KV cache, batch limits.

`detect_machine()` reads the machine (CPU ids in this process's affinity, CPU flags, free memory);
`model_shape()` reads a checkpoint's config.json; `choose()` returns a `Tuning` (env variables for the
server process, ServeConfig fields, and one reason per choice); `apply()` fills only the ServeConfig
fields the user left unset and never overrides env variables the user set. `describe()` prints it.

On CPUs the choices are vLLM's CPU backend knobs (docs: "CPU - vLLM", VLLM_CPU_* variables):
- VLLM_CPU_OMP_THREADS_BIND / VLLM_CPU_NUM_OF_RESERVED_CPU: on small machines (< 4 usable CPUs) that are
  idle, inference threads are bound to every CPU (measured on 2 idle cores: 1.3-1.4x the tokens/s of
  vLLM's "auto", which keeps one CPU for the API server and engine core); when other jobs already keep
  those CPUs busy (other processes use half the CPUs or more, sampled from /proc/stat for 0.5 s
  when the server is configured: the load average lags a minute behind), OpenMP threads that wait for a descheduled
  sibling make all-CPU binding slower (measured 0.5x), so "auto" is kept; on larger machines inference
  gets all CPUs but one per NUMA node.
- VLLM_ENABLE_V1_MULTIPROCESSING=0 + --distributed-executor-backend=uni on small machines (< 4 CPUs, no
  tensor/pipeline parallelism): the worker runs inside the engine-core process (the OpenAI server keeps
  its engine core in a process of its own); three processes with busy-polling queues on 2 cores took CPU
  from inference (two: 1.6x tokens/s, ready sooner). The variable is what keeps vLLM's CPU platform
  from replacing `uni` by `mp`.
- VLLM_CPU_KVCACHE_SPACE (GiB): what max_num_seqs sequences of max_model_len tokens need, capped at half of
  the memory left after the weights and 2 GiB for the runtime, counted where vLLM checks it: on the NUMA
  node its inference threads bind to (memory.py), with the page cache and reclaimable slab as free, within
  the cgroup's limit; the machine's MemAvailable only where the kernel shows no node.
- dtype: bfloat16 where the CPU has native bf16 (AVX512_BF16 or AMX), else float32.
- max_num_seqs / max_num_batched_tokens: the whole expected batch is admitted at once and its prefill fits
  one step (decode throughput on CPU grows with the batch).
On GPUs the settings are the layout's (layout.py: per benchmark and accelerator model).
"""
from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from . import memory
from .command import ServeConfig

GIB = 1024 ** 3
_BYTES = {'bfloat16': 2, 'float16': 2, 'half': 2, 'float32': 4, 'float': 4}


@dataclass(frozen=True)
class Machine:
    cpus: tuple[int, ...]
    numa_nodes: int
    mem_available_bytes: int
    flags: frozenset[str]
    gpus: int = 0
    cpus_in_use: float = 0.0      # CPUs' worth of time other processes used just before configuring
    nodes: tuple[memory.NodeMemory, ...] = ()     # NUMA nodes with their memory; () = none shown
    mems_allowed: tuple[int, ...] | None = None     # this process's Mems_allowed_list
    cgroup_available: int | None = None             # bytes left under the cgroup's limit (None: no limit)

    @property
    def busy(self) -> bool:
        """Other jobs already use about half the CPUs or more."""
        return self.cpus_in_use >= len(self.cpus) / 2

    @property
    def native_bf16(self) -> bool:
        return bool({'avx512_bf16', 'amx_bf16'} & self.flags)


@dataclass(frozen=True)
class ModelShape:
    layers: int
    kv_heads: int
    head_dim: int
    params: int          # approximate parameter count (from the weights' size when known)
    max_position: int

    def kv_bytes_per_token(self, dtype_bytes: int) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * dtype_bytes


@dataclass(frozen=True)
class Workload:
    """What the server will be asked to do: how many sequences at once, how long, prompt size."""

    concurrency: int = 64
    max_model_len: int | None = None
    prompt_tokens: int = 1024
    dtype: str | None = None          # the dtype the user chose, if any (the KV cache is sized for it)
    single_process_ok: bool = True    # no tensor/pipeline parallelism asked for
    ranks: int = 1                    # CPU workers (tensor x pipeline parallel): each checks its own node
    threads_bind: str | None = None   # VLLM_CPU_OMP_THREADS_BIND as the user set it (it decides the node)


@dataclass(frozen=True)
class Tuning:
    env: dict[str, str] = field(default_factory=dict)
    serve: dict = field(default_factory=dict)
    reasons: tuple[str, ...] = ()


# ---------------------------------------------------------------- detection

def _meminfo_available(text: str) -> int:
    for line in text.splitlines():
        if line.startswith('MemAvailable:'):
            return int(line.split()[1]) * 1024
    raise ValueError('MemAvailable missing from /proc/meminfo')


def _cpuinfo_flags(text: str) -> frozenset[str]:
    for line in text.splitlines():
        if line.startswith('flags'):
            return frozenset(line.split(':', 1)[1].split())
    return frozenset()


def _numa_nodes(root: Path = Path('/sys/devices/system/node')) -> int:
    try:
        return max(1, len([p for p in root.iterdir() if p.name.startswith('node') and p.name[4:].isdigit()]))
    except OSError:
        return 1


def _cpu_times(text: str, cpus) -> tuple[int, int]:
    """(busy, total) jiffies of the given CPUs from /proc/stat text."""
    busy = total = 0
    wanted = {f'cpu{c}' for c in cpus}
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] in wanted:
            values = [int(v) for v in parts[1:9]]      # user nice system idle iowait irq softirq steal
            total += sum(values)
            busy += sum(values) - values[3] - values[4]
    return busy, total


def cpus_in_use(cpus, interval_s: float = 0.5, stat: Path = Path('/proc/stat')) -> float:
    """How many of `cpus` other processes keep busy right now (0.0 where /proc/stat is missing)."""
    try:
        b0, t0 = _cpu_times(stat.read_text(), cpus)
        time.sleep(interval_s)
        b1, t1 = _cpu_times(stat.read_text(), cpus)
    except (OSError, ValueError):
        return 0.0
    return len(cpus) * (b1 - b0) / (t1 - t0) if t1 > t0 else 0.0


def detect_machine(gpus: int = 0, root: Path = Path('/'), sample_s: float = 0.5) -> Machine:
    """The machine under `root` (tests pass a folder of recorded files; sample_s=0 skips the CPU sampling)."""
    root = Path(root)
    cpus = memory.read_status_list(root, 'Cpus_allowed_list')
    if cpus is None:
        cpus = tuple(sorted(os.sched_getaffinity(0))) if hasattr(os, 'sched_getaffinity') \
            else tuple(range(os.cpu_count() or 1))
    nodes = memory.read_nodes(root)
    return Machine(cpus=cpus, numa_nodes=len(nodes) or _numa_nodes(root / 'sys/devices/system/node'),
                   mem_available_bytes=_meminfo_available((root / 'proc/meminfo').read_text()),
                   flags=_cpuinfo_flags((root / 'proc/cpuinfo').read_text()), gpus=gpus,
                   cpus_in_use=cpus_in_use(cpus, sample_s, root / 'proc/stat') if sample_s > 0 else 0.0,
                   nodes=nodes, mems_allowed=memory.read_status_list(root, 'Mems_allowed_list'),
                   cgroup_available=memory.read_cgroup_available(root))


def model_shape(model_dir: str | Path) -> ModelShape | None:
    """Shape of a local HF checkpoint (None for a hub id or an unreadable config)."""
    cfg_path = Path(model_dir) / 'config.json'
    try:
        cfg = json.loads(cfg_path.read_text())
    except (OSError, ValueError):
        return None
    cfg = cfg.get('text_config', cfg)
    try:
        heads = int(cfg['num_attention_heads'])
        head_dim = int(cfg.get('head_dim') or int(cfg['hidden_size']) // heads)
        weights = sum(p.stat().st_size for p in Path(model_dir).glob('*.safetensors'))
        return ModelShape(layers=int(cfg['num_hidden_layers']), kv_heads=int(cfg.get('num_key_value_heads', heads)),
                          head_dim=head_dim, params=weights // 2,
                          max_position=int(cfg.get('max_position_embeddings', 2048)))
    except (KeyError, ValueError, TypeError):
        return None


# ---------------------------------------------------------------- choices

def cpu_list(cpus) -> str:
    """(0,1,2,5) -> '0-2,5' as VLLM_CPU_OMP_THREADS_BIND expects."""
    out, start, prev = [], None, None
    for c in sorted(cpus):
        if start is None:
            start = prev = c
        elif c == prev + 1:
            prev = c
        else:
            out.append(f'{start}-{prev}' if prev != start else str(start))
            start = prev = c
    if start is not None:
        out.append(f'{start}-{prev}' if prev != start else str(start))
    return ','.join(out)


def choose_cpu(machine: Machine, shape: ModelShape | None, work: Workload) -> Tuning:
    env, serve, why = {}, {}, []
    n = len(machine.cpus)
    if n < 4 and machine.busy:
        env['VLLM_CPU_OMP_THREADS_BIND'] = 'auto'
        why.append(f'{n} usable CPU(s), busy ({machine.cpus_in_use:.1f} CPUs in use by other processes): inference bound by vLLM '
                   f'"auto" to {max(1, n - 1)} CPU(s), one kept for the API server and engine core (on a busy '
                   'machine binding every CPU measured 0.5x)')
    elif n < 4:
        env['VLLM_CPU_OMP_THREADS_BIND'] = cpu_list(machine.cpus)
        why.append(f'{n} usable CPU(s), idle ({machine.cpus_in_use:.1f} CPUs in use by other processes): inference threads on '
                   f'all of them ({env["VLLM_CPU_OMP_THREADS_BIND"]}), sharing with the API server (measured '
                   '1.3-1.4x the tokens/s of vLLM "auto" on 2 idle cores)')
    else:
        reserved = machine.cpus[-machine.numa_nodes:] if machine.numa_nodes == 1 else ()
        if reserved:
            env['VLLM_CPU_OMP_THREADS_BIND'] = cpu_list(c for c in machine.cpus if c not in reserved)
            env['VLLM_CPU_NUM_OF_RESERVED_CPU'] = str(len(reserved))
            why.append(f'{n} usable CPUs: inference threads on {env["VLLM_CPU_OMP_THREADS_BIND"]}, CPU '
                       f'{cpu_list(reserved)} kept for the API server and engine core')
        else:
            env['VLLM_CPU_OMP_THREADS_BIND'] = 'auto'
            why.append(f'{n} usable CPUs on {machine.numa_nodes} NUMA nodes: vLLM "auto" binds per node')

    if n < 4 and work.single_process_ok:
        env['VLLM_ENABLE_V1_MULTIPROCESSING'] = '0'
        serve['distributed_executor_backend'] = 'uni'
        why.append(f'{n} usable CPU(s): the worker inside the engine-core process (uni executor; '
                   'two processes instead of three): one busy-polling message queue fewer taking CPU '
                   'from inference; measured 1.6x the tokens/s and ready 16 s sooner on 2 cores')

    if work.dtype and work.dtype != 'auto':
        dtype = work.dtype
        why.append(f'dtype {dtype}: as given')
    else:
        dtype = 'bfloat16' if machine.native_bf16 else 'float32'
        serve['dtype'] = dtype
        why.append('dtype bfloat16: the CPU has native bf16 (AVX512_BF16/AMX)' if dtype == 'bfloat16'
                   else 'dtype float32: no native bf16 on this CPU (no AVX512_BF16/AMX), bf16 would be emulated')

    seqs = max(1, work.concurrency)
    serve['max_num_seqs'] = seqs
    max_len = work.max_model_len or (shape.max_position if shape else 2048)
    batched = max(2048, min(seqs * work.prompt_tokens, 16384))
    serve['max_num_batched_tokens'] = batched
    why.append(f'max_num_seqs {seqs}: the whole expected batch decodes together; max_num_batched_tokens '
               f'{batched}: the prefill of that batch in as few steps as memory allows')

    bind = work.threads_bind or env['VLLM_CPU_OMP_THREADS_BIND']
    free, where = kv_memory(machine, bind, work.ranks)
    if shape is not None:
        weights = shape.params * _BYTES.get(dtype, 2) // max(1, work.ranks)
        per_token = shape.kv_bytes_per_token(_BYTES.get(dtype, 2))
        need = seqs * max_len * per_token
        spare = max(0, free - weights - memory.RUNTIME_GIB * GIB)
        gib = max(1, min(math.ceil(need * 1.1 / GIB), int(spare * 0.5 // GIB)))
        why.append(f'KV cache {gib} GiB: {seqs} seqs x {max_len} tokens x {per_token} B/token = '
                   f'{need / GIB:.2f} GiB needed, at most half of what is left after {weights / GIB:.2f} GiB of '
                   f'weights and {memory.RUNTIME_GIB} GiB for the runtime in {where}')
    else:
        spare = max(0, free - 4 * GIB)
        gib = max(1, int(spare * 0.4 // GIB))
        why.append(f'KV cache {gib} GiB: 40% of what is left after 4 GiB (model shape unknown) in {where}')
    env['VLLM_CPU_KVCACHE_SPACE'] = str(gib)
    return Tuning(env=env, serve=serve, reasons=tuple(why))


def kv_memory(machine: Machine, bind: str, ranks: int = 1) -> tuple[int, str]:
    """(bytes one CPU worker can give its KV cache and weights, where that was counted): the smallest
    of the nodes the workers check (memory.nodes_checked), within the cgroup's limit."""
    checked = memory.nodes_checked(bind, machine.nodes, machine.mems_allowed, ranks)
    machine_text = f'{machine.mem_available_bytes / GIB:.1f} GiB available on the whole machine'
    if not checked:
        free = machine.mem_available_bytes
        where = f'the {machine_text} (the kernel shows no NUMA node)'
    else:
        by_id = {n.node: n for n in machine.nodes}
        node = min((by_id[i] for i in set(checked)), key=lambda n: n.available)
        free = node.available
        workers = (f'{ranks} workers bind to node(s) {",".join(map(str, sorted(set(checked))))}'
                   if ranks > 1 else f'its inference threads bind to ({bind})')
        where = (f'NUMA node {node.node}, where vLLM checks the KV cache ({workers}): '
                 f'{node.available / GIB:.1f} GiB available of {node.total / GIB:.1f} GiB (free '
                 f'{node.free / GIB:.1f} + page cache {node.file_pages / GIB:.1f} + reclaimable slab '
                 f'{node.slab_reclaimable / GIB:.1f}); {machine_text}')
    if machine.cgroup_available is not None and machine.cgroup_available < free:
        free = machine.cgroup_available
        where += f'; capped by the cgroup\'s limit: {free / GIB:.1f} GiB left under it'
    return free, where


def choose_gpu(machine: Machine, shape: ModelShape | None, work: Workload) -> Tuning:
    """Nothing more on GPUs: tensor parallelism, replicas and the vLLM settings are the node's layout
    (layout.py), chosen for the benchmark before the server step starts, where the env has them."""
    return Tuning(reasons=(f'{machine.gpus} GPU(s): the layout chosen for the benchmark and the node (printed '
                           'above) gives the vLLM settings',))


def choose(machine: Machine, shape: ModelShape | None, work: Workload = Workload()) -> Tuning:
    return choose_gpu(machine, shape, work) if machine.gpus > 0 else choose_cpu(machine, shape, work)


def apply(cfg: ServeConfig, tuning: Tuning, env: dict) -> tuple[ServeConfig, dict, list[str]]:
    """User-set ServeConfig fields and env variables win; returns (config, env additions, notes)."""
    defaults = {f.name: f.default for f in fields(ServeConfig)}
    updates, notes = {}, []
    for key, value in tuning.serve.items():
        if getattr(cfg, key) == defaults[key]:
            updates[key] = value
        else:
            notes.append(f'{key}={getattr(cfg, key)} kept as given (tuning suggested {value})')
    if 'max_num_batched_tokens' in updates:
        floor = max(cfg.max_num_seqs or 0, updates.get('max_num_seqs', 0) or 0)
        if not (cfg.enable_chunked_prefill or updates.get('enable_chunked_prefill')):
            floor = max(floor, cfg.max_model_len or updates.get('max_model_len') or 0)
        updates['max_num_batched_tokens'] = max(updates['max_num_batched_tokens'], floor)
    new_env = {}
    for key, value in tuning.env.items():
        if env.get(key):
            notes.append(f'{key}={env[key]} kept as given (tuning suggested {value})')
        else:
            new_env[key] = value
    return replace(cfg, **updates), new_env, notes


def describe(cfg: ServeConfig, env_added: dict, tuning: Tuning, notes) -> str:
    lines = ['vLLM settings chosen for this machine:']
    lines += [f'  {k}={v}' for k, v in sorted(env_added.items())]
    lines += [f'  --{k.replace("_", "-")}={getattr(cfg, k)}' for k in sorted(tuning.serve)]
    lines += [f'  why: {r}' for r in tuning.reasons]
    lines += [f'  note: {n}' for n in notes]
    return '\n'.join(lines)
