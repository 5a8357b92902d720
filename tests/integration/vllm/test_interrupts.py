"""Signals to a run's process group and servers left by killed runs, with real processes: the engine runs
the real run-vllm-server step in a child process, serving through a stand-in `vllm` package
(tests/fixtures/vllm/standin_vllm: the fake server on loopback), under a fixture benchmark that sleeps.
"""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from enginefixtures import make_repo
from mlperf_llm.vllm import records, server, service

TESTS = Path(__file__).resolve().parents[2]
ROOT = TESTS.parent
AUTOMATION = ROOT / 'automation'
STANDIN = TESTS / 'fixtures' / 'vllm' / 'standin_vllm'

# the run under test starts with SIGHUP's and SIGINT's usual actions even where the tests run under
# nohup (SIGHUP ignored) or as a background job of a script (SIGINT ignored): the run would inherit an
# ignored signal and, as designed, keep ignoring it, and this test then waited out its timeout
DRIVER = """
import signal, sys
signal.signal(signal.SIGHUP, signal.SIG_DFL)
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path[:0] = [{automation!r}, {tests!r}]
from enginefixtures import Runner
from cmengine.registry import Repo
r = Runner([Repo('cm4mlperf-llm', {root!r}), Repo('fixture', {repo!r})], {cache!r}, include_project=True)
out = r.run('bench')
print(r.output)
print('ERROR', out.get('error', ''), flush=True)
sys.exit(out.get('return', 0))
"""


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def alive(pid):
    try:
        os.kill(pid, 0)
        state = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0]
    except (ProcessLookupError, FileNotFoundError):
        return False
    return state != 'Z'


def bench_repo(tmp_path, port, **server_env):
    env = {'CM_VLLM_MODEL': 'standin/model', 'CM_VLLM_SERVED_MODEL_NAME': 'standin', 'CM_VLLM_PORT': str(port),
           'CM_VLLM_PYTHON': sys.executable, 'CM_VLLM_TUNE': 'no', 'CM_VLLM_SERVER_START_TIMEOUT': '60',
           'CM_VLLM_SERVER_RECORDS_DIR': str(tmp_path / 'records'), **server_env}
    sh = 'echo "$CM_VLLM_SERVER_URL" > "$CM_MARK_DIR/bench-started"\nsleep 120\n'
    return make_repo(str(tmp_path / 'repos'), {'bench': ({'tags': ['bench'], 'cache': False,
                                                          'deps': [{'tags': 'run,vllm-server', 'env': env}]},
                                                         {'run.sh': sh})})


def start_run(tmp_path, repo, **process_env):
    code = DRIVER.format(automation=str(AUTOMATION), tests=str(TESTS), root=str(ROOT), repo=repo.path,
                         cache=str(tmp_path / 'cache'))
    env = dict(os.environ, CM_MARK_DIR=str(tmp_path), **process_env,
               PYTHONPATH=os.pathsep.join([str(STANDIN)] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
    return subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True, env=env)


def wait_for_benchmark(tmp_path, proc, timeout_s=120):
    deadline = time.monotonic() + timeout_s
    while not (tmp_path / 'bench-started').exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f'the benchmark never started:\n{proc.stdout.read()}')
        time.sleep(0.1)
    (record,) = [server.ServerRecord.load(p) for p in (tmp_path / 'records').glob('*.json')]
    assert alive(record.pid)
    return record


@pytest.mark.parametrize('sig', [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_to_the_process_group_stops_the_server_within_seconds(tmp_path, sig):
    proc = start_run(tmp_path, bench_repo(tmp_path, free_port()))
    record = wait_for_benchmark(tmp_path, proc)
    t0 = time.monotonic()
    os.killpg(proc.pid, sig)
    out = proc.communicate(timeout=60)[0]
    took = time.monotonic() - t0
    assert proc.returncode == 128 + sig, out
    name = signal.Signals(sig).name
    assert f'! {name} received: stopping what this run started' in out
    assert f'server pid {record.pid} stopped (SIGTERM)' in out
    assert f'interrupted by {name}' in out and f'exit code {128 + sig}' in out
    assert 'nothing incomplete was published' in out
    assert not alive(record.pid)
    assert list((tmp_path / 'records').glob('*.json')) == []     # its record went with it
    assert took < 10, f'{name}: {took:.1f} s'
    print(f'{name}: run exited {proc.returncode} {took:.2f} s after the signal, server gone')


def test_a_server_that_ignores_sigterm_is_killed_after_the_short_grace(tmp_path):
    proc = start_run(tmp_path, bench_repo(tmp_path, free_port()), STANDIN_VLLM_IGNORE_SIGTERM='1')
    record = wait_for_benchmark(tmp_path, proc)
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGTERM)
    out = proc.communicate(timeout=60)[0]
    took = time.monotonic() - t0
    assert proc.returncode == 143, out
    assert f'server pid {record.pid} killed (SIGKILL after {server.STOP_GRACE_S:g} s)' in out
    assert not alive(record.pid)
    assert server.STOP_GRACE_S <= took < server.STOP_GRACE_S + 5, took
    print(f'SIGTERM ignored by the server: run exited {took:.2f} s after the signal')


def test_a_signal_while_the_server_is_still_loading_stops_it_too(tmp_path):
    proc = start_run(tmp_path, bench_repo(tmp_path, free_port()), STANDIN_VLLM_READY_AFTER='60')
    deadline = time.monotonic() + 60
    while not list((tmp_path / 'records').glob('*.json')):      # recorded as soon as its process exists
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.poll() is not None else ''
        time.sleep(0.1)
    (record,) = [server.ServerRecord.load(p) for p in (tmp_path / 'records').glob('*.json')]
    time.sleep(1)
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGTERM)
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 143, out
    assert f'server pid {record.pid} stopped (SIGTERM)' in out
    assert not alive(record.pid) and time.monotonic() - t0 < 10
    assert list((tmp_path / 'records').glob('*.json')) == []
    assert not (tmp_path / 'bench-started').exists()


def test_a_server_left_by_a_killed_run_is_stopped_by_the_next_run(tmp_path):
    port = free_port()
    repo = bench_repo(tmp_path, port)
    first = start_run(tmp_path, repo)
    record = wait_for_benchmark(tmp_path, first)
    os.killpg(first.pid, signal.SIGKILL)      # the run cannot clean up; its server has a session of its own
    first.wait()
    assert alive(record.pid)
    assert record.owner_pid == first.pid and not record.owner_alive()
    (tmp_path / 'bench-started').unlink()
    second = start_run(tmp_path, repo)
    new = wait_for_benchmark(tmp_path, second)
    assert not alive(record.pid) and new.pid != record.pid
    os.killpg(second.pid, signal.SIGTERM)
    out = second.communicate(timeout=60)[0]
    assert (f'found a vLLM server pid {record.pid} at http://127.0.0.1:{port} serving \'standin\'' in out
            and 'that run is gone' in out and f'server pid {record.pid} stopped (SIGTERM)' in out), out
    assert not alive(new.pid)


def test_reconcile_leaves_running_owners_and_kept_servers_and_drops_stale_records(tmp_path):
    folder = tmp_path / 'records'
    sleeper = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)
    try:
        base = server.ServerRecord(pid=sleeper.pid, pgid=sleeper.pid, start_ticks=server._proc_start_ticks(sleeper.pid),
                                   url='http://127.0.0.1:1', model_name='m', log_path='/dev/null',
                                   owner_pid=os.getpid(), owner_start_ticks=server._proc_start_ticks(os.getpid()),
                                   owner_uid=os.getuid())
        records.save(folder, base)                                        # owner (this test) alive
        stale = records.save(folder, server.ServerRecord(pid=sleeper.pid, pgid=sleeper.pid, start_ticks=1,
                                                         url='http://127.0.0.1:2', model_name='m', log_path='-'))
        from dataclasses import replace
        kept = records.save(folder, replace(base, url='http://127.0.0.1:3', owner_pid=sleeper.pid, owner_start_ticks=1,
                                            keep=True))
        said = []
        left = records.reconcile(folder, said.append)
        assert sorted(r.url for r in left) == ['http://127.0.0.1:1', 'http://127.0.0.1:3']
        assert not stale.exists() and kept.exists() and alive(sleeper.pid)
        assert len(said) == 1 and 'kept with --keep_server; stop it with' in said[0]
    finally:
        sleeper.kill()
        sleeper.wait()


def test_vllm_refusing_the_kv_cache_is_retried_once_with_what_it_reported(tmp_path, monkeypatch):
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join([str(STANDIN)] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
    monkeypatch.setenv('STANDIN_VLLM_NODE_AVAILABLE_GIB', '9.6')
    env = {'CM_VLLM_MODEL': 'standin/model', 'CM_VLLM_SERVED_MODEL_NAME': 'standin', 'CM_VLLM_PORT': str(free_port()),
           'CM_VLLM_PYTHON': sys.executable, 'CM_VLLM_TUNE': 'no', 'CM_VLLM_KV_CACHE_SPACE': '40',
           'CM_VLLM_SERVER_START_TIMEOUT': '60', 'CM_VLLM_SERVER_RECORDS_DIR': str(tmp_path / 'records')}
    said = []
    out = service.start_from_env(env, tmp_path, said.append)
    try:
        assert any('vLLM refused the KV cache: node 0 has 9.60 GiB available of 11.60 GiB, 40 GiB were requested: '
                   'retrying once with VLLM_CPU_KVCACHE_SPACE=3' in m for m in said), said
        assert out['CM_VLLM_SERVER_ENV_VLLM_CPU_KVCACHE_SPACE'] == '3'
        assert server.probe(out['CM_VLLM_SERVER_URL'], 'standin') is None
    finally:
        service.stop_from_env(out, said.append)
    monkeypatch.setenv('STANDIN_VLLM_NODE_AVAILABLE_GIB', '2.5')     # (2.5 - 2) / 2 < 1 GiB: no retry
    with pytest.raises(server.ServerError, match='nothing to retry with'):
        service.start_from_env({**env, 'CM_VLLM_PORT': str(free_port())}, tmp_path, said.append)
    assert list((tmp_path / 'records').glob('*.json')) == []
