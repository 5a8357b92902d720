"""TEST06's LoadGen step (`get-mlperf-inference-loadgen _test06`) without building: in the plan of the
real scripts, its own entry beside the benchmark's wheel, keyed on the source it is built from and on
nothing the results depend on; its hook with the build stubbed: what it hands on, and that each
source file it built from is re-checked on reuse (an edited source is built again)."""
import importlib.util
import os
import re
import sys

import pytest
import yaml

from cmengine.cache import found_files
from cmengine.registry import Repo
from enginefixtures import Runner
from mlperf_llm.rounds import get_round
from mlperf_llm.sysinfo import loadgen_src

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MAIN = "run-mlperf,inference,_full,_embedded,_r4.1"
STEP = os.path.join(ROOT, "script", "get-mlperf-inference-loadgen")


@pytest.fixture
def runner(tmp_path):
    return Runner([Repo("cm4mlperf-llm", ROOT)], str(tmp_path / "cache"), include_project=True)


def loadgen_keys(runner, tmp_path, **inputs) -> dict:
    """{variations: key} of the get-mlperf-inference-loadgen nodes of the main command's plan."""
    r = runner.plan(MAIN, model="llama2-70b-99", division="open", compliance="yes", **inputs)   # TEST06 asked for
    assert r["return"] == 0, r.get("error")
    found = re.findall(r"#\d+\s+(?:\[\w+\] )?get-mlperf-inference-loadgen (\S+)\s+\[([0-9a-f]+)\]", runner.output)
    return dict(found)


def checkout(folder) -> str:
    """A folder laid out as an mlcommons/inference checkout (the one command refuses any other)."""
    os.makedirs(folder / "loadgen")
    os.makedirs(folder / "tools" / "submission")
    (folder / "tools" / "submission" / "submission_checker.py").write_text("")
    return str(folder)


def test_test06_gets_its_own_loadgen_keyed_on_the_source_not_on_the_results(runner, tmp_path):
    src = checkout(tmp_path / "inference")
    checkout(tmp_path / "other")
    base = loadgen_keys(runner, tmp_path, inference_src=src, results_dir=str(tmp_path / "a"))
    assert set(base) == {"_r4.1", "_r4.1,_test06"}
    assert loadgen_keys(runner, tmp_path, inference_src=src, results_dir=str(tmp_path / "b"),
                        test_query_count="7") == base
    other = loadgen_keys(runner, tmp_path, inference_src=str(tmp_path / "other"), results_dir=str(tmp_path / "a"))
    assert other["_r4.1,_test06"] != base["_r4.1,_test06"]      # another source: another build
    assert other["_r4.1"] == base["_r4.1"]                      # the benchmark's wheel is not rebuilt


def hooks():
    spec = importlib.util.spec_from_file_location("loadgen_step_hooks", os.path.join(STEP, "customize.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fake_source(root):
    for rel in ("loadgen/setup.py", "loadgen/loadgen.cc", "loadgen/bindings/python_api.cc", "mlperf.conf"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    return str(root)


def test_a_build_is_handed_on_and_its_source_files_are_rechecked(tmp_path, monkeypatch):
    rnd = get_round("4.1")
    built = []

    def fake_build(python, source, site, r, **kept):
        built.append(source.loadgen_dir)
        assert os.path.basename(kept["store"]) == "builds"     # builds kept by what they depend on (build_kept)
        return loadgen_src.BuiltLoadgen(site, "4.1", r.qsl_rng_seed, os.path.join(site, "conf"))
    monkeypatch.setattr(loadgen_src, "build_for_round", fake_build)
    monkeypatch.setattr(loadgen_src, "missing_tools", lambda python: [])
    env = {"CM_MLPERF_INFERENCE_SOURCE": fake_source(tmp_path / "inference")}
    r = hooks()._for_test06({"env": env, "work_dir": str(tmp_path / "entry")}, rnd, sys.executable, "4.1.30")
    assert r == {"return": 0} and built == [str(tmp_path / "inference" / "loadgen")]
    assert env["CM_LOADGEN_PYTHONPATH"] == str(tmp_path / "entry" / "site-src")
    assert env["CM_LOADGEN_VERSION"] == "4.1" and env["CM_LOADGEN_TEST06_PROBLEM"] == ""
    assert env["CM_LOADGEN_SOURCE_DIGEST"] == loadgen_src.read_source(env["CM_MLPERF_INFERENCE_SOURCE"]).digest
    with open(os.path.join(STEP, "_cm.yaml")) as f:
        recheck = yaml.safe_load(f)["cache_recheck_env"]
    assert sorted(found_files(env, recheck)) == sorted(str(tmp_path / "inference" / "loadgen" / rel) for rel in
                                                       ("setup.py", "loadgen.cc", "bindings/python_api.cc"))


def test_no_source_keeps_the_wheel_says_why_and_is_not_kept(tmp_path):
    env = {}
    r = hooks()._for_test06({"env": env, "work_dir": str(tmp_path)}, get_round("4.1"), sys.executable, "4.1.30")
    assert r["return"] == 0 and r["cache"] is False and "later run" in r["reason"]
    assert env["CM_LOADGEN_TEST06_PROBLEM"].startswith("the LoadGen 4.1.30 wheel ignores")
    assert "--inference_src" in env["CM_LOADGEN_TEST06_PROBLEM"] and "CM_LOADGEN_PYTHONPATH" not in env


def test_a_wheel_that_runs_test06_is_used_as_it_is(tmp_path):
    env = {"CM_MLPERF_INFERENCE_SOURCE": fake_source(tmp_path / "inference")}
    r = hooks()._for_test06({"env": env, "work_dir": str(tmp_path)}, get_round("5.1"), sys.executable, "5.1.2")
    assert r == {"return": 0} and env["CM_LOADGEN_TEST06_PROBLEM"] == "" and env["CM_LOADGEN_SOURCE"] == ""


def test_docker_chains_host_builds_test06s_loadgen_for_the_image_only_where_test06_needs_it(tmp_path, monkeypatch,
                                                                                            capsys):
    """run-mlperf-inference-in-image (the host of --docker=chain) builds v4.1's TEST06 LoadGen into the
    cache's builds/ and names it for the image (CM_LOADGEN_HOST_BUILD); nothing without TEST06 or
    with a wheel that runs it; the reason where it cannot build."""
    spec = importlib.util.spec_from_file_location("in_image_hooks", os.path.join(ROOT, "script",
                                                  "run-mlperf-inference-in-image", "customize.py"))
    step = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(step)
    monkeypatch.setenv("CM4MLPERF_CACHE_DIR", str(tmp_path / "cache"))
    compiled = []

    def fake_build(python, source, site, timeout=3600):
        compiled.append(site)
        os.makedirs(site)

    monkeypatch.setattr(loadgen_src, "build", fake_build)
    monkeypatch.setattr(loadgen_src, "missing_tools", lambda python: [])
    src = fake_source(tmp_path / "inference")
    asked = {"CM_MLPERF_RUN_COMPLIANCE": "yes", "CM_MLPERF_COMPLIANCE_TESTS": "TEST06",
             "CM_LOADGEN_VERSION": "4.1.30", "CM_MLPERF_INFERENCE_SOURCE": src}
    env = dict(asked)
    step._test06_loadgen(env)
    built = env[loadgen_src.HOST_BUILD_ENV]
    assert os.path.dirname(built) == str(tmp_path / "cache" / "builds") and os.path.isdir(built)
    assert env[loadgen_src.HOST_PROBLEM_ENV] == "" and len(compiled) == 1
    assert f"LoadGen built here from {src}/loadgen for the image" in capsys.readouterr().err
    for other in ({"CM_MLPERF_RUN_COMPLIANCE": "no"}, {"CM_MLPERF_COMPLIANCE_TESTS": "TEST07,TEST09"},
                  {"CM_LOADGEN_VERSION": "5.1.2"}):
        env = {**asked, **other}
        step._test06_loadgen(env)
        assert not env.get(loadgen_src.HOST_BUILD_ENV) and not env.get(loadgen_src.HOST_PROBLEM_ENV), other
    env = {**asked, "CM_MLPERF_INFERENCE_SOURCE": ""}
    step._test06_loadgen(env)
    assert not env[loadgen_src.HOST_BUILD_ENV] and "no mlcommons/inference source" in env[loadgen_src.HOST_PROBLEM_ENV]
    assert len(compiled) == 1
