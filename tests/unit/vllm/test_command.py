import re
from pathlib import Path

import pytest

from mlperf_llm.vllm.command import (ServeConfig, ServeConfigError, api_server_argv, parse_extra_args,
                                     ray_guidance, redact, serve_argv, server_env, shell_command)
from mlperf_llm.vllm.inputs import config_from_env, run_options_from_env, split_urls

SEED = Path(__file__).resolve().parents[3].parent / 'shared' / 'seeds'


def seed_commands():
    """The `vllm serve` lines of seed 004, read from the seed itself (falls back to the text copied below)."""
    files = sorted(SEED.glob('004_*.txt'))
    if files:
        return re.findall(r'^vllm serve .*$', files[0].read_text(), re.M)
    return SEED_004_COMMANDS


SEED_004_COMMANDS = [
    'vllm serve nm-testing/Llama-2-70b-chat-hf-FP8 --tensor-parallel-size=4 --max-num-seqs=1024 '
    '--max-model-len=2048 --enable-chunked-prefill --max-num-batched-tokens=2048 --gpu-memory-utilization=0.95 '
    '--disable-log-requests',
    'vllm serve nm-testing/Llama-2-70B-Chat-GPTQ --tensor-parallel-size=4 --max-num-seqs=1024 '
    '--max-model-len=2048 --enable-chunked-prefill --max-num-batched-tokens=2048 --gpu-memory-utilization=0.95 '
    '--disable-log-requests',
]

H100_INPUTS = dict(tensor_parallel_size=4, max_num_seqs=1024, max_model_len=2048, enable_chunked_prefill=True,
                   max_num_batched_tokens=2048, gpu_memory_utilization=0.95, disable_log_requests=True)


def test_seed_004_has_two_commands_and_the_fallback_copy_matches():
    assert seed_commands() == SEED_004_COMMANDS


@pytest.mark.parametrize('model,expected', list(zip(['nm-testing/Llama-2-70b-chat-hf-FP8', 'nm-testing/Llama-2-70B-Chat-GPTQ'],
                                               SEED_004_COMMANDS)))
def test_seed_004_commands_come_out_exactly(model, expected):
    assert shell_command(serve_argv(ServeConfig(model=model, **H100_INPUTS))) == expected


def test_seed_004_from_env_strings_as_the_script_gets_them():
    env = {'CM_VLLM_MODEL': 'nm-testing/Llama-2-70b-chat-hf-FP8', 'CM_VLLM_TENSOR_PARALLEL_SIZE': '4',
           'CM_VLLM_MAX_NUM_SEQS': '1024', 'CM_VLLM_MAX_MODEL_LEN': '2048', 'CM_VLLM_ENABLE_CHUNKED_PREFILL': 'yes',
           'CM_VLLM_MAX_NUM_BATCHED_TOKENS': '2048', 'CM_VLLM_GPU_MEMORY_UTILIZATION': '0.95',
           'CM_VLLM_DISABLE_LOG_REQUESTS': 'yes', 'CM_VLLM_PORT': ''}
    assert shell_command(serve_argv(config_from_env(env))) == SEED_004_COMMANDS[0]


def test_every_flag_in_order():
    cfg = ServeConfig(model='/m', served_model_name='llama2-70b', tensor_parallel_size=2, pipeline_parallel_size=2,
                      max_num_seqs=64, max_model_len=4096, enable_chunked_prefill=True, max_num_batched_tokens=512,
                      gpu_memory_utilization=0.9, quantization='gptq', kv_cache_dtype='fp8', dtype='bfloat16',
                      distributed_executor_backend='ray', ray_address='10.0.0.1', api_key='s3cret', host='0.0.0.0',
                      port=8001, enforce_eager=True, enable_expert_parallel=True, disable_log_requests=True,
                      extra_args=('--seed', '7'))
    assert serve_argv(cfg) == [
        'vllm', 'serve', '/m', '--served-model-name=llama2-70b', '--tensor-parallel-size=2',
        '--pipeline-parallel-size=2', '--max-num-seqs=64', '--max-model-len=4096', '--enable-chunked-prefill',
        '--max-num-batched-tokens=512', '--gpu-memory-utilization=0.9', '--quantization=gptq',
        '--kv-cache-dtype=fp8', '--dtype=bfloat16', '--distributed-executor-backend=ray', '--api-key=s3cret',
        '--host=0.0.0.0', '--port=8001', '--enforce-eager', '--enable-expert-parallel', '--disable-log-requests',
        '--seed', '7']
    assert api_server_argv(cfg, '/venv/bin/python')[:4] == [
        '/venv/bin/python', '-m', 'vllm.entrypoints.openai.api_server', '--model=/m']
    assert api_server_argv(cfg)[4:] == serve_argv(cfg)[3:]
    assert '--api-key=***' in redact(serve_argv(cfg)) and 's3cret' not in shell_command(redact(serve_argv(cfg)))


def test_minimal_config_has_no_flags():
    assert serve_argv(ServeConfig(model='m')) == ['vllm', 'serve', 'm']


@pytest.mark.parametrize('version,present', [(None, True), ('0.5.2', True), ('0.10.1', True),
                                             ('0.11.0', False), ('0.32.0', False), ('1.0', False)])
def test_disable_log_requests_only_for_versions_that_have_it(version, present):
    argv = serve_argv(ServeConfig(model='m', disable_log_requests=True), vllm_version=version)
    assert ('--disable-log-requests' in argv) is present


def test_ray_address_goes_to_env_with_guidance():
    cfg = ServeConfig(model='m', tensor_parallel_size=8, pipeline_parallel_size=2,
                      distributed_executor_backend='ray', ray_address='10.1.2.3')
    assert server_env(cfg) == {'RAY_ADDRESS': '10.1.2.3:6379'}
    text = '\n'.join(ray_guidance(cfg))
    assert 'ray start --head --port=6379' in text and 'ray start --address=10.1.2.3:6379' in text
    assert '16 worker' in text
    assert server_env(ServeConfig(model='m', distributed_executor_backend='ray', ray_address='h:7000')) == \
        {'RAY_ADDRESS': 'h:7000'}
    assert ray_guidance(ServeConfig(model='m')) == [] and server_env(ServeConfig(model='m')) == {}


@pytest.mark.parametrize('kwargs,words', [
    (dict(model=''), ['model', '--model']),
    (dict(model='a b'), ['whitespace']),
    (dict(model='m', tensor_parallel_size=0), ['tensor_parallel_size=0', 'positive']),
    (dict(model='m', max_num_seqs=True), ['max_num_seqs']),
    (dict(model='m', max_num_seqs=64, max_num_batched_tokens=32), ['max_num_batched_tokens=32', 'max_num_seqs=64']),
    (dict(model='m', max_model_len=4096, max_num_batched_tokens=2048), ['chunked prefill']),
    (dict(model='m', gpu_memory_utilization=1.5), ['gpu_memory_utilization=1.5', '(0, 1]']),
    (dict(model='m', gpu_memory_utilization=0), ['gpu_memory_utilization=0']),
    (dict(model='m', quantization='FP 8'), ['quantization', 'fp8']),
    (dict(model='m', kv_cache_dtype='fp4'), ['kv_cache_dtype', 'fp8_e4m3']),
    (dict(model='m', dtype='bf16'), ['dtype=', 'bfloat16']),
    (dict(model='m', distributed_executor_backend='mpi'), ['distributed_executor_backend', 'ray']),
    (dict(model='m', ray_address='h:1'), ['ray_address', '--distributed_executor_backend=ray']),
    (dict(model='m', distributed_executor_backend='ray', ray_address='h:x'), ['HOST[:PORT]']),
    (dict(model='m', api_key=''), ['api_key']),
    (dict(model='m', host='a b'), ['host=']),
    (dict(model='m', port=70000), ['port=70000', '65535']),
    (dict(model='m', extra_args='--seed 1'), ['extra_args', 'parse_extra_args']),
    (dict(model='m', served_model_name='a b'), ['served_model_name']),
])
def test_bad_inputs_are_named(kwargs, words):
    with pytest.raises(ServeConfigError) as e:
        ServeConfig(**kwargs)
    for w in words:
        assert w in str(e.value)


def test_chunked_prefill_allows_small_batches():
    ServeConfig(model='m', max_model_len=4096, max_num_batched_tokens=2048, enable_chunked_prefill=True)


def test_env_parsing_errors_name_the_variable():
    with pytest.raises(ServeConfigError, match='CM_VLLM_MAX_NUM_SEQS=.lots.'):
        config_from_env({'CM_VLLM_MODEL': 'm', 'CM_VLLM_MAX_NUM_SEQS': 'lots'})
    with pytest.raises(ServeConfigError, match='CM_VLLM_ENFORCE_EAGER=.maybe.*yes or no'):
        config_from_env({'CM_VLLM_MODEL': 'm', 'CM_VLLM_ENFORCE_EAGER': 'maybe'})
    with pytest.raises(ServeConfigError, match='no model to serve'):
        config_from_env({})
    with pytest.raises(ServeConfigError, match='quotes'):
        config_from_env({'CM_VLLM_MODEL': 'm', 'CM_VLLM_EXTRA_ARGS': '--x "unclosed'})


def test_env_overrides_and_extra_args():
    cfg = config_from_env({'CM_VLLM_MODEL': 'm', 'CM_VLLM_EXTRA_ARGS': "--seed 3 --chat-template 'a b'"},
                          port=9000, model='other')
    assert cfg.model == 'other' and cfg.port == 9000
    assert cfg.extra_args == ('--seed', '3', '--chat-template', 'a b')
    assert parse_extra_args('') == ()


def test_api_server_urls_and_run_options():
    assert split_urls('http://a:1/, http://b:2/v1,,') == ('http://a:1', 'http://b:2')
    with pytest.raises(ServeConfigError, match="'a:1' is not an http"):
        split_urls('a:1')
    opts = run_options_from_env({'CM_VLLM_API_SERVERS': 'http://h:8000', 'CM_VLLM_KEEP_SERVER': 'yes'})
    assert opts.api_servers == ('http://h:8000',) and opts.keep_server and opts.start_timeout_s == 600
    with pytest.raises(ServeConfigError, match='CM_VLLM_SERVER_START_TIMEOUT'):
        run_options_from_env({'CM_VLLM_SERVER_START_TIMEOUT': '-1'})
