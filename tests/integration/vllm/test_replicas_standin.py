"""--replicas=N through the run-vllm-server edge (service.start_from_env), against the stand-in
`vllm` package on loopback: each replica on its own CPUs (the process's affinity, as the kernel
shows it) and its own port, started together (each one's start said before any is ready), the
benchmark told every URL and record, all stopped together; a replica that cannot start stops the
others, up or still starting."""
import re
import os
import socket
import sys
from pathlib import Path

import pytest

from mlperf_llm.harness.cmenv import managed_servers
from mlperf_llm.vllm import replicas, server, service, tuning
from mlperf_llm.vllm.memory import parse_id_list
from test_server_lifecycle import alive          # a zombie (not collected yet) is not alive

STANDIN = Path(__file__).resolve().parents[2] / 'fixtures' / 'vllm' / 'standin_vllm'


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join([str(STANDIN)] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
    return {'CM_VLLM_MODEL': 'standin/model', 'CM_VLLM_SERVED_MODEL_NAME': 'standin', 'CM_VLLM_PYTHON': sys.executable,
            'CM_VLLM_TUNE': 'no', 'CM_VLLM_SERVER_START_TIMEOUT': '60', 'CM_VLLM_REPLICAS': '2',
            'CM_VLLM_SERVER_RECORDS_DIR': str(tmp_path / 'records')}


def affinity(pid: int) -> tuple[int, ...]:
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('Cpus_allowed_list:'):
            return parse_id_list(line.split(':', 1)[1].strip())
    raise AssertionError(f'no Cpus_allowed_list for {pid}')


def test_two_replicas_run_on_their_own_cpus_and_ports_and_stop_together(env, tmp_path):
    expected = replicas.place(tuning.detect_machine(sample_s=0), 2)
    said = []
    out = service.start_from_env(env, tmp_path, log=said.append)
    try:
        urls = out['CM_VLLM_SERVER_URL'].split(',')
        records = out['CM_VLLM_SERVER_RECORD'].split(os.pathsep)
        assert len(set(urls)) == 2 and len(records) == 2 and out['CM_VLLM_SERVER_REPLICAS'] == '2'
        for p, url, pid in zip(expected, urls, out['CM_VLLM_SERVER_PID'].split(',')):
            assert affinity(int(pid)) == p.cpus, p.describe()
            assert f'{p.describe()} at {url}' in out['CM_VLLM_SERVER_PLACEMENT']
        text = '\n'.join(said)
        assert '2 replicas of the server: ' + '; '.join(p.describe() for p in expected) in text
        assert '[replica 1] vLLM server ready at' in text and '[replica 2] vLLM server ready at' in text
        # started together, not one after the other: both started before either answered
        first_ready = text.index('vLLM server ready at')
        assert text.index('[replica 1] starting:') < first_ready and text.index('[replica 2] starting:') < first_ready
        assert f'VLLM_CPU_OMP_THREADS_BIND={expected[1].env()["VLLM_CPU_OMP_THREADS_BIND"]}' in text
        assert [m.url for m in managed_servers(out, urls)] == urls        # the harness watches both
    finally:
        msg = service.stop_from_env({**env, **out}, log=said.append)      # the step's env at its cleanup
    pids = [int(p) for p in out['CM_VLLM_SERVER_PID'].split(',')]
    assert msg.count('stopped') == 2 and not [p for p in pids if alive(p)]
    assert not list((tmp_path / 'records').glob('*.json'))


def held_port_after_a_free_one(holder: socket.socket) -> int:
    """Binds holder to a port whose predecessor is free; returns the held port."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(('127.0.0.1', 0))
            port = probe.getsockname()[1]
        if server.port_taken_reason('127.0.0.1', port - 1) is None:
            try:
                holder.bind(('127.0.0.1', port))
            except OSError:
                continue
            holder.listen()
            return port
    raise AssertionError('no free port followed by a free one on loopback')


def test_a_replica_that_cannot_start_stops_the_ones_already_up(env, tmp_path):
    with socket.socket() as holder:
        taken = held_port_after_a_free_one(holder)
        said = []
        with pytest.raises(server.PortTakenError, match=f'port {taken}'):
            service.start_from_env({**env, 'CM_VLLM_PORT': str(taken - 1)}, tmp_path, log=said.append)
    text = '\n'.join(said)
    # replica 2's port is taken at once; replica 1, started beside it, is stopped (up or still starting)
    (pid,) = re.findall(r'\[replica 1\] starting:.*?(?:\n.*?)*?server pid (\d+) (?:stopped|killed|had already exited)', text)
    assert not alive(int(pid)), text
    assert not list((tmp_path / 'records').glob('*.json'))


def test_more_replicas_than_cpus_is_refused_before_anything_starts(env, tmp_path):
    n = len(tuning.detect_machine(sample_s=0).cpus) + 1
    with pytest.raises(replicas.ReplicaError, match=f'--replicas={n}: this run may use'):
        service.start_from_env({**env, 'CM_VLLM_REPLICAS': str(n)}, tmp_path, log=lambda m: None)
    assert not (tmp_path / 'records').exists() or not list((tmp_path / 'records').glob('*.json'))
