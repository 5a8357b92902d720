"""get-python3: find a Python 3 interpreter that satisfies the version constraint.

Search order: --python=PATH, the interpreter running cm, python3.X on PATH (newest first), python3.
"""
import os
import shutil
import subprocess
import sys

from cmcontract.versions import Constraint


def preprocess(i):
    env = i['env']
    want = Constraint(env.get('CM_VERSION', ''), env.get('CM_VERSION_MIN', ''),
                      env.get('CM_VERSION_MAX', ''))
    candidates = []
    if env.get('CM_PYTHON_BIN_WITH_PATH'):
        candidates.append(env['CM_PYTHON_BIN_WITH_PATH'])
    else:
        candidates.append(env.get('CM_RUN_PYTHON') or sys.executable)   # what the step's key holds (the engine's)
        for minor in range(14, 7, -1):
            p = shutil.which(f'python3.{minor}')
            if p:
                candidates.append(p)
        if shutil.which('python3'):
            candidates.append(shutil.which('python3'))
    seen = []
    for path in candidates:
        version = _version(path)
        if not version:
            continue
        seen.append(f'{path} ({version})')
        if want.allows(version):
            env['CM_PYTHON_BIN_WITH_PATH'] = path
            env['CM_PYTHON_BIN'] = os.path.basename(path)
            env['CM_PYTHON_BIN_PATH'] = os.path.dirname(path)
            env['CM_PYTHON_VERSION'] = version
            major, minor = version.split('.')[:2]
            env['CM_PYTHON_MAJOR_VERSION'], env['CM_PYTHON_MINOR_VERSION'] = major, minor
            env['+PATH'] = [os.path.dirname(path)]
            return {'return': 0}
    return {'return': 1, 'error': f'no Python 3 interpreter satisfies {want.describe()}; '
            f"found: {', '.join(seen) or 'none'}. Install one (e.g. apt-get install python3.11) "
            'or point to it with --python=/path/to/python3'}


def _version(path):
    try:
        out = subprocess.run([path, '-c', 'import platform; print(platform.python_version())'],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ''
    return out.stdout.strip() if out.returncode == 0 else ''
