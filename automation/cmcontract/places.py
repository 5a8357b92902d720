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
