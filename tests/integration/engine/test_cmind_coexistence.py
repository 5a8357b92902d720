"""The real `cm` command in a fresh CM home with cm4mlops registered beside this project.

cm4mlops (../shared/cm4mlops, the last mlcommons/cm4mlops) has its own `script` and `cache`
automations. With the cmind hook (automation/cmind_hook.py, installed by setup.py's .pth) plain
`cm run script`, `cmr`, `cm show/rm cache` go to this project's engine in either registration
order, cmind's index on or off; `cm run mlcommons@cm4mlops:script ...` gets upstream's engine and
cache. cm4mlops is registered as is where only our engine reads it, and as a copy where its own
engine runs (that writes next to the scripts it runs).
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CM4MLOPS = os.path.join(ROOT, "..", "shared", "cm4mlops")
BIN = os.path.dirname(sys.executable)
CM, CMR = os.path.join(BIN, "cm"), os.path.join(BIN, "cmr")
README_MAIN = ["run", "script", "--tags=run-mlperf,inference,_full,_embedded",
               "--model=llama2-70b-99", "--division=open", "--device=cpu",
               "--execution_mode=test", "--quiet"]
UPSTREAM_ALIAS = "mlcommons@cm4mlops"


@pytest.fixture(scope="module")
def setup_checked():
    if not os.path.exists(CM):
        pytest.fail(f"the cm command is not installed next to {sys.executable}: pip install . (README)")
    if not os.path.exists(os.path.join(CM4MLOPS, "cmr.yaml")):
        pytest.fail(f"no cm4mlops snapshot at {os.path.normpath(CM4MLOPS)} (../shared/cm4mlops next "
                    "to the checkout)")
    p = subprocess.run([sys.executable, "-c", "import cmind.core; "
                        "print(getattr(cmind.core.CM, '_cm4mlperf_hook', False))"],
                       capture_output=True, text=True, env=_clean_env())
    if p.stdout.strip() != "True":
        pytest.fail("the cmind hook is not active in this venv (no cm4mlperf_llm-cmind.pth in "
                    "site-packages, or another cmind): run `pip install .` (or `pip install -e .`) "
                    f"again. {p.stderr.strip()[-300:]}")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    # one engine cache for the module: the registry memo of cm4mlops' ~300 manifests is filled once
    return str(tmp_path_factory.mktemp("engine-cache"))


def _clean_env() -> dict:
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("CM_", "CM4MLPERF_")) and k != "PYTHONPATH"}   # CM_CORE_* too


def make_home(tmp_path, cache_dir, index: str, repos: list, pip_registered=False) -> dict:
    """A fresh CM home with these repositories added by `cm add repo`, in this order. Unless
    pip_registered, cmind's registration of installed cm* packages is off
    (CM_CORE_SKIP_INTERNAL_REPOS), so that a `pip install .` venv (CI) and an editable one register
    this checkout the same way, where the test puts it."""
    env = dict(_clean_env(), CM_REPOS=str(tmp_path / "CM"), CM4MLPERF_CACHE_DIR=cache_dir,
               CM_INDEX=index)
    if not pip_registered:
        env["CM_CORE_SKIP_INTERNAL_REPOS"] = "yes"
    os.makedirs(env["CM_REPOS"])
    for path in repos:      # as a user registers them, in this order (the index follows it)
        r = cm(env, "add", "repo", f"--path={path}", cwd=str(tmp_path))
        assert r.returncode == 0, r.stdout + r.stderr
    return env


def cm(env, *args, cmd=CM, cwd=None):
    return subprocess.run([cmd, *args], env=env, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL, cwd=cwd)


def upstream_copy(tmp_path) -> str:
    dest = str(tmp_path / "cm4mlops")
    shutil.copytree(CM4MLOPS, dest, ignore=shutil.ignore_patterns(".git"))
    return dest


@pytest.mark.parametrize("index", ["no", "yes"])
@pytest.mark.parametrize("order", ["ours-first", "cm4mlops-first"])
def test_plain_commands_run_our_engine_beside_cm4mlops(setup_checked, cache_dir, tmp_path, order,
                                                       index):
    repos = [ROOT, CM4MLOPS] if order == "ours-first" else [CM4MLOPS, ROOT]
    env = make_home(tmp_path, cache_dir, index, repos)
    cwd = str(tmp_path)

    r = cm(env, "run", "script", "--tags=detect,os", "--quiet", "-j", cwd=cwd)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)          # -j: only our engine's JSON on stdout
    assert out["new_env"]["CM_HOST_OS_TYPE"] == "linux" and len(out["key"]) == 64
    assert [s["script"] for s in out["steps"]][-1:] == ["detect-os"]

    r = cm(env, "detect os", "--quiet", cmd=CMR, cwd=cwd)
    assert r.returncode == 0 and "done: detect-os" in r.stdout, r.stderr

    # the README's plan-only command: our plan, and nothing of upstream's engine ran
    r = cm(env, *README_MAIN, "--dry-run", cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Plan for 'run-mlperf-inference-app") and "distinct steps" in r.stdout
    assert "INFO:root:* cm run script" not in r.stdout + r.stderr
    assert not os.path.exists(os.path.join(env["CM_REPOS"], "repos", "local", "cache")) or \
        os.listdir(os.path.join(env["CM_REPOS"], "repos", "local", "cache")) == []

    # an upstream-only script, planned by our engine
    r = cm(env, "run", "script", "--tags=get,cmake", "--dry-run", cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert "Plan for 'get-cmake'" in r.stdout

    r = cm(env, "show", "cache", cwd=cwd)
    assert r.returncode == 0 and f"in {cache_dir}" in r.stdout, r.stderr
    r = cm(env, "rm", "cache", "--tags=no-such-tag-anywhere", "-f", cwd=cwd)
    assert r.returncode == 0 and "removed 0 cache entries" in r.stdout, r.stderr

    # many manifests our engine cannot use: at most one line about them, never one per manifest
    r = cm(env, "run", "script", "--tags=detect,os", "--quiet", cwd=cwd)
    assert r.returncode == 0 and r.stderr.count("warning") <= 1, r.stderr
    r = cm(env, "check", "script", cwd=cwd)
    assert r.returncode == 0 and "scripts usable" in r.stdout, r.stderr


def test_find_through_the_python_api_returns_artifacts(setup_checked, cache_dir, tmp_path):
    env = make_home(tmp_path, cache_dir, "no", [CM4MLOPS, ROOT])
    code = ("import cmind\n"
            "r = cmind.access({'action': 'find', 'automation': 'script', 'tags': 'get,cmake'})\n"
            "assert r['return'] == 0, r\n"
            "a = r['list'][0]\n"
            "print(a.path, a.meta['alias'], a.repo_meta['alias'], ','.join(a.meta['tags']))\n")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=300)
    assert p.returncode == 0, p.stderr
    path, alias, repo, tags = p.stdout.split()
    assert alias == "get-cmake" and repo == UPSTREAM_ALIAS and "cmake" in tags.split(",")
    assert os.path.isfile(os.path.join(path, "_cm.yaml"))


@pytest.mark.parametrize("order, index", [("ours-first", "no"), ("ours-first", "yes"),
                                          ("cm4mlops-first", "yes")])
def test_naming_upstreams_engine_gets_it_with_its_cache(setup_checked, cache_dir, tmp_path, order,
                                                        index):
    upstream = upstream_copy(tmp_path)
    env = make_home(tmp_path, cache_dir, index,
                    [ROOT, upstream] if order == "ours-first" else [upstream, ROOT])
    cwd = str(tmp_path)
    r = cm(env, "run", f"{UPSTREAM_ALIAS}:script", "--tags=detect,os", "--quiet", cwd=cwd)
    assert r.returncode == 0, r.stdout + r.stderr
    # upstream's engine ran upstream's detect-os (ours has the same alias and uid)
    assert f"call {os.path.join(upstream, 'script', 'detect-os', 'run.sh')}" in r.stderr
    assert "done: detect-os" not in r.stdout

    # upstream's engine with its cache: get-python3 makes an entry in `local`, then reuses it
    for _ in range(2):
        r = cm(env, "run", f"{UPSTREAM_ALIAS}:script", "--tags=get,python3", "--quiet", cwd=cwd)
        assert r.returncode == 0, r.stdout + r.stderr
    assert "cm-cached-state.json" in r.stderr      # the second run loaded the cached state
    entries = os.listdir(os.path.join(env["CM_REPOS"], "repos", "local", "cache"))
    assert len(entries) == 1

    # our `cm show cache` lists it as another engine's; our `cm rm cache` leaves it alone
    r = cm(env, "show", "cache", "--tags=python3", cwd=cwd)
    assert r.returncode == 0 and "[other engine]  get-python3" in r.stdout, r.stderr
    r = cm(env, "rm", "cache", "--tags=python3", "-f", cwd=cwd)
    assert r.returncode == 0 and "left alone" in r.stdout, r.stderr
    assert f"cm rm {UPSTREAM_ALIAS}:cache --tags=python3 -f" in r.stdout
    assert os.listdir(os.path.join(env["CM_REPOS"], "repos", "local", "cache")) == entries
    # ... and the command it suggests removes it, with upstream's own cache automation
    r = cm(env, "rm", f"{UPSTREAM_ALIAS}:cache", "--tags=python3", "-f", cwd=cwd)
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.listdir(os.path.join(env["CM_REPOS"], "repos", "local", "cache")) == []

    # --dry-run is ours: naming upstream's engine with it is refused, nothing runs
    r = cm(env, "run", f"{UPSTREAM_ALIAS}:script", "--tags=detect,os", "--quiet", "--dry-run",
           cwd=cwd)
    assert r.returncode != 0 and "would run for real" in r.stderr + r.stdout
    assert "INFO:root:* cm run script" not in r.stderr


@pytest.mark.parametrize("index", ["no", "yes"])
def test_a_broken_manifest_first_in_its_folder_stops_nothing(setup_checked, cache_dir, tmp_path,
                                                             index):
    user = tmp_path / "user"
    (user / "script" / "aaa-broken").mkdir(parents=True)
    (user / "script" / "hello").mkdir(parents=True)
    (user / "cmr.yaml").write_text("alias: user-scripts\nuid: a111111111111111\n")
    (user / "script" / "aaa-broken" / "_cm.yaml").write_text("alias: aaa-broken\ntags: [a, b\n")
    (user / "script" / "hello" / "_cm.yaml").write_text(
        "alias: hello\nuid: b222222222222222\nautomation_alias: script\n"
        "automation_uid: 5b4e0237da074764\ntags: [hello, user]\n")
    env = make_home(tmp_path, cache_dir, index, [ROOT, str(user)])
    r = cm(env, "run", "script", "--tags=hello,user", "--quiet", cwd=str(tmp_path))
    assert r.returncode == 0 and "done: hello" in r.stdout, r.stderr
    assert "aaa-broken/_cm.yaml" in r.stderr            # named, once, by our registry
    r = cm(env, "run", "script", "--tags=detect,os", "--quiet", cwd=str(tmp_path))
    assert r.returncode == 0 and "done: detect-os" in r.stdout, r.stderr


def test_pip_registration_beside_cm4mlops(setup_checked, cache_dir, tmp_path):
    """This project found through `pip install .` (cmind lists installed cm* packages), only
    cm4mlops in repos.json. An editable install is not registered that way (README)."""
    p = subprocess.run([sys.executable, "-c", "import cm4mlperf_llm, os; "
                        "print(os.path.dirname(cm4mlperf_llm.__file__ or ''))"],
                       capture_output=True, text=True, env=_clean_env(), cwd=str(tmp_path))
    installed = p.stdout.strip()
    if p.returncode or not os.path.exists(os.path.join(installed, "cmr.yaml")) or \
            os.path.realpath(installed) == os.path.realpath(ROOT):
        pytest.skip("this venv has an editable install of the project, which cmind does not "
                    "register by itself; `pip install .` (as CI does) runs this test")
    for index in ("no", "yes"):
        env = make_home(tmp_path / index, cache_dir, index, [CM4MLOPS], pip_registered=True)
        r = cm(env, "run", "script", "--tags=detect,os", "--quiet", "-j", cwd=str(tmp_path))
        assert r.returncode == 0 and json.loads(r.stdout)["new_env"]["CM_HOST_OS_TYPE"], r.stderr
        r = cm(env, *README_MAIN, "--dry-run", cwd=str(tmp_path))
        assert r.returncode == 0 and r.stdout.startswith("Plan for 'run-mlperf-inference-app"), \
            r.stderr


def test_a_secret_typed_on_the_real_cm_command_line_is_warned_about_and_never_printed(setup_checked, cache_dir,
                                                                                     tmp_path):
    """`cm run ... --api_key=KEY` is on the process list for the whole run: the real `cm` warns, naming the
    variable the step reads instead (cmengine/cli.typed_secrets); the key itself is printed nowhere, and
    a key given that way (VLLM_API_KEY) draws no warning."""
    env = make_home(tmp_path, cache_dir, "no", [ROOT])
    r = cm(env, *README_MAIN, "--api_key=s3cretTYPED", "--dry-run", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    assert ("warning: --api_key is a secret on the command line, which every user of this machine can read (ps) "
            "while the run lasts and your shell's history keeps; export VLLM_API_KEY=... instead") in r.stderr
    assert "s3cretTYPED" not in r.stdout + r.stderr
    r = cm({**env, "VLLM_API_KEY": "s3cretENV"}, *README_MAIN, "--dry-run", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "secret on the command line" not in r.stderr and "s3cretENV" not in r.stdout + r.stderr
