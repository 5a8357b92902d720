import pytest

from mlperf_llm.raycluster.install import RAY_VERSION, check_version
from mlperf_llm.sysinfo.pyenv import PyEnvError


def test_the_pinned_version_is_one_vllm_can_use():
    assert check_version(RAY_VERSION) == RAY_VERSION


@pytest.mark.parametrize("text, says", [("2.47.1", "vLLM needs Ray >= 2.48"), ("2.60", "not a release version"),
                                        ("latest", "not a release version"), ("2.60.0rc1", "not a release")])
def test_a_version_vllm_cannot_use_or_that_is_no_release_is_refused(text, says):
    with pytest.raises(PyEnvError, match=says):
        check_version(text)
