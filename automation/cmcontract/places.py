"""Where the engine keeps its cache: `$CM4MLPERF_CACHE_DIR`, else `$CM_REPOS/cm4mlperf-llm-cache`
(`~/CM/cm4mlperf-llm-cache` without CM_REPOS). The library keeps its own memos there too. And the
folder `cm` was started in, which the engine hands every step of a run (RUN_CWD_ENV): a step runs in
a folder of its own, default output folders and relative paths a user typed are from there."""
from __future__ import annotations

import os
import re

RUN_CWD_ENV = "CM_RUN_CWD"      # the scripts' yaml names it as <<<CM_RUN_CWD>>>
RUN_PYTHON_ENV = "CM_RUN_PYTHON"   # the interpreter running cm: a step that takes it keys on it (get-python3)


def run_cwd(env: dict) -> str:
    """The folder `cm` was started in (this process's folder where the engine did not say)."""
    return os.path.abspath(env.get(RUN_CWD_ENV) or os.getcwd())


def running_python() -> str:
    """The interpreter running this process, one path per environment (RUN_PYTHON_ENV): in a venv its
    own bin/ entry named as the interpreter it runs (`venv/bin/python` and `venv/bin/python3.11` are
    one environment: `venv/bin/python3.11`); elsewhere the interpreter's real path. A venv is kept
    apart from the interpreter it was made from, and from another venv of it."""
    import sys
    real = os.path.realpath(sys.executable)
    if sys.prefix != sys.base_prefix:
        named = os.path.join(sys.prefix, "bin", os.path.basename(real))
        return named if os.path.exists(named) else sys.executable
    return real


def from_run_cwd(value: str, cwd: str) -> str:
    """A path typed relative to `cwd`, the folder `cm` was started in, made absolute (`~` expanded);
    an absolute path, a URL (`scheme://...`, or git's `user@host:path`) and "" as given."""
    if not value or "://" in value or re.match(r"[^/:@]+@[^/:]+:", value):
        return value
    value = os.path.expanduser(value)
    return value if os.path.isabs(value) else os.path.normpath(os.path.join(cwd, value))


def cache_root() -> str:
    explicit = os.environ.get("CM4MLPERF_CACHE_DIR", "").strip()
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    repos = os.environ.get("CM_REPOS", "").strip() or os.path.join(os.path.expanduser("~"), "CM")
    return os.path.join(repos, "cm4mlperf-llm-cache")
