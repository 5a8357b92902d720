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


def test_own_server_takes_a_free_port_never_a_fixed_one_and_a_given_one_as_given():
    """Issue 28: without --port each run's server takes a port that is free now (two runs started
    together get two ports), never vLLM's 8000; a given --port is kept (refused at start if taken)."""
    ports = {int(service.with_port({'CM_VLLM_MODEL': '/m'})['CM_VLLM_PORT']) for _ in range(5)}
    assert len(ports) > 1 and all(server.port_taken_reason('127.0.0.1', p) is None for p in ports)
    with socket.socket() as holder:
        holder.bind(('127.0.0.1', 0))
        holder.listen()
        taken = holder.getsockname()[1]
        given = {'CM_VLLM_MODEL': '/m', 'CM_VLLM_PORT': str(taken)}
        assert service.with_port(given) is given     # refused later, at start


def test_a_key_exported_as_vllm_api_key_is_required_by_the_server_and_sent_by_the_run(tmp_path, monkeypatch):
    """VLLM_API_KEY in the environment, no --api_key: the server started here inherits it and requires it
    (vLLM reads it), so the run's own probes send it. Before, the readiness probe went without it, read
    401 until the start timeout and the run failed; now the server is ready, the key in no output."""
    import os
    import sys
    from pathlib import Path
    from mlperf_llm.harness.cmenv import request_from_env
    standin = Path(__file__).resolve().parents[2] / 'fixtures' / 'vllm' / 'standin_vllm'
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join([str(standin)] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
    key = 'exp0rted-key-4b1d'
    monkeypatch.setenv('VLLM_API_KEY', key)
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    env = {'CM_VLLM_MODEL': 'standin/model', 'CM_VLLM_SERVED_MODEL_NAME': 'standin', 'CM_VLLM_PORT': str(port),
           'CM_VLLM_PYTHON': sys.executable, 'CM_VLLM_TUNE': 'no', 'CM_VLLM_SERVER_START_TIMEOUT': '60',
           'CM_VLLM_SERVER_RECORDS_DIR': str(tmp_path / 'records')}
    said = []
    out = service.start_from_env(env, tmp_path, said.append)
    try:
        url = out['CM_VLLM_SERVER_URL']
        assert server.probe(url, 'standin') == '/v1/models answered HTTP 401: the API key is missing or wrong'
        assert server.probe(url, 'standin', key) is None
        assert key not in repr(out) and key not in '\n'.join(said)
        # the harness sends it too: the request built from the run's env (with no --api_key) carries it
        req = request_from_env({'CM_MLPERF_MODEL': 'llama2-70b-99', 'CM_DATASET_PREPROCESSED_PATH': '/d', **out})
        assert req.api_key == key and key not in repr(req)
        assert request_from_env({'CM_MLPERF_MODEL': 'llama2-70b-99', 'CM_DATASET_PREPROCESSED_PATH': '/d', **out,
                                 'CM_VLLM_API_KEY': 'given'}).api_key == 'given'     # --api_key wins
    finally:
        service.stop_from_env(out, said.append)
