"""Upstream cm4mlops scripts, unmodified, under both engines in the same test.

The snapshot of mlcommons/cm4mlops next to every clone (../shared/cm4mlops) is copied to a
temporary folder and registered in a fresh CM home. Each case runs once under upstream's engine
(its own `cm` command, a subprocess:
`cm run mlcommons@cm4mlops:script <alias> --quiet --out=json`) and once under
ours (in-process, the same copy as its only repository), and the env (`new_env`) and `state`
they return are compared. Offline only: every script here finds what is on this host (the
Python running the test comes first on PATH, so get-generic-python-lib finds an installed
package and never reaches pip's network install).
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

from cmengine.registry import Repo
from enginefixtures import Runner

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
UPSTREAM = os.path.join(ROOT, "..", "shared", "cm4mlops")
CM = os.path.join(os.path.dirname(sys.executable), "cm")

pytestmark = pytest.mark.skipif(
    not os.path.isdir(os.path.join(UPSTREAM, "script")) or not os.path.isfile(CM),
    reason="needs ../shared/cm4mlops (the upstream snapshot) and cmind's `cm` next to python")


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    """A copy of the snapshot, registered alone in a fresh CM home (upstream's engine only)."""
    base = tmp_path_factory.mktemp("cm4mlops")
    repo = str(base / "cm4mlops")
    shutil.copytree(UPSTREAM, repo, symlinks=True)
    home = str(base / "cm-home")
    env = dict(os.environ, CM_REPOS=home, CM_INDEX="no",
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    env.pop("CM4MLPERF_CACHE_DIR", None)
    r = subprocess.run([CM, "add", "repo", f"--path={repo}"], env=env, capture_output=True,
                       text=True, cwd=str(base))
    assert r.returncode == 0, r.stdout + r.stderr
    return {"repo": repo, "env": env, "base": base}


def run_upstream(up, alias, tags="", inputs=None, env=None):
    # upstream's engine named explicitly: where this project is installed as a package (pip
    # install ., not -e) cmind registers it in every CM home, and plain `cm run script` is ours
    cmd = [CM, "run", "mlcommons@cm4mlops:script", alias, "--quiet", "--out=json"] + ([f"--tags={tags}"] if tags else [])
    cmd += [f"--{k}={v}" for k, v in (inputs or {}).items()]
    cmd += [f"--env.{k}={v}" for k, v in (env or {}).items()]
    work = up["base"] / f"up-{alias}"
    work.mkdir(exist_ok=True)
    r = subprocess.run(cmd, env=up["env"], capture_output=True, text=True, cwd=str(work),
                       stdin=subprocess.DEVNULL, timeout=600)
    assert r.returncode == 0, f"upstream's engine failed on {alias}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    lines = r.stdout.splitlines()
    start = max(i for i, line in enumerate(lines) if line == "{")
    return json.loads("\n".join(lines[start:]))


def run_ours(up, tmp_path, monkeypatch, alias, tags="", inputs=None, env=None, repos=None):
    monkeypatch.setenv("PATH", up["env"]["PATH"])
    monkeypatch.chdir(tmp_path)
    runner = Runner(repos or [Repo("cm4mlops", up["repo"])], str(tmp_path / "our-cache"))
    out = runner.run(tags, artifact=alias, env=dict(env or {}), **(inputs or {}))
    assert out["return"] == 0, f"our engine failed on {alias}: {out.get('error')}\n{runner.output[-3000:]}"
    return out


def comparable(new_env, volatile=()):
    return {k: v for k, v in new_env.items() if not any(p in k for p in volatile)}


CASES = [
    # alias, tags, inputs, env, env keys whose values legitimately differ between two runs
    ("detect-os", "", {}, {}, ()),
    ("detect-cpu", "", {}, {}, ("MHZ", "BOGOMIPS")),
    ("get-python3", "", {}, {}, ()),
    ("get-generic-python-lib", "_package.pyyaml", {}, {}, ()),
    ("print-hello-world", "_text.hi", {"test1": "from-input"}, {"CM_ENV_TEST3": "x"}, ()),
    ("print-hello-world-py", "", {}, {}, ()),
    ("dump-pip-freeze", "", {}, {}, ()),
]


@pytest.mark.parametrize("alias,tags,inputs,env,volatile", CASES, ids=[c[0] for c in CASES])
def test_same_env_and_state_under_both_engines(upstream, tmp_path, monkeypatch, alias, tags,
                                               inputs, env, volatile):
    theirs = run_upstream(upstream, alias, tags, inputs, env)
    ours = run_ours(upstream, tmp_path, monkeypatch, alias, tags, inputs, env)
    assert comparable(ours["new_env"], volatile) == comparable(theirs["new_env"], volatile)
    assert ours["new_state"] == theirs["new_state"]
    if alias in ("detect-os", "get-python3", "print-hello-world"):
        assert theirs["new_env"], f"{alias} returned no env under upstream's engine: nothing compared"


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed on this host")
def test_get_cmake_under_both_engines(upstream, tmp_path, monkeypatch):
    theirs = run_upstream(upstream, "get-cmake")
    ours = run_ours(upstream, tmp_path, monkeypatch, "get-cmake")
    assert ours["new_env"] == theirs["new_env"]
    assert ours["new_env"]["CM_CMAKE_BIN_WITH_PATH"] == shutil.which("cmake")


def test_get_git_repo_on_a_local_repository(upstream, tmp_path, monkeypatch):
    src = tmp_path / "src"
    src.mkdir()
    (src / "README").write_text("hello\n")
    git = ["git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "README"], check=True)
    subprocess.run(git + ["commit", "-qm", "one"], check=True)
    head = subprocess.run(git[:3] + ["rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    tags = f"_repo.{src}"
    theirs = run_upstream(upstream, "get-git-repo", tags)
    ours = run_ours(upstream, tmp_path, monkeypatch, "get-git-repo", tags)
    # the checkout is in each engine's own cache: same keys, same folder name, same commit
    assert set(ours["new_env"]) == set(theirs["new_env"])
    in_cache = {k for k, v in theirs["new_env"].items() if str(v).startswith(upstream["env"]["CM_REPOS"])}
    assert "CM_GIT_CHECKOUT_PATH" in in_cache
    assert comparable(ours["new_env"], in_cache) == comparable(theirs["new_env"], in_cache)
    for out in (ours, theirs):
        path = out["new_env"]["CM_GIT_CHECKOUT_PATH"]
        assert os.path.basename(path) == "repo"
        assert subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True,
                              text=True).stdout.strip() == head


def test_create_custom_cache_entry(upstream, tmp_path, monkeypatch):
    folder = tmp_path / "mine"
    folder.mkdir()
    inputs, env = {"path": str(folder)}, {"CM_EXTRA_CACHE_TAGS": "mine"}
    theirs = run_upstream(upstream, "create-custom-cache-entry", "", inputs, env)
    ours = run_ours(upstream, tmp_path, monkeypatch, "create-custom-cache-entry", "", inputs, env)
    assert ours["new_env"] == theirs["new_env"]
    assert ours["new_env"]["CM_CUSTOM_CACHE_ENTRY_PATH"] == str(folder)


def test_a_variation_only_upstream_has_resolves_to_upstreams_script(upstream, tmp_path,
                                                                   monkeypatch):
    """Our get-generic-python-lib comes first and has no _pandas: upstream's answers, and the
    plan says why (planned only: pandas may not be installed, and installing needs a network)."""
    monkeypatch.chdir(tmp_path)
    repos = [Repo("cm4mlperf-llm", ROOT), Repo("cm4mlops", upstream["repo"])]
    runner = Runner(repos, str(tmp_path / "cache"))
    out = runner.plan("get,generic-python-lib,_pandas")
    assert out["return"] == 0, out.get("error")
    top = out["plan"][-1]
    assert top["script"] == "get-generic-python-lib" and top["variations"] == ["pandas"]
    s = runner.session()
    from cmengine.registry import Query
    m = s.registry.select(Query.parse(["get", "generic-python-lib", "_pandas"]))
    assert m.repo == "cm4mlops"
    assert "cm4mlperf-llm:get-generic-python-lib has no variation _pandas" in s.registry.note
    # our own script still answers what it has
    assert s.registry.select(Query.parse(["get", "generic-python-lib", "_package.x"])).repo \
        == "cm4mlperf-llm"
