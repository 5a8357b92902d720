"""Real venv creation and real pip installs of mlcommons-loadgen per round (package index needed):
the seed each pinned wheel applies must be the round's."""
import re

import pytest

from mlperf_llm.sysinfo import envlock
from mlperf_llm.sysinfo.pyenv import installed_version
from mlperf_llm.rounds import ROUNDS

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def setup(engine_runner):
    runner = engine_runner      # the session's cache: a round's wheel another e2e test used is reused
    r = runner.run("install,python-venv,_name.lgtest")
    assert r["return"] == 0, r.get("error")
    return runner, r["new_env"]["CM_VENV_PYTHON"]


def test_venv_is_cached_and_usable(setup):
    runner, python = setup
    r = runner.run("install,python-venv,_name.lgtest")
    assert r["new_env"]["CM_VENV_PYTHON"] == python and "cached" in runner.output
    assert installed_version(python, "pip")


@pytest.mark.parametrize("rnd", list(ROUNDS))
def test_loadgen_round_pins_carry_the_round_seed(setup, rnd):
    runner, python = setup
    before = installed_version(python, "mlcommons-loadgen")
    r = runner.run(f"get,loadgen,_r{rnd}", env={"CM_VENV_PYTHON": python})
    assert r["return"] == 0, r.get("error")
    env = r["new_env"]
    assert env["CM_LOADGEN_QSL_RNG_SEED"] == str(ROUNDS[rnd].qsl_rng_seed)
    site = env["CM_LOADGEN_PYTHONPATH"]
    assert env["CM_LOADGEN_VERSION"] == installed_version(python, "mlcommons-loadgen", site)
    assert re.fullmatch(r"[0-9a-f]{64}", env["CM_LOADGEN_SHA256"])      # the wheel's, kept in the run's record
    # the round's wheel lives in the step's entry; the venv keeps what it had
    assert installed_version(python, "mlcommons-loadgen") == before
    again = runner.run(f"get,loadgen,_r{rnd}", env={"CM_VENV_PYTHON": python})
    assert again["new_env"]["CM_LOADGEN_PYTHONPATH"] == site and "cached" in runner.output


def test_a_version_outside_the_round_is_refused_before_pip(setup):
    runner, python = setup
    r = runner.run("get,loadgen,_r5.0", version="5.0.25", env={"CM_VENV_PYTHON": python})
    assert r["return"] != 0 and "5.0.25" in r["error"] and "5.0.9 .. 5.0.21" in r["error"]
    r = runner.run("get,loadgen,_r4.1", version_min="4.1.7", version_max="4.1.7",
                   env={"CM_VENV_PYTHON": python})
    assert r["return"] != 0 and "4.1.7" in r["error"] and "--version" in r["error"]


def test_unknown_version_fails_with_the_fix(setup):
    runner, python = setup
    r = runner.run("get,generic-python-lib,_package.mlcommons-loadgen", version="99.0.1",
                   env={"CM_VENV_PYTHON": python})
    assert r["return"] != 0 and "pip index versions mlcommons-loadgen" in r["error"]


def test_the_recorded_wheel_is_installed_by_its_hash(setup):
    """A replay's --env.CM_LOADGEN_LOCK: the recorded wheel, by its sha256, in an entry of its own;
    another file behind the hash refused."""
    runner, python = setup
    first = runner.run("get,loadgen,_r6.1", env={"CM_VENV_PYTHON": python})["new_env"]
    pin = f"mlcommons-loadgen=={first['CM_LOADGEN_VERSION']} --hash=sha256:{first['CM_LOADGEN_SHA256']}"
    r = runner.run("get,loadgen,_r6.1", env={"CM_VENV_PYTHON": python, "CM_LOADGEN_LOCK": pin})
    assert r["return"] == 0, r.get("error")
    assert r["new_env"]["CM_LOADGEN_SHA256"] == first["CM_LOADGEN_SHA256"]
    assert envlock.site_lock(r["new_env"]["CM_LOADGEN_PYTHONPATH"])["mlcommons-loadgen"].sha256 == first["CM_LOADGEN_SHA256"]
    assert r["new_env"]["CM_LOADGEN_PYTHONPATH"] != first["CM_LOADGEN_PYTHONPATH"]
    bad = runner.run("get,loadgen,_r6.1", env={"CM_VENV_PYTHON": python,
                                               "CM_LOADGEN_LOCK": pin[:-64] + "0" * 64})
    assert bad["return"] != 0 and "HASHES" in bad["error"], bad.get("error")
