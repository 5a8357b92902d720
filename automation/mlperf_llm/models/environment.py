"""The environment a model was made in: the model steps' `ml` venv, its lock written beside the
model when the step runs (envlock.MODEL_LOCK_FILE), so that the record names every package that
fetched or converted the checkpoint (versions.model_environment) and a replay can make that venv
again, each archive by its hash (docs/reproduce.md, "The model's environment")."""
from __future__ import annotations

import os
import subprocess
import sys

from ..sysinfo import envlock


def write_lock(env: dict, folder: str) -> dict:
    """{MODEL_LOCK_ENV: the lock file} for a model step's outputs, the lock of the venv it ran in
    (CM_VENV_PYTHON) written into `folder` (its cache entry); {} where that venv cannot list itself,
    said on screen: the model is still made, and the record then has no model environment."""
    python = env.get("CM_VENV_PYTHON", "")
    if not python:
        return {}
    path = os.path.join(folder, envlock.MODEL_LOCK_FILE)
    try:
        pinned = envlock.write_requirements(python, path)
    except (envlock.LockError, OSError, subprocess.SubprocessError) as e:
        print(f"note: the model's environment ({python}) could not be listed, so the record will not name it: {e}",
              file=sys.stderr)
        return {}
    print(f"the model's environment: {pinned} packages by their archive's sha256 in {path}", file=sys.stderr)
    return {envlock.MODEL_LOCK_ENV: path}
