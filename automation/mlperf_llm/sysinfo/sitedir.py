"""A pip package installed into a folder of its own (a "site dir") that its users put first on
PYTHONPATH, instead of into the interpreter's environment.

A round's pinned LoadGen lives this way in its step's cache entry: a `_r4.1` run never replaces the
LoadGen that a `_r5.1` run, or the user, installed into the venv both use.
"""
from __future__ import annotations

import os
import shutil
import subprocess

from .pyenv import PackageRequest, PyEnvError


def with_path(path: str, base: dict | None = None) -> dict:
    """A copy of the environment with `path` first on PYTHONPATH."""
    env = dict(os.environ if base is None else base)
    if path:
        env["PYTHONPATH"] = os.pathsep.join([path] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def _run(argv: list[str], env: dict | None = None, timeout: float = 3600) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except FileNotFoundError as e:
        raise PyEnvError(f"{argv[0]} does not exist: point --python (or CM_PYTHON_BIN_WITH_PATH) at an "
                         "existing interpreter") from e
    except subprocess.TimeoutExpired as e:
        raise PyEnvError(f"{' '.join(argv[:4])} ... did not finish in {timeout:.0f} s") from e


def _tail(text: str, n: int = 8) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


def version_seen(python: str, dist_name: str, path: str) -> str:
    """The version of dist_name that `python` sees with `path` first on PYTHONPATH ("" if none)."""
    code = ("import importlib.metadata as m, sys\n"
            "try:\n    print(m.version(sys.argv[1]))\nexcept m.PackageNotFoundError:\n    pass\n")
    res = _run([python, "-c", code, dist_name], env=with_path(path), timeout=120)
    if res.returncode != 0:
        raise PyEnvError(f"{python} could not report the version of {dist_name}:\n{_tail(res.stderr)}")
    return res.stdout.strip()


def install(python: str, req: PackageRequest, folder: str, extra_args: tuple[str, ...] = (),
            timeout: float = 3600) -> str:
    """pip-install req (without its dependencies) for `python` into `folder`; returns the version
    `python` then sees there. pip writes into `folder`.tmp, renamed to `folder` only when complete."""
    tmp = folder + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    argv = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-deps", "--target", tmp,
            req.pip_spec(), *extra_args]
    res = _run(argv, timeout=timeout)
    if res.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise PyEnvError(f"pip could not install {req.pip_spec()} for {python}:\n{_tail(res.stderr or res.stdout)}\n"
                         "Check the version exists (pip index versions " + req.dist_name + ") or relax "
                         "--version/--version_min/--version_max.")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)
    have = version_seen(python, req.dist_name, folder)
    if not have or not req.allows(have):
        raise PyEnvError(f"after pip install {req.pip_spec()} into {folder}, {python} sees {req.dist_name} "
                         f"{have or '(none)'}")
    return have
