"""install-run-environment: a venv made exactly from a recorded run environment (--lock), and this
project from its files here: the interpreter a replay runs its chain in (mlperf_llm.reproduce.runenv)."""
import os
import sys

from mlperf_llm.sysinfo import envlock
from mlperf_llm.sysinfo.pyenv import PyEnvError, build_tools, create_venv, pip_install_locked, pip_install_project


def preprocess(i):
    env = i['env']
    lock = env.get(envlock.RUN_LOCK_ENV, '')
    if not lock:
        return {'return': 1, 'error': 'no run environment given: pass --lock=FILE (name==version lines, with '
                                      '--hash=sha256:... where the record knows it; a replay writes it)'}
    venv_dir = os.path.join(os.getcwd(), 'venv-run')
    try:
        entries = envlock.parse_file(lock, bare_pins=True)
        bare = [d.name for d in entries if not d.sha256]
        print(f'installing the recorded run environment {lock} into {venv_dir}: {len(entries)} packages, '
              f'{len(entries) - len(bare)} by their archive\'s sha256, {len(bare)} by exact version only '
              '(no hash recorded for them), nothing resolved', file=sys.stderr)
        python = create_venv(env['CM_PYTHON_BIN_WITH_PATH'], venv_dir)
        with build_tools(python) as build:      # one venv of the pinned build tools for both builds
            pip_install_locked(python, lock, bare_pins=True, build=build)
            pip_install_project(python, build=build)
    except (envlock.LockError, PyEnvError) as e:
        return {'return': 1, 'error': str(e)}
    env['CM_RUN_ENV_PYTHON'] = python
    env['CM_RUN_ENV_DIR'] = venv_dir
    print(f'run environment: {python} (this project installed from its files here)', file=sys.stderr)
    return {'return': 0}
