"""install-python-venv: one venv per named purpose (_name.vllm, _name.quant, ...) in this step's cache
entry, so that packages with clashing pins (vLLM's torch, llmcompressor's) never share a venv.
Later steps install into it through get-generic-python-lib, which reads CM_VENV_PYTHON (and find
what --lock installed already). --lock=FILE (a replay's, for the model steps' `ml` venv): the venv
is made from a recorded lock, each archive by its sha256, nothing resolved (pyenv.pip_install_locked)."""
import os
import sys

from cmcontract.yesno import is_yes
from mlperf_llm.sysinfo import envlock
from mlperf_llm.sysinfo.pyenv import PyEnvError, check_venv_name, create_venv, installed_version, pip_install_locked


def preprocess(i):
    env = i['env']
    try:
        name = check_venv_name(env.get('CM_VENV_NAME', 'default'))
        lock = env.get(envlock.VENV_LOCK_ENV, '')
        pinned = envlock.parse_file(lock) if lock else []      # read (or refused) before anything is made
        dest = os.path.join(os.getcwd(), f'venv-{name}')
        python = create_venv(env['CM_PYTHON_BIN_WITH_PATH'], dest,
                             system_site_packages=is_yes(env.get('CM_VENV_SYSTEM_SITE_PACKAGES')))
        if lock:
            print(f'venv {name} from the lock {lock}: {len(pinned)} packages, each by its archive\'s sha256, '
                  'nothing resolved', file=sys.stderr)
            pip_install_locked(python, lock)
        pip_version = installed_version(python, 'pip')
    except (PyEnvError, envlock.LockError) as e:
        return {'return': 1, 'error': str(e)}
    env['CM_VENV_NAME'] = name
    env['CM_VENV_DIR'] = dest
    env['CM_VENV_PYTHON'] = python
    env['CM_VENV_PIP_VERSION'] = pip_version
    print(f'venv {name}: {python} (pip {pip_version or "missing"})', file=sys.stderr)
    return {'return': 0}
