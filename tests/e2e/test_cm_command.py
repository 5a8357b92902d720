"""The real `cm` command (cmind) in a subprocess, with this repository installed in its venv."""
import json
import os
import subprocess
import sys

import pytest

import chain
from costs import NO_QUERY_WORK_S
from enginefixtures import make_repo

pytestmark = pytest.mark.e2e

BIN = os.path.dirname(sys.executable)
CM = os.path.join(BIN, "cm")
CMR = os.path.join(BIN, "cmr")


@pytest.fixture
def cm_env(tmp_path):
    if not os.path.exists(CM):
        pytest.fail(f"the cm command is not installed next to {sys.executable}: "
                    "pip install . (see README)")
    env = dict(os.environ, CM_REPOS=str(tmp_path / "CM"), CM4MLPERF_CACHE_DIR=str(tmp_path / "cache"))
    os.makedirs(env["CM_REPOS"])
    chain.register_checkout(env)     # an editable install only (`pip install .`, as CI and the README do: cmind finds it)
    return env


def add_repo(env, path):
    """The repository added to the CM home's repos.json (beside the checkout an editable install registered)."""
    listed = os.path.join(env["CM_REPOS"], "repos.json")
    repos = json.load(open(listed)) if os.path.exists(listed) else []
    with open(listed, "w") as f:
        json.dump(repos + [path], f)


def cm(env, *args, cmd=CM):
    return subprocess.run([cmd, *args], env=env, capture_output=True, text=True, timeout=NO_QUERY_WORK_S,
                          stdin=subprocess.DEVNULL)


def test_detect_os_through_cm_with_json(cm_env):
    r = cm(cm_env, "run", "script", "--tags=detect,os", "--quiet", "-j")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["return"] == 0 and out["new_env"]["CM_HOST_OS_TYPE"] == "linux"


def test_cmr_shortcut(cm_env):
    r = cm(cm_env, "detect os", "--quiet", cmd=CMR)
    assert r.returncode == 0, r.stderr
    assert "done: detect-os" in r.stdout


def test_unknown_tag_is_a_clear_error_without_traceback(cm_env):
    r = cm(cm_env, "run", "script", "--tags=detect,oss", "--quiet")
    assert r.returncode != 0
    assert "Did you mean: os" in r.stderr and "Traceback" not in r.stderr + r.stdout


def test_user_repo_scripts_and_broken_manifest(cm_env, tmp_path):
    repo = make_repo(str(tmp_path / "user"), {"hello": ({"tags": ["hello", "user"], "cache": True,
                                                         "new_env_keys": ["CM_HELLO"]},
                                                        {"run.sh": "echo CM_HELLO=hi > tmp-run-env.out\n"})},
                     alias="user-scripts")
    # a broken manifest sorting last here; one sorting first (which cmind itself opens to learn
    # the folder's automation) is tested in tests/integration/engine/test_cmind_coexistence.py
    bad = os.path.join(repo.path, "script", "zz-broken")
    os.makedirs(bad)
    with open(os.path.join(bad, "_cm.yaml"), "w") as f:
        f.write("alias: zz-broken\ntags: [x\n")
    add_repo(cm_env, repo.path)
    r = cm(cm_env, "run", "script", "--tags=hello,user", "--quiet", "-j")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["new_env"]["CM_HELLO"] == "hi"
    assert "zz-broken/_cm.yaml" in r.stderr and "ignoring a broken script manifest" in r.stderr
    assert cm(cm_env, "run", "script", "--tags=detect,os", "--quiet").returncode == 0
    shown = cm(cm_env, "show", "cache", "--tags=hello")
    assert "hello" in shown.stdout and "1 cache entry" in shown.stdout
    gone = cm(cm_env, "rm", "cache", "--tags=hello", "-f")
    assert gone.returncode == 0 and "removed 1" in gone.stdout
    assert "0 cache entries" in cm(cm_env, "show", "cache").stdout


def test_plan_action_prints_verdicts(cm_env):
    r = cm(cm_env, "run", "script", "--tags=get,python3", "--quiet", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "get-python3" in r.stdout and "detect-os" in r.stdout and "run" in r.stdout


def test_json_output_stays_clean_when_hooks_print(cm_env, tmp_path):
    repo = make_repo(str(tmp_path / "user"), {"chatty": ({"tags": ["chatty"], "new_env_keys": ["CM_X"]},
                                                         {"customize.py": "def preprocess(i):\n"
                                                          "    print('hello from a hook')\n"
                                                          "    i['env']['CM_X'] = '1'\n"
                                                          "    return {'return': 0}\n"})},
                     alias="user-scripts")
    add_repo(cm_env, repo.path)
    r = cm(cm_env, "run", "script", "--tags=chatty", "--quiet", "-j")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["new_env"]["CM_X"] == "1"
    assert "hello from a hook" in r.stderr
