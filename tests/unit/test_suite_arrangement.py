"""How the suite is spread over pytest-xdist workers (tests/conftest.py: work_unit, GROUPED, FIRST)."""
import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("suite_conftest", Path(__file__).resolve().parents[1] / "conftest.py")
conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conftest)


def test_every_e2e_test_is_one_unit_and_other_modules_are_their_own():
    assert conftest.work_unit("tests/e2e/test_main_command.py::test_x") == "e2e"
    assert conftest.work_unit("tests/e2e/test_llama31_command.py::test_y[llama3.1-8b]") == "e2e"
    build = "tests/integration/sysinfo/test_loadgen_source_build.py"
    assert conftest.work_unit(f"{build}::test_z[Server]") == build and build in conftest.FIRST
    assert conftest.work_unit("tests/unit/vllm/test_command.py::test_a[x::y]") == "tests/unit/vllm/test_command.py"
    assert conftest.work_unit("tests/integration/engine/test_engine_runs.py::TestX::test_b") == \
        "tests/integration/engine/test_engine_runs.py"


def test_a_grouped_folder_is_one_unit_and_every_first_unit_exists():
    root = Path(__file__).resolve().parents[2]
    for name in ("test_models_llama2_script.py::test_a", "test_models_llama3_script.py::test_b[x]"):
        assert conftest.work_unit(f"tests/integration/models/{name}") == "tests/integration/models/"
    # a unit named first that no longer exists would silently drop out of the order
    assert all((root / unit).exists() for unit in conftest.FIRST), conftest.FIRST
    assert len(set(conftest.FIRST)) == len(conftest.FIRST)


def test_whether_the_sessions_cache_was_empty_is_read_by_the_controller_and_handed_to_the_workers(tmp_path, monkeypatch):
    """The README run's check of its fresh steps fails, not skips, where the cache was empty when the
    run began (CI's): the controller reads the store before any worker runs a test."""
    from types import SimpleNamespace
    controller = SimpleNamespace()
    monkeypatch.delenv("CM4MLPERF_CACHE_DIR", raising=False)
    assert conftest.session_cache_was_empty(controller) is True          # the e2e tests make a cache
    monkeypatch.setenv("CM4MLPERF_CACHE_DIR", str(tmp_path))
    assert conftest.session_cache_was_empty(controller) is True          # no store yet
    (tmp_path / "store").mkdir()
    assert conftest.session_cache_was_empty(controller) is True
    (tmp_path / "store" / "install-vllm-0-1").mkdir()
    assert conftest.session_cache_was_empty(controller) is False
    # a worker takes the controller's reading, whatever the store holds by the time it starts
    assert conftest.session_cache_was_empty(SimpleNamespace(workerinput={"session_cache_was_empty": True})) is True
