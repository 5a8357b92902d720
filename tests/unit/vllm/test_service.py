"""The run-vllm-server edge in-process: argv/env from CM_VLLM_* strings (the parts that start or
probe servers are in tests/integration/vllm/test_service_servers.py)."""
import pytest

from mlperf_llm.vllm import service
from mlperf_llm.vllm.command import ServeConfigError


def test_prepare_builds_the_api_server_command_with_tuning_and_cpu_env():
    logs = []
    argv, added, cfg = service.prepare({'CM_VLLM_MODEL': '/m', 'CM_VLLM_SERVED_MODEL_NAME': 'smollm2',
                                        'CM_VLLM_PYTHON': '/venv/bin/python', 'CM_VLLM_VERSION': '0.32.0',
                                        'CM_VLLM_ENFORCE_EAGER': 'yes', 'CM_VLLM_DISABLE_LOG_REQUESTS': 'yes',
                                        'CM_GPU_COUNT': '0'}, log=logs.append)
    assert argv[:4] == ['/venv/bin/python', '-m', 'vllm.entrypoints.openai.api_server', '--model=/m']
    assert '--host=127.0.0.1' in argv and '--port=8000' in argv and '--enforce-eager' in argv
    assert '--disable-log-requests' not in argv            # vLLM 0.32 has no such flag; logging is off
    assert '--max-num-seqs=64' in argv and cfg.dtype in ('bfloat16', 'float32')
    assert added['VLLM_HOST_IP'] == '127.0.0.1' and 'VLLM_CPU_KVCACHE_SPACE' in added
    assert logs and logs[0].startswith('vLLM settings chosen for this machine:')


def test_prepare_without_tuning_passes_only_inputs_and_ray_env():
    logs = []
    argv, added, _ = service.prepare({'CM_VLLM_MODEL': 'org/model', 'CM_VLLM_TUNE': 'no', 'CM_GPU_COUNT': '8',
                                      'CM_VLLM_TENSOR_PARALLEL_SIZE': '8',
                                      'CM_VLLM_DISTRIBUTED_EXECUTOR_BACKEND': 'ray',
                                      'CM_VLLM_RAY_ADDRESS': '10.0.0.1'}, log=logs.append)
    assert argv[4:] == ['--tensor-parallel-size=8', '--distributed-executor-backend=ray', '--host=127.0.0.1',
                        '--port=8000']
    assert added == {'RAY_ADDRESS': '10.0.0.1:6379', 'VLLM_NO_USAGE_STATS': '1', 'DO_NOT_TRACK': '1',
                     'RAY_USAGE_STATS_ENABLED': '0'}
    assert any('ray start --head' in m for m in logs)


def test_usage_reporting_is_off_unless_asked_for():
    """vLLM and Ray report usage to their maintainers unless told not to (issue 28): every server a
    step starts is told not to; --usage_stats=yes leaves them as they are (a bad value is refused)."""
    import pytest
    from mlperf_llm.vllm.command import ServeConfigError
    base = {'CM_VLLM_MODEL': '/m', 'CM_VLLM_TUNE': 'no'}
    for env in (base, dict(base, CM_VLLM_USAGE_STATS='no')):
        _, added, _ = service.prepare(env, log=lambda m: None)
        assert added['VLLM_NO_USAGE_STATS'] == '1' and added['DO_NOT_TRACK'] == '1'
        assert added['RAY_USAGE_STATS_ENABLED'] == '0'
    _, added, _ = service.prepare(dict(base, CM_VLLM_USAGE_STATS='yes'), log=lambda m: None)
    assert not {'VLLM_NO_USAGE_STATS', 'DO_NOT_TRACK', 'RAY_USAGE_STATS_ENABLED'} & set(added)
    with pytest.raises(ServeConfigError, match="CM_VLLM_USAGE_STATS"):
        service.prepare(dict(base, CM_VLLM_USAGE_STATS='maybe'), log=lambda m: None)


def test_api_key_goes_through_the_environment_not_argv():
    argv, added, cfg = service.prepare({'CM_VLLM_MODEL': '/m', 'CM_VLLM_API_KEY': 's3cret', 'CM_VLLM_TUNE': 'no'},
                                       log=lambda m: None)
    assert cfg.api_key == 's3cret' and added['VLLM_API_KEY'] == 's3cret'
    assert not any('s3cret' in a or a.startswith('--api-key') for a in argv)


def test_the_key_is_api_key_else_vllms_own_variable_in_the_environment(monkeypatch):
    from mlperf_llm.vllm.inputs import api_key_of
    assert api_key_of({'CM_VLLM_API_KEY': 'given'}, {'VLLM_API_KEY': 'exported'}) == 'given'
    assert api_key_of({}, {'VLLM_API_KEY': ' exported '}) == 'exported'
    assert api_key_of({'CM_VLLM_API_KEY': ''}, {}) == '' == api_key_of({}, {'VLLM_API_KEY': ''})
    # an exported key is given to the server as --api_key's is (a replica's or an image's too): by name
    monkeypatch.setenv('VLLM_API_KEY', 'exp0rted')
    argv, added, cfg = service.prepare({'CM_VLLM_MODEL': '/m', 'CM_VLLM_TUNE': 'no'}, log=lambda m: None)
    assert cfg.api_key == 'exp0rted' == added['VLLM_API_KEY'] and not [a for a in argv if 'exp0rted' in a]
    monkeypatch.setenv('VLLM_API_KEY', 'two words')
    with pytest.raises(ServeConfigError, match=r'api_key \(--api_key, else VLLM_API_KEY of the environment\) is empty '
                                               'or contains whitespace') as e:
        service.prepare({'CM_VLLM_MODEL': '/m', 'CM_VLLM_TUNE': 'no'}, log=lambda m: None)
    assert 'two words' not in str(e.value)


def test_the_step_hands_back_every_variable_the_server_was_given():
    """run-vllm-server's new_env_keys pass on every CM_VLLM_SERVER_ENV_* the service sets, the usage
    reporting switches included, so the record and the README say what the server ran with."""
    import os
    import yaml
    from cmengine.env import matches
    from mlperf_llm.vllm.command import NO_USAGE_STATS
    manifest = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'script', 'run-vllm-server', '_cm.yaml')
    keys = yaml.safe_load(open(manifest))['new_env_keys']
    for env in ({'CM_VLLM_MODEL': '/m', 'CM_VLLM_PYTHON': '/p', 'CM_GPU_COUNT': '0'},
                {'CM_VLLM_MODEL': 'org/m', 'CM_VLLM_TUNE': 'no', 'CM_GPU_COUNT': '8', 'CM_VLLM_TENSOR_PARALLEL_SIZE': '8',
                 'CM_VLLM_DISTRIBUTED_EXECUTOR_BACKEND': 'ray', 'CM_VLLM_RAY_ADDRESS': '10.0.0.1'}):
        _, added, _ = service.prepare(env, log=lambda m: None)
        assert set(NO_USAGE_STATS) <= set(added)
        assert [k for k in added if not matches(f'CM_VLLM_SERVER_ENV_{k}', keys)] == []


def test_ray_on_cpus_is_refused_before_anything_starts_with_the_way_that_works():
    import pytest
    from mlperf_llm.vllm.command import ServeConfigError
    with pytest.raises(ServeConfigError, match="cannot run one server across Ray nodes on CPUs.*drop it: "
                                               "--ray_address=HOST:PORT.*one replica of the server on each Ray node"):
        service.prepare({'CM_VLLM_MODEL': '/m', 'CM_GPU_COUNT': '0', 'CM_VLLM_DISTRIBUTED_EXECUTOR_BACKEND': 'ray',
                         'CM_VLLM_RAY_ADDRESS': '10.0.0.1'}, log=lambda m: None)


def test_a_ray_address_on_cpus_means_one_replica_per_node_and_is_no_flag_of_the_server():
    cpu = {'CM_VLLM_MODEL': '/m', 'CM_GPU_COUNT': '0', 'CM_VLLM_TUNE': 'no'}
    assert service.ray_replicas_address({**cpu, 'CM_VLLM_RAY_ADDRESS': '10.0.0.1:6379'}) == '10.0.0.1:6379'
    assert service.ray_replicas_address({**cpu, 'CM_RAY_ADDRESS': '10.0.0.2:6379'}) == '10.0.0.2:6379'   # run-ray-node's
    assert service.ray_replicas_address(cpu) is None
    gpu = {**cpu, 'CM_GPU_COUNT': '8', 'CM_VLLM_RAY_ADDRESS': '10.0.0.1:6379'}
    assert service.ray_replicas_address(gpu) is None                 # on GPUs: the cluster one server spans
    argv, added, _ = service.prepare({**cpu, 'CM_VLLM_RAY_ADDRESS': '10.0.0.1:6379'}, log=lambda m: None)
    assert 'RAY_ADDRESS' not in added and not [a for a in argv if 'ray' in a]
