"""install-ray: Ray for the server's python, in a site folder of this cache entry that the Ray node and
the replica launcher put first on PYTHONPATH (mlperf_llm.raycluster.install); vLLM's venv is left as
it was."""
import os

from mlperf_llm.raycluster.install import RAY_VERSION, install
from mlperf_llm.sysinfo.pyenv import PyEnvError


def preprocess(i):
    env = i['env']
    python = env.get('CM_VLLM_PYTHON', '')
    if not python:
        return {'return': 1, 'error': 'install-ray needs the server\'s python: --vllm_python=PATH or an '
                                      'install,vllm dependency'}
    folder = os.path.join(os.getcwd(), 'site-ray')
    version = env.get('CM_RAY_VERSION_ASKED') or RAY_VERSION
    print(f'installing ray=={version} for {python} into {folder} (what its environment lacks, ~240 MB)')
    try:
        have = install(python, folder, version)
    except PyEnvError as e:
        return {'return': 1, 'error': str(e)}
    env['CM_RAY_PYTHONPATH'] = folder
    env['CM_RAY_VERSION'] = have
    print(f'ray {have} in {folder}')
    return {'return': 0}
