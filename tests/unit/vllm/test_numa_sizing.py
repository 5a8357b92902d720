"""KV cache sizing from the NUMA node vLLM checks, on recorded machine shapes (tests/fixtures/vllm/hosts)."""
from pathlib import Path

import pytest

from mlperf_llm.vllm import memory, tuning

HOSTS = Path(__file__).resolve().parents[2] / 'fixtures' / 'vllm' / 'hosts'
GIB = 1024 ** 3
SMOLLM2 = tuning.ModelShape(layers=30, kv_heads=3, head_dim=64, params=134_515_008, max_position=8192)
LLAMA2_70B = tuning.ModelShape(layers=80, kv_heads=8, head_dim=128, params=68_976_648_192, max_position=4096)


def host(name):
    return tuning.detect_machine(root=HOSTS / name, sample_s=0)


def kv(t):
    return int(t.env['VLLM_CPU_KVCACHE_SPACE'])


def test_node_meminfo_and_id_lists_are_parsed_as_the_kernel_writes_them():
    info = memory.parse_node_meminfo('Node 0 MemTotal:       14509856 kB\nNode 0 MemFree:  5127572 kB\n'
                                     'Node 0 HugePages_Total:     0\n')
    assert info == {'MemTotal': 14509856 * 1024, 'MemFree': 5127572 * 1024, 'HugePages_Total': 0}
    assert memory.parse_id_list('0-31,64-95\n') == tuple(range(32)) + tuple(range(64, 96))
    assert memory.parse_id_list('') == ()


def test_this_recorded_host_node0_holds_part_of_the_memory():
    m = host('kvm_2cpu_node0_18.7gb_of_24.7gb_avx512')
    assert m.cpus == (0, 1) and m.numa_nodes == 1 and m.mems_allowed == (0,)
    (node,) = m.nodes
    # vLLM's count: MemFree + Active(file) + Inactive(file) + SReclaimable
    assert node.available == (4414332 + 1703808 + 9336732 + 1077356) * 1024
    assert node.total == 18704160 * 1024 < 24683656 * 1024           # the machine's MemTotal
    assert node.available < m.mem_available_bytes == 22155844 * 1024   # and its MemAvailable
    assert m.native_bf16
    t = tuning.choose(m, SMOLLM2, tuning.Workload(concurrency=64))
    # (15.4 GiB on node 0 - 0.25 GiB weights - 2 GiB) / 2 = 6 GiB; the machine's 21.1 GiB would have given 9
    assert kv(t) == 6


def test_one_node_machine_sizes_from_that_node_and_without_bf16_uses_float32():
    m = host('one_node_16cpu_64gib_avx2')
    assert len(m.cpus) == 16 and m.numa_nodes == 1 and not m.native_bf16
    t = tuning.choose(m, SMOLLM2, tuning.Workload(concurrency=64))
    assert t.serve['dtype'] == 'float32'
    assert t.env['VLLM_CPU_OMP_THREADS_BIND'] == '0-14'
    free, where = tuning.kv_memory(m, '0-14')
    assert free == m.nodes[0].available and 'NUMA node 0' in where
    # float32: 64 x 8192 x 46080 B = 22.5 GiB needed -> 25 GiB with 10%; node 0: 52.5 GiB available
    assert kv(t) == 25
    assert any('NUMA node 0, where vLLM checks the KV cache' in r for r in t.reasons)


def test_two_nodes_auto_binding_checks_node0_whose_page_cache_counts_as_free():
    m = host('two_nodes_128cpu_2x256gib_amx')
    assert m.numa_nodes == 2 and m.mems_allowed == (0, 1)
    t = tuning.choose(m, LLAMA2_70B, tuning.Workload(concurrency=64))
    assert t.env['VLLM_CPU_OMP_THREADS_BIND'] == 'auto'
    assert memory.nodes_checked('auto', m.nodes, m.mems_allowed) == (0,)
    node0 = m.nodes[0]
    # 64 x 4096 x 327680 B/token (bf16) = 80 GiB needed -> 88 GiB with 10%; node 0 has ~208 GiB available
    # (free 19 + page cache 181 + slab 7.6), minus 128.5 GiB of weights and 2 GiB, halved: 38 GiB
    assert kv(t) == int((node0.available - LLAMA2_70B.params * 2 - 2 * GIB) * 0.5 // GIB) == 38
    # the whole machine would have allowed the full 88 GiB: 440 GB available
    assert m.mem_available_bytes > 2 * node0.available


def test_two_nodes_with_two_ranks_each_rank_checks_its_own_node_and_the_smaller_one_decides():
    m = host('two_nodes_128cpu_2x256gib_amx')
    assert memory.nodes_checked('auto', m.nodes, m.mems_allowed, ranks=2) == (0, 1)
    assert memory.nodes_checked('0-31|32-63', m.nodes, m.mems_allowed, ranks=2) == (0, 1)
    assert memory.nodes_checked('40-63', m.nodes, m.mems_allowed) == (1,)
    free, where = tuning.kv_memory(m, 'auto', ranks=2)
    assert free == min(n.available for n in m.nodes) == m.nodes[0].available
    assert '2 workers bind to node(s) 0,1' in where
    t = tuning.choose(m, LLAMA2_70B, tuning.Workload(concurrency=64, ranks=2, single_process_ok=False))
    # each rank holds half the weights (64.2 GiB), so each node has more room for its KV cache
    assert kv(t) == int((m.nodes[0].available - LLAMA2_70B.params - 2 * GIB) * 0.5 // GIB)


def test_a_user_binding_on_node1_sizes_from_node1():
    m = host('two_nodes_128cpu_2x256gib_amx')
    t = tuning.choose(m, SMOLLM2, tuning.Workload(concurrency=64, threads_bind='32-63'))
    assert any('NUMA node 1' in r for r in t.reasons)


def test_the_issue20_host_node0_smaller_than_half_the_machine():
    m = host('issue20_2cpu_node0_12.9gb_of_24gib')
    (node,) = m.nodes
    assert node.total < m.mem_available_bytes / 1.5
    t = tuning.choose(m, SMOLLM2, tuning.Workload(concurrency=64))
    # before: sized from the machine's 23.1 GiB (10 GiB); now from node 0's 8.7 GiB available
    assert node.available / GIB == pytest.approx(8.87, abs=0.01)
    assert kv(t) == 3
    from dataclasses import replace
    assert kv(tuning.choose(replace(m, nodes=()), SMOLLM2, tuning.Workload(concurrency=64))) == 10   # the old answer
    reason = next(r for r in t.reasons if r.startswith('KV cache'))
    assert 'NUMA node 0' in reason and '8.9 GiB available of 12.0 GiB' in reason
    assert '23.1 GiB available on the whole machine' in reason


def test_a_cgroup_limit_below_the_node_caps_the_kv_cache(tmp_path):
    import shutil
    root = tmp_path / 'host'
    shutil.copytree(HOSTS / 'one_node_16cpu_64gib_avx2', root)
    (root / 'sys/fs/cgroup').mkdir(parents=True)
    (root / 'sys/fs/cgroup/memory.max').write_text(str(16 * GIB) + '\n')
    (root / 'sys/fs/cgroup/memory.current').write_text(str(4 * GIB) + '\n')
    m = tuning.detect_machine(root=root, sample_s=0)
    assert m.cgroup_available == 12 * GIB
    free, where = tuning.kv_memory(m, '0-14')
    assert free == 12 * GIB and "cgroup's limit" in where
    (root / 'sys/fs/cgroup/memory.max').write_text('max\n')
    assert tuning.detect_machine(root=root, sample_s=0).cgroup_available is None


def test_no_numa_nodes_shown_falls_back_to_the_machine(tmp_path):
    import shutil
    root = tmp_path / 'host'
    shutil.copytree(HOSTS / 'one_node_16cpu_64gib_avx2', root)
    shutil.rmtree(root / 'sys/devices/system/node')
    m = tuning.detect_machine(root=root, sample_s=0)
    free, where = tuning.kv_memory(m, 'auto')
    assert m.nodes == () and free == m.mem_available_bytes and 'shows no NUMA node' in where


REFUSAL = ('(EngineCore pid=7437) ERROR 11-24 22:34:05 [core.py:1510] ValueError: Available memory on node 0 '
           '(19.6/23.54 GiB) on kv cache allocation is less than requested memory for kv (40.0 GiB). Decrease '
           '--kv-cache-memory-bytes, VLLM_CPU_KVCACHE_SPACE, or reduce CPU memory used by other processes.')
AUTO_REFUSAL = ('ValueError: Available memory on node 1 (8.73/10.34 GiB) on kv cache allocation is less than '
                'requested memory for kv (9.5/10.0 GiB). Reduce CPU memory used by other processes.')


def test_vllm_refusal_is_read_from_the_log_and_the_retry_keeps_headroom():
    r = memory.find_refusal('noise\n' + REFUSAL + '\nmore noise')
    assert r == memory.KvRefusal(node=0, available_gib=19.6, total_gib=23.54, requested_gib=40.0)
    assert r.retry_gib() == 8            # (19.6 - 2) / 2
    assert 'node 0 has 19.60 GiB available of 23.54 GiB, 40 GiB were requested' in r.describe()
    a = memory.find_refusal(AUTO_REFUSAL)
    assert (a.node, a.available_gib, a.requested_gib) == (1, 8.73, 9.5) and a.retry_gib() == 3
    assert memory.find_refusal('ValueError: something else') is None
    assert memory.KvRefusal(0, 2.5, 4, 3).retry_gib() == 0
