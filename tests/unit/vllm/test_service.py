"""The run-vllm-server edge: argv/env from CM_VLLM_* strings, --api_server vetting, stop unless kept."""
import sys

import pytest

from mlperf_llm.vllm import server, service
from test_server_lifecycle import start_fake


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
    assert added == {'RAY_ADDRESS': '10.0.0.1:6379'}
    assert any('ray start --head' in m for m in logs)


def test_api_server_mode_checks_and_never_stops(tmp_path):
    a = start_fake(tmp_path / 'a')
    try:
        a.wait_ready(30, progress=lambda m: None, interval_s=0.1)
        out = service.start_from_env({'CM_VLLM_API_SERVERS': f'{a.url}/v1', 'CM_VLLM_SERVED_MODEL_NAME': 'smollm2'},
                                     tmp_path, log=lambda m: None)
        assert out == {'CM_VLLM_SERVER_URL': a.url, 'CM_VLLM_SERVER_MODEL_NAME': 'smollm2',
                       'CM_VLLM_SERVER_STARTED': 'no'}
        assert service.stop_from_env(out) is None and a.returncode() is None
        with pytest.raises(server.ServerError, match='--served_model_name'):
            service.start_from_env({'CM_VLLM_API_SERVERS': a.url}, tmp_path)
    finally:
        a.stop(5)


def test_stop_from_env_stops_or_keeps(tmp_path):
    for keep in ('no', 'yes'):
        proc = start_fake(tmp_path / keep)
        proc.wait_ready(30, progress=lambda m: None, interval_s=0.1)
        proc.record.save(tmp_path / keep / 'rec.json')
        env = {'CM_VLLM_SERVER_STARTED': 'yes', 'CM_VLLM_SERVER_RECORD': str(tmp_path / keep / 'rec.json'),
               'CM_VLLM_KEEP_SERVER': keep}
        msg = service.stop_from_env(env, log=lambda m: None)
        if keep == 'no':
            assert 'stopped' in msg
            proc.popen.wait(5)
        else:
            assert 'kept running' in msg and '_stop --server_record=' in msg and proc.returncode() is None
            proc.stop(5)


def test_api_key_goes_through_the_environment_not_argv():
    argv, added, cfg = service.prepare({'CM_VLLM_MODEL': '/m', 'CM_VLLM_API_KEY': 's3cret', 'CM_VLLM_TUNE': 'no'},
                                       log=lambda m: None)
    assert cfg.api_key == 's3cret' and added['VLLM_API_KEY'] == 's3cret'
    assert not any('s3cret' in a or a.startswith('--api-key') for a in argv)


def test_own_server_moves_off_a_taken_default_port_but_never_off_a_given_one(monkeypatch):
    import socket
    logs = []
    with socket.socket() as holder:
        holder.bind(('127.0.0.1', 0))
        holder.listen()
        taken = holder.getsockname()[1]
        monkeypatch.setattr(service, 'DEFAULT_PORT', taken)
        env = service.with_port({'CM_VLLM_MODEL': '/m'}, log=logs.append)
        port = int(env['CM_VLLM_PORT'])
        assert port != taken and server.port_taken_reason('127.0.0.1', port) is None
        assert logs and f'port {taken} on 127.0.0.1 is in use' in logs[0] and '--port=N' in logs[0]
        given = {'CM_VLLM_MODEL': '/m', 'CM_VLLM_PORT': str(taken)}
        assert service.with_port(given, log=logs.append) is given     # refused later, at start
    free = server.free_port('127.0.0.1')
    monkeypatch.setattr(service, 'DEFAULT_PORT', free)
    assert 'CM_VLLM_PORT' not in service.with_port({'CM_VLLM_MODEL': '/m'}, log=logs.append)
