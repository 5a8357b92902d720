"""The managed lifecycle against the stand-in server process on loopback (real processes, real HTTP)."""
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

import pytest

from mlperf_llm.vllm import server
from mlperf_llm.vllm.loadtest import run_completions
from standin import StandinConfig, generated_ids, standin_env


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def start_fake(tmp_path, *extra, model='smollm2', port=None):
    port = port or free_port()
    argv = [sys.executable, '-m', 'standin', '--port', str(port), '--model-name', model, *extra]
    return server.start(argv, host='127.0.0.1', port=port, model_name=model, log_path=tmp_path / 'server.log',
                        env=standin_env())


def wait_answering(proc, deadline_s=30):
    """Until the fake server answers HTTP at all (a busy machine can take seconds to start python)."""
    deadline = time.monotonic() + deadline_s
    while 'not reachable' in (server.probe(proc.url, proc.record.model_name) or '') and time.monotonic() < deadline:
        time.sleep(0.1)


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0] != 'Z'


def test_start_wait_ready_use_and_stop(tmp_path):
    messages = []
    proc = start_fake(tmp_path, '--ready-after-s', '2')
    try:
        waited = proc.wait_ready(30, progress=messages.append, interval_s=0.2, progress_every_s=0.5)
        assert waited >= 1.5
        # the reason shown is the last check's: not reachable while python starts, then HTTP 503 while loading
        assert any('waiting for vLLM' in m and ('/health answered HTTP 503' in m or 'not reachable' in m)
                   for m in messages)
        assert messages[-1].startswith(f'vLLM server ready at {proc.url}')
        result = run_completions(proc.url, 'smollm2', [[5, 6], [7]], 3)
        expected = [tuple(generated_ids(StandinConfig(), p, 3)[0]) for p in ([5, 6], [7])]
        assert [c.token_ids for c in result.completions] == expected
    finally:
        outcome = proc.stop(grace_s=5)
    assert 'stopped (SIGTERM)' in outcome
    assert proc.returncode() is not None
    assert 'starting:' in (tmp_path / 'server.log').read_text()


def test_taken_port_is_refused_with_a_clear_message(tmp_path):
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(server.PortTakenError) as e:
            start_fake(tmp_path, port=port)
    msg = str(e.value)
    assert f'port {port} on 127.0.0.1 is already in use' in msg and '--api_server=http://127.0.0.1:' in msg
    assert not (tmp_path / 'server.log').exists()


def test_early_death_reports_exit_code_and_log_tail(tmp_path):
    proc = start_fake(tmp_path, '--never-ready', '--exit-after-s', '0.5', '--exit-code', '7')
    with pytest.raises(server.EarlyExitError) as e:
        proc.wait_ready(30, progress=lambda m: None, interval_s=0.1)
    msg = str(e.value)
    assert 'exited with code 7' in msg and 'simulated engine failure' in msg and 'server.log' in msg
    assert proc.record.rpc_folder and not Path(proc.record.rpc_folder).exists()   # a server that died leaves nothing
    assert proc.stop(1).startswith(f'server pid {proc.record.pid} had already exited')


def test_timeout_names_last_reason_and_server_can_then_be_stopped(tmp_path):
    proc = start_fake(tmp_path, '--never-ready')
    try:
        wait_answering(proc)
        with pytest.raises(server.ReadyTimeoutError) as e:
            proc.wait_ready(1.0, progress=lambda m: None, interval_s=0.2)
        assert 'not ready after 1 s' in str(e.value) and 'HTTP 503' in str(e.value)
    finally:
        proc.stop(5)
    assert proc.returncode() is not None


def test_wrong_model_name_is_not_ready(tmp_path):
    proc = start_fake(tmp_path, model='other')
    proc.record = server.ServerRecord(**{**proc.record.__dict__, 'model_name': 'smollm2'})
    try:
        wait_answering(proc)
        with pytest.raises(server.ReadyTimeoutError, match=r"serves \['other'\], not 'smollm2'"):
            proc.wait_ready(1.0, progress=lambda m: None, interval_s=0.2)
    finally:
        proc.stop(5)


def test_stop_kills_the_whole_group_after_grace_when_sigterm_is_ignored(tmp_path):
    proc = start_fake(tmp_path, '--ignore-sigterm', '--child')
    proc.wait_ready(30, progress=lambda m: None, interval_s=0.1)
    deadline = time.monotonic() + 10
    while 'child pid' not in (tmp_path / 'server.log').read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    child = int((tmp_path / 'server.log').read_text().split('child pid ')[1].split()[0])
    assert alive(child)
    outcome = proc.stop(grace_s=1)
    assert 'SIGKILL' in outcome
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(child)


def test_record_round_trip_lets_another_process_stop_it(tmp_path):
    proc = start_fake(tmp_path)
    proc.wait_ready(30, progress=lambda m: None, interval_s=0.1)
    proc.record.save(tmp_path / 'server.json')
    record = server.ServerRecord.load(tmp_path / 'server.json')
    assert record == proc.record and record.start_ticks is not None
    assert 'stopped (SIGTERM)' in server.stop(record, grace_s=5)
    proc.popen.wait(5)
    assert 'already exited' in server.stop(record, grace_s=1)
    with pytest.raises(server.ServerError, match='cannot read server record'):
        server.ServerRecord.load(tmp_path / 'missing.json')


def test_stale_record_with_reused_pid_is_left_alone(tmp_path):
    record = server.ServerRecord(pid=os.getpid(), pgid=os.getpgid(0), start_ticks=1, url='http://127.0.0.1:1',
                                 model_name='m', log_path=str(tmp_path / 'x.log'))
    assert 'belongs to another process' in server.stop(record, grace_s=1)


def test_check_existing_accepts_two_servers_and_names_each_problem(tmp_path):
    a, b = start_fake(tmp_path / 'a'), start_fake(tmp_path / 'b', model='other')
    try:
        a.wait_ready(30, progress=lambda m: None, interval_s=0.1)
        assert [s.url for s in server.check_existing([a.url, a.url], 'smollm2')] == [a.url, a.url]
        deadline = time.monotonic() + 20
        while server.probe(b.url, 'other') is not None and time.monotonic() < deadline:
            time.sleep(0.1)
        with pytest.raises(server.ModelMismatchError) as e:
            server.check_existing([a.url, b.url], 'smollm2')
        assert f"{b.url}: serves ['other'], not 'smollm2'" in str(e.value) and a.url + ':' not in str(e.value)
        dead = f'http://127.0.0.1:{free_port()}'
        with pytest.raises(server.ServerError, match=f'{dead}: not reachable') as e:
            server.check_existing([dead, a.url], 'smollm2', timeout_s=2)
        assert not isinstance(e.value, server.ModelMismatchError)
        with pytest.raises(server.ServerError, match='no server URLs'):
            server.check_existing([], 'smollm2')
    finally:
        a.stop(5)
        b.stop(5)


def test_group_cpu_seconds_counts_the_live_group(tmp_path):
    proc = start_fake(tmp_path)
    proc.wait_ready(30, progress=lambda m: None, interval_s=0.1)
    assert server.group_cpu_seconds(proc.record.pgid) > 0      # python start-up alone takes CPU time
    proc.stop(5)
    assert server.group_cpu_seconds(proc.record.pgid) == 0


def test_process_end_says_how_a_server_ended_until_its_parent_collects_it(tmp_path):
    proc = start_fake(tmp_path, '--exit-after-s', '0.5', '--exit-code', '7')
    pid, ticks = proc.record.pid, proc.record.start_ticks
    assert server.process_end(pid, ticks) is None                    # running
    deadline = time.monotonic() + 30
    while server.process_end(pid, ticks) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.process_end(pid, ticks) == 'exited with code 7'    # read while it awaits its parent
    proc.popen.wait(5)
    assert server.process_end(pid, ticks) == 'has exited (its exit status went to the process that started it)'
    proc.stop(1)
    killed = start_fake(tmp_path / 'k')
    os.kill(killed.record.pid, 9)
    while server.process_end(killed.record.pid, killed.record.start_ticks) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.process_end(killed.record.pid, killed.record.start_ticks) == 'was killed by signal 9 (SIGKILL)'
    killed.stop(1)
    assert 'belongs to another process' in server.process_end(os.getpid(), 1)


def test_a_server_whose_main_thread_ended_is_stopped_only_when_its_port_is_free(tmp_path):
    # vLLM and the stand-in are multi-threaded: after SIGTERM the main thread can show as a zombie while
    # another thread still holds the listening socket; stop() must wait for that one too
    port = free_port()
    code = ('import ctypes, socket, threading, time\n'
            f's = socket.socket(); s.bind(("127.0.0.1", {port})); s.listen()\n'
            'threading.Thread(target=time.sleep, args=(600,)).start()\n'
            'print("listening", flush=True)\n'
            'ctypes.CDLL(None).pthread_exit(None)\n')
    proc = server.start([sys.executable, '-c', code], host='127.0.0.1', port=port, model_name='m',
                        log_path=tmp_path / 'server.log')
    deadline = time.monotonic() + 30
    while 'Z' != Path(f'/proc/{proc.record.pid}/stat').read_text().rsplit(')', 1)[1].split()[0]:
        assert time.monotonic() < deadline, (tmp_path / 'server.log').read_text()
        time.sleep(0.05)
    assert server.port_taken_reason('127.0.0.1', port) is not None
    assert proc.record.server_alive()          # its main thread is a zombie, the server is not
    assert 'stopped (SIGTERM)' in proc.stop(grace_s=5)
    assert server.port_taken_reason('127.0.0.1', port) is None


def test_an_answer_from_another_runs_server_on_the_same_port_is_refused(tmp_path):
    """Issue 28: two runs started together took the same port; the second's server was still loading
    (or failed to bind) when the first's answered its readiness check, and it measured that one. Here
    'ours' is a process that never binds (still loading), and another run's server takes the port."""
    port = free_port()
    ours = server.start([sys.executable, '-c', 'import time; time.sleep(120)'], host='127.0.0.1', port=port,
                        model_name='smollm2', log_path=tmp_path / 'ours.log')
    theirs = start_fake(tmp_path, port=port)
    try:
        wait_answering(theirs)
        with pytest.raises(server.PortTakenError) as e:
            ours.wait_ready(30, progress=lambda m: None, interval_s=0.2)
        text = str(e.value)
        assert f'answered, but not from the vLLM server this run started (pid {ours.record.pid})' in text
        assert f'port {port} is held by pid {theirs.record.pid} (' in text and 'standin' in text
        assert 'leave --port out' in text
        theirs.wait_ready(30, progress=lambda m: None, interval_s=0.2)      # its own server is its own
    finally:
        ours.stop(grace_s=2)
        theirs.stop(grace_s=2)


# binds a socket where vLLM binds its own (`<VLLM_RPC_BASE_PATH>/<uuid4>`), writes a file where its engine
# meets its workers (`<temporary folder>/vllm_dist_<hex>`, vllm/utils/network_utils.py) and ignores SIGTERM:
# killed, it leaves both behind, as vLLM's processes do
BINDS_A_SOCKET = ('import os, signal, socket, tempfile, time, uuid\n'
                  'signal.signal(signal.SIGTERM, signal.SIG_IGN)\n'
                  's = socket.socket(socket.AF_UNIX)\n'
                  's.bind(os.path.join(os.environ["VLLM_RPC_BASE_PATH"], str(uuid.uuid4())))\n'
                  'open(os.path.join(tempfile.gettempdir(), "vllm_dist_" + uuid.uuid4().hex), "w").write("store")\n'
                  'print("socket " + "bound", flush=True)\n'   # the log's first line holds the code
                  'time.sleep(600)\n')


def test_a_servers_sockets_and_temporary_files_go_with_it_even_when_it_is_killed(tmp_path):
    """vLLM names its sockets under VLLM_RPC_BASE_PATH and its workers' meeting file in the temporary
    folder, and a server stopped by a signal leaves them: each server gets a folder of its own for both,
    removed when it is stopped, also by another process from its record."""
    port = free_port()
    proc = server.start([sys.executable, '-c', BINDS_A_SOCKET], host='127.0.0.1', port=port, model_name='m',
                        log_path=tmp_path / 'server.log', env=dict(os.environ))
    folder = Path(proc.record.rpc_folder)
    assert folder.parent == Path(tempfile.gettempdir()) and folder.name.startswith(server.RPC_PREFIX)
    deadline = time.monotonic() + 30
    while 'socket bound' not in (tmp_path / 'server.log').read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [p for p in folder.iterdir() if p.is_socket()]
    assert [p for p in folder.iterdir() if p.name.startswith('vllm_dist_') and p.is_file()]
    proc.record.save(tmp_path / 'server.json')
    assert 'SIGKILL' in server.stop(server.ServerRecord.load(tmp_path / 'server.json'), grace_s=1)
    proc.popen.wait(10)
    assert not folder.exists()


def test_a_socket_folder_the_caller_named_or_a_record_names_is_left_alone(tmp_path):
    theirs = tmp_path / 'theirs'
    theirs.mkdir()
    env, made = server.rpc_env({'VLLM_RPC_BASE_PATH': str(theirs), 'TMPDIR': str(tmp_path)})
    try:
        # their sockets' folder kept; the temporary folder is still the server's own, in theirs
        assert env['VLLM_RPC_BASE_PATH'] == str(theirs) and env['TMPDIR'] == made
        assert os.path.basename(made).startswith(server.RPC_PREFIX)
    finally:
        os.rmdir(made)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(theirs / 'kept'))
    # a record is a file: a folder it names that rpc_env did not make keeps what is in it, and so does
    # a link with the prefix's name
    link = tmp_path / f'{server.RPC_PREFIX}link'
    link.symlink_to(theirs)
    for named in (theirs, link):
        record = server.ServerRecord(pid=2 ** 22 + 1, pgid=2 ** 22 + 1, start_ticks=None, url='http://127.0.0.1:1',
                                     model_name='m', log_path=str(tmp_path / 'x.log'), rpc_folder=str(named))
        server.stop(record, grace_s=0.1)
        assert (theirs / 'kept').is_socket() and link.is_symlink()
    sock.close()
