"""The keys of the project's real steps follow what their code imports (docs/engine.md, "The key").

Each test copies automation/, script/ and cmr.yaml to a temporary folder, plans there with that
copy's engine in a subprocess (hooks import the library next to the engine that runs them, so an
edit must be made in the copy the engine imports), marks every cached step of the plan as built
(an entry with the key, the code files and no outputs: nothing is installed), edits one library
file of the copy and plans again.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

PLAN = r"""
import json, os, sys
root, cache_dir, tags, publish, inputs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "publish", sys.argv[5]
sys.path.insert(0, os.path.join(root, "automation"))
from cmengine import cli
s = cli.Session([], cache_dir=cache_dir)
assert os.path.realpath(s.registry.repos[0].path) == os.path.realpath(root)
plan = s.plan({"action": "run", "tags": tags, "quiet": True, **json.loads(inputs)})
out = {}
for node in plan.nodes.values():
    if publish and node.manifest.cache and not node.verdict.cached:
        folder = s.store.new_folder(node.alias, node.key)
        s.store.publish(node.key, folder, {"alias": node.alias, "components": node.components,
                                           "code_files": node.code_files, "new_env": {}})
    out[node.alias] = {"verdict": node.verdict.action, "reason": node.verdict.reason,
                       "files": sorted(node.code_files)}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    dest = tmp_path_factory.mktemp("repo") / "cm4mlperf-llm"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for name in ("automation", "script"):
        shutil.copytree(os.path.join(ROOT, name), dest / name, ignore=skip)
    shutil.copy(os.path.join(ROOT, "cmr.yaml"), dest / "cmr.yaml")
    return dest


def plan(copy, cache, tags, publish=False, inputs=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CM_", "CM4MLPERF_"))}
    out = subprocess.run([sys.executable, "-c", PLAN, str(copy), str(cache), tags,
                          "publish" if publish else "plan", json.dumps(inputs or {})],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def built(copy, tmp_path, tags, inputs=None):
    """A cache in which every cached step of `tags` has an entry; the plan says all cached."""
    cache = tmp_path / "cache"
    plan(copy, cache, tags, publish=True, inputs=inputs)
    steps = plan(copy, cache, tags, inputs=inputs)
    assert all(s["verdict"] == "cached" for s in steps.values() if s["reason"] != "not cached (cache: false)"
               and s["verdict"] != "skip"), steps     # skip: below a cached step, never reached
    return cache


def edit(copy, rel):
    """Append a comment to a file of the copy; undone when the test ends (the copy is shared)."""
    path = copy / rel
    before = path.read_bytes()
    path.write_bytes(before + b"\n# edited by a test\n")
    return lambda: path.write_bytes(before)


@pytest.fixture
def edits(copy):
    undo = []
    yield lambda rel: undo.append(edit(copy, rel))
    for u in reversed(undo):
        u()


def test_editing_sysinfo_sut_leaves_install_vllm_cached_and_pyenv_renews_it(copy, tmp_path, edits):
    cache = built(copy, tmp_path, "install,vllm")
    edits("automation/mlperf_llm/sysinfo/sut.py")
    step = plan(copy, cache, "install,vllm")["install-vllm"]
    assert step["verdict"] == "cached", step
    assert step["reason"].endswith("(same script, inputs and deps)")
    assert "../../automation/mlperf_llm/sysinfo/sut.py" not in step["files"]

    edits("automation/mlperf_llm/sysinfo/pyenv.py")      # install-vllm's hook does import this
    step = plan(copy, cache, "install,vllm")["install-vllm"]
    assert step["verdict"] == "run"
    assert "the step's code: changed automation/mlperf_llm/sysinfo/pyenv.py" in step["reason"]


def test_editing_the_contract_module_a_hook_imports_rekeys_that_step_and_the_engine_none(copy, tmp_path, edits):
    cache = built(copy, tmp_path, "get,python3")
    edits("automation/cmengine/executor.py")             # the engine, imported by no hook
    edits("automation/cmengine/versions.py")             # the engine's version choice, the same
    assert plan(copy, cache, "get,python3")["get-python3"]["verdict"] == "cached"
    edits("automation/cmcontract/versions.py")           # get-python3's hook imports Constraint
    step = plan(copy, cache, "get,python3")["get-python3"]
    assert step["verdict"] == "run"
    assert "the step's code: changed automation/cmcontract/versions.py" in step["reason"]


# the README's command
README_TAGS = "run-mlperf,inference,_full,_embedded"
README_INPUTS = {"model": "llama2-70b-99.9", "division": "open", "device": "cpu", "execution_mode": "test"}


def test_editing_an_engine_module_leaves_every_cached_step_of_the_readme_plan_cached(copy, tmp_path, edits):
    # no step and no library module imports cmengine (tests/unit/contract/test_import_layers.py), so
    # an engine edit, an error message in errors.py included, changes no key
    cache = built(copy, tmp_path, README_TAGS, README_INPUTS)
    before = plan(copy, cache, README_TAGS, inputs=README_INPUTS)
    cached = sorted(a for a, s in before.items() if s["verdict"] == "cached")
    assert len(cached) >= 7 and "install-vllm" in cached, before
    assert not [f for s in before.values() for f in s["files"] if "/cmengine/" in f]
    for name in sorted(os.listdir(copy / "automation" / "cmengine")):
        if name.endswith(".py"):
            edits(f"automation/cmengine/{name}")
    after = plan(copy, cache, README_TAGS, inputs=README_INPUTS)
    assert sorted(a for a, s in after.items() if s["verdict"] == "cached") == cached, after


def test_a_module_only_named_in_an_error_message_is_not_in_the_key(copy, tmp_path, edits):
    tags = "get,preprocessed,dataset,openorca"
    # datasets/embedded.py only names it: "python -m mlperf_llm.datasets.embedded_reference ..."
    assert "mlperf_llm.datasets.embedded_reference" in (
        copy / "automation/mlperf_llm/datasets/embedded.py").read_text()
    cache = built(copy, tmp_path, tags)
    files = plan(copy, cache, tags)["get-preprocessed-dataset-openorca"]["files"]
    assert "../../automation/mlperf_llm/datasets/embedded.py" in files
    assert not [f for f in files if "embedded_reference" in f or "/harness/" in f], files
    edits("automation/mlperf_llm/datasets/embedded_reference.py")
    edits("automation/mlperf_llm/harness/client.py")
    assert plan(copy, cache, tags)["get-preprocessed-dataset-openorca"]["verdict"] == "cached"
    edits("automation/mlperf_llm/datasets/embedded.py")
    assert plan(copy, cache, tags)["get-preprocessed-dataset-openorca"]["verdict"] == "run"


def test_a_module_a_hook_starts_in_a_subprocess_is_in_the_key(copy, tmp_path, edits):
    # app-mlperf-inference's driver runs `[python, "-m", "mlperf_llm.harness.run", ...]`
    steps = plan(copy, tmp_path / "cache", "app,mlperf,inference")
    assert "../../automation/mlperf_llm/harness/run.py" in steps["app-mlperf-inference"]["files"]


def test_data_files_a_step_declares_renew_it(copy, tmp_path, edits):
    # the embedded split is built from datasets/embedded/*.jsonl: files read, not imported,
    # so its manifest lists them in cache_key_files
    tags = "get,preprocessed,dataset,openorca"
    cache = built(copy, tmp_path, tags)
    edits("automation/mlperf_llm/datasets/embedded/samples.jsonl")
    step = plan(copy, cache, tags)["get-preprocessed-dataset-openorca"]
    assert step["verdict"] == "run"
    assert "changed automation/mlperf_llm/datasets/embedded/samples.jsonl" in step["reason"]
