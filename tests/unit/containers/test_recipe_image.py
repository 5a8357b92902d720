"""containers/recipe.py, wheels.py and image.py without a process: the Containerfile installs only
what a hash pins, offline and without byte code; a record's recipe is read back or refused naming
what is wrong; the build context holds exactly the locked archives and the project's files at the
recipe's digest; a lock's packages that cannot be had are named one by one; a rebuilt image that
differs names the layer and its step."""
import hashlib
import os
import shutil
import subprocess

import pytest

from mlperf_llm.containers import image, recipe, wheels
from mlperf_llm.sysinfo.envlock import Locked

BASE = {"suite": "bookworm", "mirror": "http://m/debian", "source_date_epoch": 1700000000, "tar_sha256": "e" * 64,
        "included": ["python3"], "packages": ["python3=3.11.2-1+b1"], "variant": "minbase", "snapshot": ""}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def project(root):
    for rel, text in (("cmr.yaml", "alias: cm4mlperf-llm\n"), ("setup.py", "# setup\n"), ("README.md", "# read me\n"),
                      ("automation/a.py", "A = 1\n"), ("script/s/_cm.yaml", "alias: s\n"),
                      ("automation/__pycache__/a.cpython-311.pyc", "x"), ("automation/x.egg-info/PKG-INFO", "y")):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(root)


def a_recipe(tmp_path, wheel_bytes=b"six wheel"):
    root = project(tmp_path / "project")
    run = recipe.VenvLock("run", (Locked("six", "1.17.0", sha(wheel_bytes)),))
    tools = recipe.VenvLock("build", (Locked("pip", "25.0.1", sha(b"pip wheel")),))
    digest = recipe.files_sha256(root, recipe.project_files(root))
    return recipe.Recipe(BASE, (run,), tools, digest, {"git_commit": "c" * 40}), root


def test_the_containerfile_starts_from_scratch_and_installs_only_hashed_archives_offline(tmp_path):
    r, _ = a_recipe(tmp_path)
    text = r.containerfile()
    assert text.splitlines()[2:4] == ["FROM scratch", "ADD base.tar /"]
    assert "SOURCE_DATE_EPOCH=1700000000" in text and "VLLM_NO_USAGE_STATS=1" in text
    assert "PYTHONDONTWRITEBYTECODE=1" in text and "PIP_NO_CACHE_DIR=1" in text
    runs = [line for line in text.splitlines() if line.startswith("RUN ")]
    assert len(runs) == 3 and all("--no-index" in line for line in runs)
    assert all("--require-hashes" in line for line in runs[:2]) and all("--without-pip" in line for line in runs[:2])
    assert text.count("--no-compile") == 3 and "FROM " + "scratch" in text and "docker.io" not in text
    steps = image.layer_steps(r)
    assert steps[0] == "ADD base.tar /" and len(steps) == 7
    # the project's digest just before the project's step: a change of the project leaves the venvs' layers
    assert steps[-2].startswith("COPY project.sha256") and "source=project" in steps[-1]
    assert all("project" not in step for step in steps[:-2])


def test_a_lock_without_a_hash_cannot_go_into_an_image():
    with pytest.raises(recipe.RecipeError, match="no archive hash for six"):
        recipe.VenvLock("run", (Locked("six", "1.17.0"),))
    with pytest.raises(recipe.RecipeError, match="venv name"):
        recipe.VenvLock("../etc", ())


def test_a_recipe_goes_into_a_record_and_comes_back_the_same(tmp_path):
    r, _ = a_recipe(tmp_path)
    back = recipe.from_json(r.to_json())
    assert back == r and back.digest() == r.digest() and back.containerfile() == r.containerfile()


@pytest.mark.parametrize("change, said", [
    (lambda d: d.update(format=9), "recipe format 9"),
    (lambda d: d["base"].pop("tar_sha256"), "the base has no 'tar_sha256'"),
    (lambda d: d["venvs"][0]["distributions"][0].update(sha256=""), "no archive hash for six"),
    (lambda d: d.pop("build_tools"), "incomplete or malformed"),
    (lambda d: d["venvs"].reverse() or d["venvs"].insert(0, {"name": "vllm", "distributions": []}), "its 'run' venv is not the first"),
])
def test_a_damaged_recipe_in_a_record_is_refused_naming_what_is_wrong(tmp_path, change, said):
    data = a_recipe(tmp_path)[0].to_json()
    change(data)
    with pytest.raises(recipe.RecipeError, match=said):
        recipe.from_json(data, where="rec.json")


@pytest.mark.parametrize("change, said", [
    (lambda d: d["venvs"][0]["distributions"][0].update(name="six --index-url http://evil/"), "not a distribution name"),
    (lambda d: d["venvs"][0]["distributions"][0].update(version="1.0\n--extra-index-url=http://e"), "not a distribution"),
    (lambda d: d["base"].update(mirror="http://m/debian; rm -rf /"), "not an http"),
    (lambda d: d["base"].update(mirror="file:///etc"), "not an http"),
    (lambda d: d["base"]["included"].append("--customize-hook=sh"), "'--customize-hook=sh'"),
    (lambda d: d["base"].update(source_date_epoch="1700000000"), "not a time in seconds"),
    (lambda d: d["venvs"].append({"name": "build", "distributions": []}), "named 'build'"),
])
def test_a_recipe_from_elsewhere_holding_anything_but_names_versions_and_hashes_is_refused(tmp_path, change, said):
    data = a_recipe(tmp_path)[0].to_json()
    change(data)
    with pytest.raises(recipe.RecipeError, match=said):
        recipe.from_json(data, where="their.json")


def test_the_context_holds_the_locked_archives_and_the_projects_files_and_nothing_else(tmp_path):
    r, root = a_recipe(tmp_path)
    wheels_dir = tmp_path / "wheels"
    wheels_dir.mkdir()
    (wheels_dir / "six-1.17.0-py2.py3-none-any.whl").write_bytes(b"six wheel")
    (wheels_dir / "pip-25.0.1-py3-none-any.whl").write_bytes(b"pip wheel")
    (wheels_dir / "other-1.0-py3-none-any.whl").write_bytes(b"not locked")
    (tmp_path / "base.tar").write_bytes(b"rootfs")
    ctx = tmp_path / "ctx"
    recipe.write_context(r, str(ctx), str(tmp_path / "base.tar"), {"run": str(wheels_dir), "build": str(wheels_dir)},
                         root)
    files = sorted(os.path.relpath(os.path.join(d, f), ctx) for d, _, fs in os.walk(ctx) for f in fs)
    assert files == ["Containerfile", "base.tar", "locks/build.txt", "locks/run.txt",
                     "project.sha256", "project/README.md", "project/automation/a.py", "project/cmr.yaml", "project/script/s/_cm.yaml",
                     "project/setup.py",
                     "wheels/build/pip-25.0.1-py3-none-any.whl", "wheels/run/six-1.17.0-py2.py3-none-any.whl"]
    assert (ctx / "locks/run.txt").read_text() == f"six==1.17.0 --hash=sha256:{sha(b'six wheel')}\n"


def test_a_missing_archive_or_other_project_files_stop_the_context_naming_why(tmp_path):
    r, root = a_recipe(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "base.tar").write_bytes(b"rootfs")
    with pytest.raises(recipe.RecipeError, match=r"lacks the locked archive of six==1.17.0"):
        recipe.write_context(r, str(tmp_path / "ctx"), str(tmp_path / "base.tar"), {"run": str(empty)}, root)
    (wheels_dir := tmp_path / "w").mkdir()
    (wheels_dir / "six.whl").write_bytes(b"six wheel")
    (wheels_dir / "pip.whl").write_bytes(b"pip wheel")
    (tmp_path / "project/automation/a.py").write_text("A = 2\n")
    with pytest.raises(recipe.RecipeError, match=r"not those the recipe names .*git commit cccccccccccc"):
        recipe.write_context(r, str(tmp_path / "ctx"), str(tmp_path / "base.tar"),
                             {"run": str(wheels_dir), "build": str(wheels_dir)}, root)
    with pytest.raises(recipe.RecipeError, match="not a checkout of cm4mlperf-llm"):
        recipe.project_files(str(tmp_path / "w"))


def fake_pip(served: dict, refuse: set):
    """pip download: writes the served file for each asked name==version, fails for those in refuse."""
    def run(argv, **kw):
        dest = argv[argv.index("-d") + 1]
        if "-r" in argv:
            asked = [line.split(" ")[0] for line in open(argv[argv.index("-r") + 1]).read().splitlines()]
        else:
            asked = [a for a in argv if "==" in a]
        bad = [a for a in asked if a in refuse]
        if bad:
            return subprocess.CompletedProcess(argv, 1, "", f"ERROR: No matching distribution found for {bad[0]}")
        for a in asked:
            name, data = served[a]
            open(os.path.join(dest, name), "wb").write(data)
        return subprocess.CompletedProcess(argv, 0, "", "")
    return run


def test_archives_are_downloaded_and_a_lock_entry_without_a_hash_gets_the_archives(tmp_path):
    served = {"six==1.17.0": ("six-1.17.0-py2.py3-none-any.whl", b"six"),
              "rouge_score==0.1.2": ("rouge_score-0.1.2.tar.gz", b"sdist")}
    got = wheels.download([Locked("six", "1.17.0", sha(b"six")), Locked("rouge_score", "0.1.2", note="by hand")],
                          str(tmp_path), runner=fake_pip(served, set()))
    assert [(d.name, d.sha256) for d in got] == [("six", sha(b"six")), ("rouge_score", sha(b"sdist"))]


def test_an_archive_already_in_the_wheelhouse_is_not_asked_for_again(tmp_path):
    """A found image's recipe, a replay offline: what the wheelhouse holds by hash needs no index."""
    (tmp_path / "six-1.17.0-py2.py3-none-any.whl").write_bytes(b"six")
    asked = []

    def no_index(argv, **kw):
        asked.append(argv)
        return subprocess.CompletedProcess(argv, 1, "", "ERROR: no index here")
    got = wheels.download([Locked("six", "1.17.0", sha(b"six"))], str(tmp_path), runner=no_index)
    assert [(d.name, d.sha256) for d in got] == [("six", sha(b"six"))] and asked == []


def test_a_pin_without_a_hash_whose_archive_the_wheelhouse_holds_is_taken_from_it_with_no_index(tmp_path):
    """A record's run environment (a venv this project did not make: versions, no hashes) replayed
    again, its image in the store: pip takes each archive from the wheelhouse; the index is not asked."""
    (tmp_path / "idna-3.10-py3-none-any.whl").write_bytes(b"idna")
    (tmp_path / "PyYAML-6.0.2-cp311-cp311-manylinux_2_17_x86_64.whl").write_bytes(b"yaml")
    asked = []

    def wheelhouse_only(argv, **kw):          # pip with --no-index copies what --find-links holds into -d
        asked.append(argv)
        if "--no-index" in argv and argv[argv.index("--find-links") + 1] == str(tmp_path):
            for name in os.listdir(tmp_path):
                if os.path.isfile(tmp_path / name):
                    shutil.copyfile(tmp_path / name, os.path.join(argv[argv.index("-d") + 1], name))
            return subprocess.CompletedProcess(argv, 0, "", "")
        return subprocess.CompletedProcess(argv, 1, "", "ERROR: no index here")
    got = wheels.download([Locked("idna", "3.10"), Locked("pyyaml", "6.0.2")], str(tmp_path), runner=wheelhouse_only)
    assert [(d.name, d.sha256) for d in got] == [("idna", sha(b"idna")), ("pyyaml", sha(b"yaml"))]
    assert len(asked) == 1 and [a for a in asked[0] if "==" in a] == ["idna==3.10", "pyyaml==6.0.2"]


@pytest.mark.parametrize("offline_fails", [False, True])
def test_a_pin_without_a_hash_the_wheelhouse_lacks_is_asked_of_the_index(tmp_path, offline_fails):
    """One archive missing: the index is asked for the pins (pip resolves them together); where the
    wheelhouse seemed to hold them all but pip found none for this interpreter (another platform's
    wheel), the index too, and the lock takes the hash of the archive pip chose, not the other one."""
    (tmp_path / "idna-3.10-py3-none-any.whl").write_bytes(b"idna")
    if offline_fails:
        (tmp_path / "six-1.17.0-cp27-none-any.whl").write_bytes(b"old six")
    served = {"idna==3.10": ("idna-3.10-py3-none-any.whl", b"idna"),
              "six==1.17.0": ("six-1.17.0-py2.py3-none-any.whl", b"six")}
    calls = []
    index = fake_pip(served, set())

    def run(argv, **kw):
        calls.append("wheelhouse" if "--no-index" in argv else "index")
        if "--no-index" in argv:
            return subprocess.CompletedProcess(argv, 1, "", "ERROR: No matching distribution found for six==1.17.0")
        return index(argv, **kw)
    got = wheels.download([Locked("idna", "3.10"), Locked("six", "1.17.0")], str(tmp_path), runner=run)
    assert calls == (["wheelhouse", "index"] if offline_fails else ["index"])
    assert {d.name: d.sha256 for d in got} == {"idna": sha(b"idna"), "six": sha(b"six")}
    assert sorted(os.listdir(tmp_path)) == sorted(["idna-3.10-py3-none-any.whl", "six-1.17.0-py2.py3-none-any.whl"]
                                                  + (["six-1.17.0-cp27-none-any.whl"] if offline_fails else []))


def test_each_package_that_cannot_be_had_is_named(tmp_path):
    served = {"six==1.17.0": ("six-1.17.0-py2.py3-none-any.whl", b"six"),
              "idna==3.10": ("idna-3.10-py3-none-any.whl", b"idna")}
    entries = [Locked("six", "1.17.0", sha(b"six")), Locked("gone", "9.9", sha(b"x")), Locked("idna", "3.10"),
               Locked("nope", "0.1")]
    with pytest.raises(wheels.WheelError, match=r"2 package\(s\) of the lock could not be had: gone==9.9 \(No matching "
                                                r"distribution found for gone==9.9\); nope==0.1"):
        wheels.download(entries, str(tmp_path), runner=fake_pip(served, {"gone==9.9", "nope==0.1"}))


def built(layers, ident="sha256:" + "b" * 64):
    return image.ImageFacts(ident, "localhost/cm4mlperf-llm:x", "podman version 4.3.1", tuple(layers))


def test_a_rebuilt_image_that_differs_names_the_first_layer_and_step_that_differ():
    recorded = {"image_id": "sha256:" + "a" * 64, "engine": "podman version 4.3.1",
                "layers": [{"diff_id": "sha256:1", "step": "ADD base.tar /"}, {"diff_id": "sha256:2", "step": "COPY locks"},
                           {"diff_id": "sha256:3", "step": "RUN ... venv /opt/cm4mlperf/vllm"}]}
    image.check(recorded, built([("sha256:1", "")], "sha256:" + "a" * 64))           # the same ID: nothing to say
    with pytest.raises(image.ImageMismatch, match=r"layer 3 differs \(RUN ... venv /opt/cm4mlperf/vllm\): a package"):
        image.check(recorded, built([("sha256:1", "ADD base.tar /"), ("sha256:2", "COPY locks"),
                                     ("sha256:9", "RUN ... venv /opt/cm4mlperf/vllm")]))
    with pytest.raises(image.ImageMismatch, match=r"layer 1 differs \(ADD base.tar /\): the base differs"):
        image.check(recorded, built([("sha256:0", "ADD base.tar /")]))
    with pytest.raises(image.ImageMismatch, match="every layer is the same, so its configuration differs"):
        image.check(recorded, built([("sha256:1", ""), ("sha256:2", ""), ("sha256:3", "")]))


def test_a_servers_image_holds_vllms_venv_and_no_project(tmp_path):
    """--docker's image (venvs=vllm): no `run` venv, so no project layer and no project digest; a change
    of the project's files leaves its recipe (and tag) as they are; a record of it reads back."""
    vllm = recipe.VenvLock("vllm", (Locked("six", "1.17.0", sha(b"six wheel")),))
    tools = recipe.VenvLock("build", (Locked("pip", "25.0.1", sha(b"pip wheel")),))
    r = recipe.Recipe(BASE, (vllm,), tools, "", {})
    assert not r.has_project and "source=project" not in r.containerfile()
    assert [line.split(" ", 1)[0] for line in image.layer_steps(r)] == ["ADD", "COPY", "RUN", "COPY", "RUN"]
    assert recipe.from_json(r.to_json()) == r
    # the same vLLM in a run image (--docker=chain's: run, loadgen, vllm): the server's image is its
    # first layers, vLLM's first of the venvs, so one is built on the other's layers
    run = recipe.VenvLock("run", (Locked("cmind", "4.2.0", "c" * 64),))
    loadgen = recipe.VenvLock("loadgen", (Locked("mlcommons-loadgen", "6.0.17", "d" * 64),))
    whole = recipe.Recipe(BASE, (run, loadgen, vllm), tools, "9" * 64, {})
    server_steps, whole_steps = image.layer_steps(r), image.layer_steps(whole)
    assert whole_steps[:len(server_steps)] == server_steps
    assert [s.split()[1] for s in whole_steps if s.startswith("COPY")] == [
        "locks/build.txt", "locks/vllm.txt", "locks/loadgen.txt", "locks/run.txt", "project.sha256"]
    env_lines = [[x for x in each.containerfile().splitlines() if x.startswith("ENV")] for each in (r, whole)]
    assert env_lines[0] == env_lines[1] and len(env_lines[0]) == 1
    wheels_dir = tmp_path / "wheels"
    wheels_dir.mkdir()
    (wheels_dir / "six-1.17.0-py2.py3-none-any.whl").write_bytes(b"six wheel")
    (wheels_dir / "pip-25.0.1-py3-none-any.whl").write_bytes(b"pip wheel")
    (tmp_path / "base.tar").write_bytes(b"rootfs")
    ctx = tmp_path / "ctx"
    recipe.write_context(r, str(ctx), str(tmp_path / "base.tar"), {"vllm": str(wheels_dir), "build": str(wheels_dir)},
                         str(tmp_path / "not-a-checkout"))
    files = sorted(os.path.relpath(os.path.join(d, f), ctx) for d, _, fs in os.walk(ctx) for f in fs)
    assert files == ["Containerfile", "base.tar", "locks/build.txt", "locks/vllm.txt",
                     "wheels/build/pip-25.0.1-py3-none-any.whl", "wheels/vllm/six-1.17.0-py2.py3-none-any.whl"]
    with_digest = r.to_json() | {"project_sha256": "a" * 64}
    with pytest.raises(recipe.RecipeError, match="sha256 are not in their form"):
        recipe.from_json(with_digest)
    run_second = r.to_json() | {"venvs": r.to_json()["venvs"] + [{"name": "run", "distributions": []}],
                                "project_sha256": "a" * 64}
    with pytest.raises(recipe.RecipeError, match="'run' venv is not the first"):
        recipe.from_json(run_second)


class FakePodman:
    """An engine whose build is stopped halfway, leaving a working container, as podman's is when
    it is killed."""
    kind = "podman"

    def __init__(self):
        self.listed = ["aaa111 some-user-container", "bbb222 ubuntu-working-container"]
        self.removed = []

    def run(self, *args, check=True, timeout=0, what=""):
        if args[0] == "build":
            self.listed.append("ccc333 13c5ef8a800d-working-container")
            raise KeyboardInterrupt("signal 15")
        if args[0] == "rm":
            self.removed += list(args[2:])
        return subprocess.CompletedProcess(args, 0, "\n".join(self.listed) + "\n", "")


def test_a_stopped_build_removes_only_the_working_containers_it_made(tmp_path):
    r, _ = a_recipe(tmp_path)
    fake = FakePodman()
    with pytest.raises(KeyboardInterrupt):
        image.build(fake, r, str(tmp_path))
    assert fake.removed == ["ccc333"]           # another build's and a user's containers are left alone


def test_a_version_the_index_lacks_is_named_with_a_short_list_of_those_it_has():
    """pip lists every version it found; the message keeps the first and last three of a long list."""
    import subprocess
    from mlperf_llm.containers import wheels
    many = ", ".join(f"1.{n}.0" for n in range(30))
    res = subprocess.CompletedProcess([], 1, "", "ERROR: Could not find a version that satisfies the requirement "
                                      f"numpy==0.0.1 (from versions: {many})\nERROR: No matching distribution found")
    assert wheels._why(res) == ("Could not find a version that satisfies the requirement numpy==0.0.1 (from 30 "
                                "versions: 1.0.0, 1.1.0, 1.2.0, ..., 1.27.0, 1.28.0, 1.29.0)")
    few = subprocess.CompletedProcess([], 1, "", "ERROR: Could not find a version that satisfies the requirement "
                                      "x==2 (from versions: 1.0, 1.1)")
    assert wheels._why(few).endswith("(from versions: 1.0, 1.1)")


def test_each_venvs_byte_code_is_built_in_its_layer_and_a_format_2_recipe_builds_as_it_was():
    """Format 3: each venv's layer compiles its modules by their source's hash (not its time: the same
    bytes on every build); the project's layer does not. A recorded format-2 recipe reads back as
    format 2 and its Containerfile compiles nothing, so it rebuilds the image it recorded; a format
    neither reads is refused, naming both."""
    vllm = recipe.VenvLock("vllm", (Locked("six", "1.17.0", sha(b"six wheel")),))
    run = recipe.VenvLock("run", (Locked("cmind", "4.2.0", "c" * 64),))
    tools = recipe.VenvLock("build", (Locked("pip", "25.0.1", sha(b"pip wheel")),))
    now = recipe.Recipe(BASE, (run, vllm), tools, "9" * 64, {})
    assert now.format == recipe.FORMAT == 3 and now.to_json()["format"] == 3
    steps = [line for line in now.containerfile().splitlines() if line.startswith("RUN")]
    compiled = [line for line in steps if "compileall" in line]
    assert len(compiled) == 2 and all("--invalidation-mode unchecked-hash" in line for line in compiled)
    assert any(f"{recipe.PREFIX}/vllm/bin/python -m compileall" in line and f"{recipe.PREFIX}/vllm/lib" in line
               for line in compiled)
    assert "compileall" not in steps[-1] and "source=project" in steps[-1]
    assert "PYTHONDONTWRITEBYTECODE=1" in now.containerfile()        # nothing written when the container runs
    old = recipe.from_json(now.to_json() | {"format": 2})
    assert old.format == 2 and old.to_json()["format"] == 2 and "compileall" not in old.containerfile()
    assert old.digest() != now.digest() and recipe.from_json(old.to_json()) == old
    assert old.containerfile() == now.containerfile().replace(
        f" && ({recipe.PREFIX}/run/bin/python {recipe.BYTECODE} {recipe.PREFIX}/run/lib > /dev/null || true)", "").replace(
        f" && ({recipe.PREFIX}/vllm/bin/python {recipe.BYTECODE} {recipe.PREFIX}/vllm/lib > /dev/null || true)", "")
    with pytest.raises(recipe.RecipeError, match="recipe format 1, this version reads 2 and 3"):
        recipe.from_json(now.to_json() | {"format": 1})
