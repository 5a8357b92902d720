"""run-vllm-server: start a managed vLLM server (or vet running ones given by --api_server); `_stop` stops
a server from its record. The benchmark step stops the server when done via
mlperf_llm.vllm.service.stop_from_env (unless --keep_server)."""
import os

from mlperf_llm.containers.engine import ContainerError
from mlperf_llm.containers.image import ENGINE_ENV, FACTS_ENV, ID_ENV, REBUILD_ENV, TAG_ENV
from mlperf_llm.containers.served import served_from_lock
from mlperf_llm.submission.spec import IMAGE_FACTS_NAME
from mlperf_llm.sysinfo.envlock import LockError
from mlperf_llm.raycluster.placement import RayClusterError
from mlperf_llm.sysinfo.pyenv import PyEnvError
from mlperf_llm.vllm import records, server, service
from mlperf_llm.vllm.command import ServeConfigError
from mlperf_llm.vllm.inputs import parse_bool, run_options_from_env, split_urls
from mlperf_llm.vllm.install import check_build, check_device, probe
from mlperf_llm.vllm.replicas import ReplicaError


def _fail(e):
    return {'return': 1, 'error': str(e)}


def preprocess(i):
    env = i['env']
    if not env.get('CM_VLLM_MODEL') and env.get('CM_ML_MODEL_PATH'):
        env['CM_VLLM_MODEL'] = env['CM_ML_MODEL_PATH']
    try:
        if env.get('CM_VLLM_ACTION') == 'stop':
            if not env.get('CM_VLLM_SERVER_RECORD'):
                return _fail('_stop needs --server_record=PATH (the vllm-server-PORT.json the start printed)')
            for path in records.started_records(env):
                print(service.stop_record(server.ServerRecord.load(path), env))
            env['CM_VLLM_START'] = env['CM_VLLM_INSTALL'] = 'no'
            return {'return': 0}
        if split_urls(env.get('CM_VLLM_API_SERVERS')):
            if parse_bool('--docker', env.get('CM_VLLM_DOCKER')):
                return _fail('--docker starts the server in the run\'s image; --api_server uses servers that already '
                             'run: give one of the two')
            env.update(service.start_from_env(env, os.getcwd()))
            env['CM_VLLM_START'] = env['CM_VLLM_INSTALL'] = 'no'
            return {'return': 0}
        env['CM_VLLM_DOCKER'] = 'yes' if parse_bool('--docker', env.get('CM_VLLM_DOCKER')) else 'no'
        if env['CM_VLLM_DOCKER'] == 'yes':           # the image's facts beside this step's server log (the app
            env[FACTS_ENV] = os.path.join(os.getcwd(), IMAGE_FACTS_NAME)  # copies them)
        service.prepare(env, log=lambda m: None, tune=False)   # check every input before installing anything
        run_options_from_env(env)
        env['CM_VLLM_START'] = 'yes'
        env['CM_VLLM_INSTALL'] = 'yes'
        if env.get('CM_RAY_START') or service.ray_replicas_address(env):
            env['CM_VLLM_RAY'] = 'yes'               # Ray beside vLLM: install-ray (run-ray-node also needs it)
            if env['CM_VLLM_DOCKER'] == 'yes':
                return _fail('--docker serves from an image on this machine; a Ray cluster\'s replicas start on its '
                             'nodes from their own vLLM: leave out --docker, or the Ray options')
        if env['CM_VLLM_DOCKER'] == 'yes' and env.get('CM_VLLM_LOCK') and not env.get('CM_VLLM_PYTHON'):
            # a replay's lock: the image is built from it (build-mlperf-image), nothing installed here
            env.update(served_from_lock(env['CM_VLLM_LOCK']))
            how = ('the recorded image, rebuilt from its facts file and checked by ID' if env.get(REBUILD_ENV)
                   else 'an image built from that lock')
            print(f"vLLM {env['CM_VLLM_VERSION']} from {env['CM_VLLM_LOCK']}: served from {how}; nothing installed on "
                  "this machine")
        elif env.get('CM_VLLM_PYTHON'):              # --vllm_python: use that vLLM, install nothing
            found = probe(env['CM_VLLM_PYTHON'])
            check_build(found, env.get('CM_VLLM_DEVICE', ''), env.get('CM_GPU_COUNT'))
            print(f'using {found.describe()}: nothing installed')
            env.update(CM_VLLM_VERSION=found.version, CM_VLLM_BUILD=found.build,
                       CM_VLLM_TORCH_VERSION=found.torch, CM_VLLM_DEVICES_SEEN=str(found.devices))
            env['CM_VLLM_INSTALL'] = 'no'
        else:                                        # --device names a build this machine can run
            check_device(env.get('CM_VLLM_DEVICE', ''), env.get('CM_GPU_COUNT'))
        chosen = service.gpu_layout(env)            # on GPUs a GPU build serves: servers, GPUs each, settings
        if chosen is not None:
            print(chosen.describe())
            env.update(chosen.env())
    except (ServeConfigError, server.ServerError, PyEnvError, LockError) as e:
        return _fail(e)
    return {'return': 0}


def postprocess(i):
    env = i['env']
    if env.get('CM_VLLM_START') != 'yes':
        return {'return': 0}
    if env.get('CM_VLLM_DOCKER') == 'yes':           # build-mlperf-image (a prehook dep) built it
        env['CM_VLLM_IMAGE'] = env[TAG_ENV]
        env['CM_VLLM_IMAGE_ENGINE'] = env[ENGINE_ENV]
        print(f'serving from image {env["CM_VLLM_IMAGE"]} (ID {env.get(ID_ENV, "?")[:19]}; '
              f'facts: {env.get(FACTS_ENV, "?")}): a container with no network, vLLM on a Unix '
              'socket there, reached through a relay on this machine\'s port (docs/containers.md)')
    try:
        env.update(service.start_from_env(env, os.getcwd()))
    except (ServeConfigError, server.ServerError, ReplicaError, RayClusterError, ContainerError) as e:
        return _fail(e)
    if env.get('CM_VLLM_SERVER_PLACEMENT'):
        print(f'{env["CM_VLLM_SERVER_REPLICAS"]} vLLM servers serving {env["CM_VLLM_SERVER_MODEL_NAME"]!r}: '
              f'{env["CM_VLLM_SERVER_PLACEMENT"]}; logs {env["CM_VLLM_SERVER_LOG"].replace(os.pathsep, ", ")}')
    else:
        print(f'vLLM server at {env["CM_VLLM_SERVER_URL"]} serving {env["CM_VLLM_SERVER_MODEL_NAME"]!r}; '
              f'log {env["CM_VLLM_SERVER_LOG"]}')
    return {'return': 0}


def cleanup(i):
    """At the end of the whole run (also after a failure): stop the server this step started,
    unless --keep_server."""
    service.stop_from_env(i['env'])   # prints what it did
    return {'return': 0}
