"""Several replicas of one vLLM server on one machine (--replicas=N): where each one runs, and the
share of the machine its settings are chosen for (tuning.py chooses them as for a machine of its own).

- CPU: the usable CPUs are split into N groups: whole NUMA nodes where there are at least N nodes,
  else contiguous, equal ranges in node order (a replica spans no node it need not). A replica's
  process is bound to its group (its process's CPU affinity, and its OpenMP threads through
  VLLM_CPU_OMP_THREADS_BIND); its KV cache is sized from its share of its node's memory.
- GPU: each replica takes tensor_parallel_size x pipeline_parallel_size devices of its own; no two
  replicas share one. Its process gets them in CUDA_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES, the same
  value: vLLM's ROCm platform copies one into the other and refuses the two when they differ
  (vllm/platforms/rocm.py, _sync_hip_cuda_env_vars), and AMD's published harnesses set HIP's.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .tuning import Machine, cpu_list


class ReplicaError(ValueError):
    """Replicas that cannot be placed on this machine: the input, the reason and the fix."""


@dataclass(frozen=True)
class Placement:
    index: int                        # 1-based
    cpus: tuple[int, ...] = ()        # the CPUs it is bound to (a CPU replica)
    gpus: tuple[int, ...] = ()        # its devices (a GPU replica)
    node: int | None = None           # the NUMA node of its CPUs, where the kernel shows one
    ray_node: str = ''                # a replica on a Ray node: that node's address

    def describe(self) -> str:
        if self.ray_node:
            cpus = f" (CPU {cpu_list(self.cpus)} of this machine)" if self.cpus else ""
            return f"replica {self.index}: Ray node {self.ray_node}{cpus}"
        if self.gpus:
            return f"replica {self.index}: GPU {cpu_list(self.gpus)}"
        where = f" (NUMA node {self.node})" if self.node is not None else ""
        return f"replica {self.index}: CPU {cpu_list(self.cpus)}{where}"

    def env(self) -> dict[str, str]:
        """What its process is given: its devices, or its OpenMP threads' CPUs."""
        if self.gpus:
            devices = ",".join(map(str, self.gpus))
            return {"CUDA_VISIBLE_DEVICES": devices, "HIP_VISIBLE_DEVICES": devices}
        return {"VLLM_CPU_OMP_THREADS_BIND": cpu_list(self.cpus)}


def parse_replicas(text: str | None) -> int:
    raw = str(text or "1").strip()
    if not raw.isdigit() or int(raw) < 1:
        raise ReplicaError(f"replicas={raw!r} is not a whole number >= 1; e.g. --replicas=2 (one server per "
                           "group of CPUs or GPUs; the harness spreads the queries over them)")
    return int(raw)


def _chunks(items: list, n: int) -> list[list]:
    """items in n contiguous chunks whose sizes differ by at most one (the first ones larger)."""
    size, extra = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(items[start:end])
        start = end
    return out


def place(machine: Machine, n: int, width: int = 1) -> list[Placement]:
    """Where each of n replicas runs; width = devices per replica (tensor x pipeline parallel)."""
    if n < 1:
        raise ReplicaError(f"replicas={n}: at least one")
    if machine.gpus > 0:
        need = n * max(1, width)
        if need > machine.gpus:
            raise ReplicaError(f"--replicas={n} of {width} GPU(s) each need {need} GPUs and this machine has "
                               f"{machine.gpus}: lower --replicas or --tensor_parallel_size/--pipeline_parallel_size")
        return [Placement(i + 1, gpus=tuple(range(i * width, (i + 1) * width))) for i in range(n)]
    usable = set(machine.cpus)
    if n > len(usable):
        raise ReplicaError(f"--replicas={n}: this run may use {len(usable)} CPU(s) ({cpu_list(usable)}) and each "
                           "replica needs at least one of its own: lower --replicas (or run on more CPUs)")
    nodes = [(nd.node, [c for c in nd.cpus if c in usable]) for nd in machine.nodes]
    nodes = [(node, cpus) for node, cpus in nodes if cpus]
    if not nodes or sum(len(c) for _, c in nodes) != len(usable):     # no node map: one range
        nodes = [(None, sorted(usable))]
    if len(nodes) >= n:
        groups = [[c for _, cpus in chunk for c in cpus] for chunk in _chunks(nodes, n)]
    else:
        groups = _chunks([c for _, cpus in nodes for c in cpus], n)
    node_of = {c: node for node, cpus in nodes for c in cpus}
    out = []
    for i, group in enumerate(groups):
        homes = sorted({node_of[c] for c in group}, key=lambda x: (x is None, x))
        out.append(Placement(i + 1, cpus=tuple(group), node=homes[0] if len(homes) == 1 else None))
    return out


def share(machine: Machine, p: Placement, placements: list[Placement]) -> Machine:
    """The machine one replica's settings are chosen for: its CPUs or GPUs, and the memory of each
    NUMA node divided among the replicas on it (the whole machine's among all of them)."""
    n = len(placements)
    if p.gpus:
        return replace(machine, gpus=len(p.gpus))
    on_node: dict[int, int] = {}
    for q in placements:
        for node in {nd.node for nd in machine.nodes if set(nd.cpus) & set(q.cpus)}:
            on_node[node] = on_node.get(node, 0) + 1
    nodes = tuple(replace(nd, free=nd.free // on_node.get(nd.node, 1),
                          file_pages=nd.file_pages // on_node.get(nd.node, 1),
                          slab_reclaimable=nd.slab_reclaimable // on_node.get(nd.node, 1))
                  for nd in machine.nodes)
    busy = machine.cpus_in_use * len(p.cpus) / max(1, len(machine.cpus))
    return replace(machine, cpus=p.cpus, nodes=nodes, mem_available_bytes=machine.mem_available_bytes // n,
                   cgroup_available=None if machine.cgroup_available is None else machine.cgroup_available // n,
                   cpus_in_use=busy)
