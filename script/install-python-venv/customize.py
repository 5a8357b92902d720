"""install-python-venv: one venv per named purpose (_name.vllm, _name.quant, ...) in this step's cache
entry, so that packages with clashing pins (vLLM's torch, llmcompressor's) never share a venv.
Later steps install into it through get-generic-python-lib, which reads CM_VENV_PYTHON."""
import os
import sys

from cmcontract.yesno import is_yes
from mlperf_llm.sysinfo.pyenv import PyEnvError, check_venv_name, create_venv, installed_version


def preprocess(i):
    env = i['env']
    try:
        name = check_venv_name(env.get('CM_VENV_NAME', 'default'))
        dest = os.path.join(os.getcwd(), f'venv-{name}')
        python = create_venv(env['CM_PYTHON_BIN_WITH_PATH'], dest,
                             system_site_packages=is_yes(env.get('CM_VENV_SYSTEM_SITE_PACKAGES')))
        pip_version = installed_version(python, 'pip')
    except PyEnvError as e:
        return {'return': 1, 'error': str(e)}
    env['CM_VENV_NAME'] = name
    env['CM_VENV_DIR'] = dest
    env['CM_VENV_PYTHON'] = python
    env['CM_VENV_PIP_VERSION'] = pip_version
    print(f'venv {name}: {python} (pip {pip_version or "missing"})', file=sys.stderr)
    return {'return': 0}
