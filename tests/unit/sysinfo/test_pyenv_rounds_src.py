"""pip requests and venv names, in-process (what runs pip, venv or git is in
tests/integration/sysinfo/test_pyenv_src_processes.py)."""
import pytest

from mlperf_llm.sysinfo.pyenv import PackageRequest, PyEnvError, check_venv_name


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


def test_installed_by_reads_the_distributions_of_a_pip_report(tmp_path):
    from mlperf_llm.sysinfo.pyenv import installed_by
    report = tmp_path / "report.json"       # the shape pip 23's `install --report` writes (trimmed)
    report.write_text('{"version": "1", "pip_version": "23.2.1", "install": ['
                      '{"download_info": {}, "is_direct": false, "metadata": {"name": "torch", "version": "2.13.0+cpu"}},'
                      '{"download_info": {}, "is_direct": false, "metadata": {"name": "sympy", "version": "1.14.0"}}]}')
    assert installed_by(str(report)) == ["torch", "sympy"]
    report.write_text('{"version": "1", "install": []}')
    assert installed_by(str(report)) == []
