"""The run-vllm-server edge against fake server processes on loopback: --api_server vetting, stop
unless kept, moving off a taken default port."""
import socket

import pytest

from mlperf_llm.vllm import server, service
from test_server_lifecycle import start_fake


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


def test_own_server_moves_off_a_taken_default_port_but_never_off_a_given_one(monkeypatch):
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
