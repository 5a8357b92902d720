"""pip requests, venv names and round facts, in-process (what runs pip, venv or git is in
tests/integration/sysinfo/test_pyenv_src_processes.py)."""
import pytest

from mlperf_llm.sysinfo.pyenv import PackageRequest, PyEnvError, check_venv_name
from mlperf_llm.sysinfo.rounds import ROUNDS, RoundError, in_range, round_info


@pytest.mark.parametrize("req,spec", [
    (PackageRequest("mlcommons-loadgen", version="5.1"), "mlcommons-loadgen==5.1.*"),
    (PackageRequest("torch", version="2.13.0"), "torch==2.13.0"),
    (PackageRequest("mlcommons-loadgen", version_min="5.0.9", version_max="5.0.21"),
     "mlcommons-loadgen>=5.0.9,<=5.0.21"),
    (PackageRequest("transformers[torch]"), "transformers[torch]"),
])
def test_pip_spec(req, spec):
    assert req.pip_spec() == spec


def test_constraint_semantics_match_the_engine():
    assert PackageRequest("x", version="5.1").allows("5.1.2")
    assert not PackageRequest("x", version="5.1").allows("5.10.0")
    r = PackageRequest("x", version_min="5.0.9", version_max="5.0.21")
    assert r.allows("5.0.9") and r.allows("5.0.21") and not r.allows("5.0.22") and not r.allows("5.0.8")
    assert PackageRequest("transformers[torch]").dist_name == "transformers"


def test_bad_names_are_refused():
    with pytest.raises(PyEnvError, match="not a pip project name"):
        PackageRequest("torch; rm -rf /")
    with pytest.raises(PyEnvError, match="_name.vllm"):
        check_venv_name("my venv")


def test_rounds():
    assert round_info("r5.1") is ROUNDS["5.1"] and round_info("v5.0").src_tag == "v5.0"
    assert round_info("4.1").loadgen_min == "4.1.12"           # 4.1.7 has no built-in mlperf.conf
    with pytest.raises(RoundError, match="_r4.1, _r5.0, _r5.1"):
        round_info("r6.0")
    five = ROUNDS["5.0"]
    assert in_range("5.0.21", five) and not in_range("5.0.25", five) and not in_range("5.0.0", five)
    assert in_range("5.1.2", ROUNDS["5.1"]) and not in_range("", ROUNDS["5.1"])
