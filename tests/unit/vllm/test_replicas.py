"""Where --replicas=N servers run (vllm/replicas.py), on machines of several shapes."""
import pytest

from mlperf_llm.vllm import replicas
from mlperf_llm.vllm.memory import NodeMemory
from mlperf_llm.vllm.tuning import Machine, Workload, choose

GIB = 1024 ** 3


def node(i, cpus, free_gib=8):
    return NodeMemory(node=i, cpus=tuple(cpus), total=16 * GIB, free=free_gib * GIB, file_pages=0, slab_reclaimable=0)


def machine(cpus, nodes=(), gpus=0, mem_gib=16):
    return Machine(cpus=tuple(cpus), numa_nodes=max(1, len(nodes)), mem_available_bytes=mem_gib * GIB,
                   flags=frozenset(), gpus=gpus, nodes=tuple(nodes))


def test_two_cores_one_node_two_replicas_get_one_core_each_and_half_the_node():
    m = machine([0, 1], [node(0, [0, 1])])
    ps = replicas.place(m, 2)
    assert [(p.cpus, p.node) for p in ps] == [((0,), 0), ((1,), 0)]
    assert [p.describe() for p in ps] == ["replica 1: CPU 0 (NUMA node 0)", "replica 2: CPU 1 (NUMA node 0)"]
    assert ps[1].env() == {"VLLM_CPU_OMP_THREADS_BIND": "1"}
    share = replicas.share(m, ps[0], ps)
    assert share.cpus == (0,) and share.nodes[0].available == 4 * GIB and share.mem_available_bytes == 8 * GIB


def test_as_many_nodes_as_replicas_gives_each_a_whole_node_with_all_of_its_memory():
    m = machine(range(8), [node(0, range(4)), node(1, range(4, 8))])
    ps = replicas.place(m, 2)
    assert [(p.cpus, p.node) for p in ps] == [((0, 1, 2, 3), 0), ((4, 5, 6, 7), 1)]
    s = replicas.share(m, ps[1], ps)
    assert [n.available for n in s.nodes] == [8 * GIB, 8 * GIB]    # one replica per node: no division


def test_more_replicas_than_nodes_split_in_node_order_without_crossing_needlessly():
    m = machine(range(8), [node(0, range(4)), node(1, range(4, 8))])
    ps = replicas.place(m, 4)
    assert [p.cpus for p in ps] == [(0, 1), (2, 3), (4, 5), (6, 7)] and [p.node for p in ps] == [0, 0, 1, 1]
    three = replicas.place(m, 3)
    assert [len(p.cpus) for p in three] == [3, 3, 2] and three[1].node is None     # CPUs 3-5 span both nodes


def test_more_nodes_than_replicas_gives_whole_nodes():
    m = machine(range(4), [node(i, [i]) for i in range(4)])
    assert [p.cpus for p in replicas.place(m, 2)] == [(0, 1), (2, 3)]


def test_no_node_map_and_an_affinity_subset():
    m = machine([2, 3, 5])
    assert [p.cpus for p in replicas.place(m, 2)] == [(2, 3), (5,)]


def test_a_replica_settings_are_chosen_for_its_own_cores():
    m = machine([0, 1], [node(0, [0, 1])])
    ps = replicas.place(m, 2)
    t = choose(replicas.share(m, ps[1], ps), None, Workload(threads_bind="1"))
    assert t.env["VLLM_CPU_OMP_THREADS_BIND"] == "1" and "1 usable CPU(s)" in t.reasons[0]


def test_gpu_replicas_take_devices_of_their_own():
    m = machine(range(16), gpus=8)
    ps = replicas.place(m, 2, width=4)
    assert [p.gpus for p in ps] == [(0, 1, 2, 3), (4, 5, 6, 7)]
    assert ps[1].env() == {"CUDA_VISIBLE_DEVICES": "4,5,6,7", "HIP_VISIBLE_DEVICES": "4,5,6,7"} and ps[1].describe() == "replica 2: GPU 4-7"
    assert replicas.share(m, ps[0], ps).gpus == 4


@pytest.mark.parametrize("m, n, width, words", [
    (machine([0, 1]), 3, 1, ["--replicas=3", "2 CPU(s) (0-1)", "lower --replicas"]),
    (machine(range(4), gpus=4), 3, 2, ["need 6 GPUs", "has 4", "--tensor_parallel_size"]),
])
def test_replicas_that_do_not_fit_are_refused_with_the_fix(m, n, width, words):
    with pytest.raises(replicas.ReplicaError) as e:
        replicas.place(m, n, width)
    assert all(w in str(e.value) for w in words), str(e.value)


@pytest.mark.parametrize("text, n", [(None, 1), ("", 1), ("2", 2), (" 4 ", 4)])
def test_replicas_input(text, n):
    assert replicas.parse_replicas(text) == n


@pytest.mark.parametrize("text", ["0", "-1", "two", "1.5"])
def test_bad_replicas_input_is_named(text):
    with pytest.raises(replicas.ReplicaError, match=rf"replicas='{text}' is not a whole number >= 1"):
        replicas.parse_replicas(text)
