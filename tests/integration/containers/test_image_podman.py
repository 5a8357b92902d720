"""Images with the real podman, mmdebstrap and Charliecloud (installed by .ci/run from Debian): a
base built from the host's apt mirror, an image of a small locked venv and this project built in
two separate stores with the same ID, `cm` run in it as a non-root uid with the network off, the
image saved and loaded with its ID, the same image as a SquashFS run unprivileged by ch-run, and
nothing left behind (containers, images, mounts). docker's route (its own commands) with the real
docker CLI against podman's Docker-API service on a socket of the module's own (`docker_api`).
Skips, saying why, where the tools cannot run."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import pytest

from mlperf_llm.containers import base, engine, image, make, run, squash
from mlperf_llm.reproduce.capture import git_runner, project_section
from mlperf_llm.sysinfo import envlock
from container_tools import why_not as _why_not

ROOT = Path(__file__).resolve().parents[3]
CUDA = ROOT / "tests" / "fixtures" / "cuda"           # the stand-in driver and the probe tests/gpu runs
# what `cm` needs to start (cmind and what it requires, jinja2 for our templates): a small venv that
# builds in seconds; the whole run venv is built the same way (benchmarks/container_overhead.py)
SMALL = {"cmind", "pyyaml", "requests", "charset-normalizer", "idna", "urllib3", "certifi", "setuptools", "wheel",
         "giturlparse", "tabulate", "jinja2", "markupsafe",
         # and what the stand-in server needs (aiohttp), served as --docker serves vLLM; with LoadGen,
         # what the harness needs (a cnn_eval.json-layout data set: no pandas)
         "aiohttp", "aiohappyeyeballs", "aiosignal", "attrs", "frozenlist", "multidict", "propcache", "yarl",
         "typing-extensions", "mlcommons-loadgen"}
# the harness as run_all runs it for a cm step, in the image's run venv (the project installed there)
HARNESS_IN_IMAGE = """
import importlib.util, os, sys
sys.path.insert(0, os.path.join(list(importlib.util.find_spec("cm4mlperf_llm").submodule_search_locations)[0], "automation"))
from mlperf_llm.harness.driver import HarnessRequest, run_all
outcomes = run_all(HarnessRequest(model="llama3.1-8b", results_dir="/mnt/results", dataset_path="/mnt/cnn_eval.json",
                                  api_servers=(sys.argv[1],), api_model_name="standin-model", test_query_count=8,
                                  progress=False))
for o in outcomes:
    print("outcome", o.scenario, o.mode, o.returncode, o.directory)
sys.exit(max(o.returncode for o in outcomes))
"""


pytestmark = pytest.mark.skipif(bool(_why_not()), reason=_why_not() or "-")


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("images")


@pytest.fixture(scope="module")
def stores(work):
    """Private podman stores, each discarded at the end and checked for leaks."""
    made = []

    def store(name):
        folder = work / name
        e = engine.configured(engine.find("podman"), str(work)).with_store(str(folder))
        made.append((e, folder))
        return e
    yield store
    leaks = []
    for e, folder in made:
        left = e.run("ps", "-a", "--format", "{{.Names}}", check=False).stdout.split()
        leaks += [f"container {n} in {folder.name}" for n in left]
        leaks += engine.discard_store(e, str(folder))
        leaks += [f"{path} not removed" for path in (folder, e.runroot) if os.path.exists(path)]
    assert not leaks, leaks


@pytest.fixture(scope="module")
def built(work, stores):
    places = make.Places(str(work / "cache"))
    mirror, snapshot = base.host_mirror()
    b = base.build(base.BaseSpec(mirror, snapshot=snapshot), places.base_tar(base.BaseSpec(mirror)))
    reader = lambda python: [d for d in envlock.read(python) if envlock.dist_key(d.name) in SMALL]  # noqa: E731
    r = make.recipe_here(b, {"run": sys.executable}, str(ROOT), places,
                         project_section(str(ROOT), "0.1.0", git_runner(str(ROOT))), reader=reader)
    first = make.build(stores("a"), r, b, places, str(ROOT))
    return r, b, places, first


NO_DOCKER = "the docker CLI is not installed (docker's route is tested with it, against podman's Docker-API service)"


@pytest.fixture(scope="module")
def docker_api(stores, work):
    """docker's route (engine kind "docker") with the real docker CLI, against podman's Docker-API
    service (the API a Docker daemon serves) on a Unix socket of this module's own, over store "a"
    (the images `built` made): DOCKER_HOST names it while the module runs, as a docker user's
    environment names their daemon. The service is stopped before the stores are discarded."""
    binary = shutil.which("docker")
    if not binary:
        pytest.skip(NO_DOCKER)
    e = stores("a")
    sock = work / "docker.sock"
    service = subprocess.Popen(e.argv("system", "service", "--time=0", f"unix://{sock}"), env=e.environ(),
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    env = pytest.MonkeyPatch()
    env.setenv("DOCKER_HOST", f"unix://{sock}")
    d = engine.Engine("docker", binary)
    try:
        for _ in range(150):
            if service.poll() is not None:
                pytest.fail(f"podman system service ended (exit {service.returncode}): {service.stderr.read()[-2000:]}")
            if sock.exists() and d.run("version", check=False, timeout=30).returncode == 0:
                break
            time.sleep(0.2)
        else:
            pytest.fail("podman's Docker-API service did not answer within 30 s")
        yield d
    finally:
        env.undo()
        os.killpg(service.pid, signal.SIGTERM)
        try:
            service.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(service.pid, signal.SIGKILL)
            service.wait(timeout=30)


def engine_a(kind: str, stores, request) -> engine.Engine:
    """Store "a" through podman itself, or through the docker CLI (docker_api)."""
    return stores("a") if kind == "podman" else request.getfixturevalue("docker_api")


def test_the_record_rebuilds_the_same_image_id_in_another_cm_home_cache_and_store(built, stores, work):
    """The facts file rebuilds the image by `cm` in another CM home, cache and store: the same ID; the
    image saved as an archive loads by `cm --load` into a third store with that ID (the archive is
    checked against the facts, a wrong ID refused), and nothing is built for it; a vLLM lock given
    beside --from is not read."""
    r, b, places, first = built
    assert {v.name for v in r.venvs} == {"run"} and len(r.venvs[0].entries) == len(SMALL)
    assert b.facts()["packages"] and any(p.startswith("python3=") for p in b.facts()["packages"])
    assert [s for _, s in first.layers] == image.layer_steps(r)
    assert not os.path.exists(places.context(r))            # the build context is not kept
    facts = work / "first.json"
    image.write_facts(str(facts), first)
    stores("b")                                             # discarded with the others at the end
    home = work / "home-b"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CM_", "CM4MLPERF_"))}
    env.update(CM_REPOS=str(home / "CM"), CM4MLPERF_CACHE_DIR=str(home / "cache"), CM_CORE_SKIP_INTERNAL_REPOS="yes")
    cm = os.path.join(os.path.dirname(sys.executable), "cm")
    added = subprocess.run([cm, "add", "repo", f"--path={ROOT}"], env=env, capture_output=True, text=True, timeout=300)
    assert added.returncode == 0, added.stderr
    res = subprocess.run([cm, "run", "script", "--tags=build,mlperf,image", f"--from={facts}",
                          f"--store={work / 'b'}", f"--facts={work / 'b.json'}", "--quiet"],
                         env=env, capture_output=True, text=True, timeout=1200, cwd=str(home))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    again = json.loads((work / "b.json").read_text())
    assert again["image_id"] == first.image_id and again["layers"] == first.to_json()["layers"]
    assert f"the same image ID: {first.image_id}" in res.stdout
    assert os.path.isfile(home / "cache" / "containers" / os.path.basename(places.base_tar(base.BaseSpec(b.spec.mirror))))
    # the submitter's archive of it, loaded into a third store by `cm` and checked against the facts (no build)
    archive = work / "published.tar"
    image.save(stores("a"), first.tag, str(archive))
    assert archive.is_file() and not (work / "published.tar.partial").exists()
    with pytest.raises(engine.ContainerError, match="no such file"):
        image.load(stores("e"), str(work / "missing.tar"))
    load = [cm, "run", "script", "--tags=build,mlperf,image", f"--from={facts}", f"--load={archive}",
            f"--store={work / 'e'}", f"--facts={work / 'e.json'}", "--quiet"]
    # a replay gives its steps the record's vLLM lock too: with --from, the recipe's locks are the
    # image's, and a lock given beside them is not read (here one that is no lock at all)
    (work / "not-a-lock.txt").write_text("this is not == a lock\n")
    res = subprocess.run([*load, f"--vllm_lock={work / 'not-a-lock.txt'}"], env=env, capture_output=True, text=True,
                         timeout=1200, cwd=str(home))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert f"Loaded {first.image_id}" in res.stdout and f"the same image ID: {first.image_id}" in res.stdout
    assert f"{first.tag}: in the store already, not built again" in res.stdout  # found by its tag, not built
    other = dict(json.loads(facts.read_text()), image_id="sha256:" + "0" * 64)
    (work / "other.json").write_text(json.dumps(other))
    res = subprocess.run([*load[:4], f"--from={work / 'other.json'}", *load[5:]], env=env, capture_output=True,
                         text=True, timeout=1200, cwd=str(home))
    assert res.returncode != 0 and "is not the recorded sha256:000000000000" in res.stdout + res.stderr
    res = subprocess.run([*load[:4], *load[5:]], env=env, capture_output=True, text=True, timeout=300, cwd=str(home))
    assert res.returncode != 0 and "give --from=FILE too" in res.stdout + res.stderr


def test_cm_runs_in_the_image_as_a_non_root_uid_with_the_network_off(built, stores):
    r, _, _, first = built
    e = stores("a")
    res = run.run(e, run.RunSpec(first.tag, ("sh", "-c", "cm run script --tags=detect,os --quiet && "
                                             "python -c 'import urllib.request as u; u.urlopen(\"http://1.1.1.1\", timeout=3)'"),
                                 user="1000:1000", workdir="/tmp", env={"CM_REPOS": "/tmp/CM", "HOME": "/tmp"}),
                  timeout=600)
    assert "CM_HOST_OS" in res.stdout + res.stderr or "detect-os" in res.stdout + res.stderr, res.stdout + res.stderr
    assert res.returncode != 0 and "Network is unreachable" in res.stderr, res.stderr[-2000:]
    assert e.run("ps", "-a", "--format", "{{.Names}}").stdout.strip() == ""     # removed after it ended


# the child is an interactive `cm` stopped by Ctrl-C or SIGTERM: a pytest-xdist worker starts its
# children with SIGINT ignored, so the child takes Python's own Ctrl-C handler back first
STOPPED_CHILD = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {auto!r})
from mlperf_llm.containers import engine, run
e = engine.Engine.from_json({engine!r})
print("started", flush=True)
run.run(e, run.RunSpec({tag!r}, ("sleep", "300"), name="cm4mlperf-stopped"), capture=False)
"""


# docker's with one signal: the removal after either is the same code, and the engine's is what differs
@pytest.mark.parametrize("kind,sig", [("podman", signal.SIGTERM), ("podman", signal.SIGINT), ("docker", signal.SIGTERM)])
def test_a_run_stopped_by_a_signal_leaves_no_container(built, stores, request, kind, sig):
    """podman's and docker's (their removal commands differ: docker's `rm` has no -t)."""
    e = engine_a(kind, stores, request)
    code = STOPPED_CHILD.format(auto=str(ROOT / "automation"), engine=e.to_json(), tag=built[3].tag)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "started"
    for _ in range(100):                                     # the container is up
        if "cm4mlperf-stopped" in e.run("ps", "--format", "{{.Names}}").stdout:
            break
        time.sleep(0.2)
    else:
        child.kill()
        pytest.fail("the container never started")
    child.send_signal(sig)
    try:
        child.wait(timeout=120)
    except subprocess.TimeoutExpired:
        child.kill()
        pytest.fail(f"the run did not end within 120 s of {sig.name}")
    assert e.run("ps", "-a", "--format", "{{.Names}}").stdout.strip() == ""


@pytest.mark.parametrize("kind", ["podman", "docker"])
def test_dockers_server_answers_from_its_container_and_goes_with_it(built, stores, request, kind, tmp_path):
    """--docker's route (containers/served.py, server.ContainedProcess), under podman and under the
    docker CLI: the stand-in vLLM in the image with no network, on a Unix socket behind the host's
    relay on loopback (the port's holder: the relay), then stopped: the container and the socket's
    folder go; a second one whose relay and client are SIGKILLed (the container left running) is
    removed by server.stop (the record's removal command, the engine's own), its folder too."""
    from mlperf_llm.containers import served
    from mlperf_llm.containers.recipe import PREFIX
    from mlperf_llm.vllm import server
    _, _, _, first = built
    e = engine_a(kind, stores, request)
    fixtures = str(ROOT / "tests" / "fixtures" / "vllm")
    for n in (1, 2):
        port = server.free_port("127.0.0.1")
        launch = served.launcher(e, first.tag, host="127.0.0.1", port=port, model_name="smollm2",
                                 python=f"{PREFIX}/run/bin/python", mounts=(fixtures,))
        argv = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model=smollm2", f"--port={port}"]
        proc = launch(argv, {"PYTHONPATH": f"{fixtures}/standin_vllm"}, tmp_path / f"server-{n}.log")
        try:
            assert proc.record.container.startswith("cm4mlperf-vllm-") and proc.record.argv == argv
            assert proc.record.container_env == e.reach_env() and (kind == "podman" or "DOCKER_HOST" in e.reach_env())
            proc.wait_ready(180, progress=lambda m: None)          # the port's holder is the relay
            root = served.first_pid(e, proc.record.container)
            assert root and server.probe(proc.url, "smollm2") is None
            network = e.run("inspect", "--format", "{{.HostConfig.NetworkMode}}", proc.record.container).stdout
            assert network.strip() == "none"
            sockets = server.socket_folder(proc.record.log_path, proc.record.container)
            assert sockets.is_dir()
            if n == 1:
                said = proc.stop()
            else:
                os.killpg(proc.record.pgid, signal.SIGKILL)        # the engine's client dies; the container runs on
                proc.popen.wait(timeout=30)
                assert served.first_pid(e, proc.record.container) == root
                # stopped from its record as from another shell: docker's without DOCKER_HOST there
                # (the record names the daemon's socket: Engine.reach_env)
                shell = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}
                saved = tmp_path / "record.json"
                proc.record.save(saved)
                with mock.patch.dict(os.environ, shell, clear=True):
                    said = server.stop(server.ServerRecord.load(saved))
        finally:
            server.stop(proc.record)
        assert f"container {proc.record.container} removed" in said, said
        assert e.run("ps", "-a", "--format", "{{.Names}}").stdout.strip() == ""
        assert not sockets.exists()
        assert "not reachable" in (server.probe(proc.url, "smollm2") or "")


def test_the_docker_cli_runs_the_image_offline_as_a_non_root_uid_and_saves_and_loads_it_with_its_id(built, stores,
                                                                                                      docker_api, work):
    """docker's own commands for what podman's tests above do: a command in the image as uid 1000 with
    only loopback, the container gone after it; the image saved by `docker save` (no --format) and
    loaded by `docker load` and by podman into another store with the built image's ID; the recipe
    built by `docker build`; podman's archive loaded by docker with its ID."""
    _, _, _, first = built
    d = docker_api
    res = run.run(d, run.RunSpec(first.tag, ("sh", "-c", "id -u; ls /sys/class/net"), user="1000:1000"), timeout=300)
    assert res.returncode == 0 and res.stdout.split() == ["1000", "lo"], res.stdout + res.stderr
    assert d.run("ps", "-a", "--format", "{{.Names}}").stdout.strip() == ""
    archive = work / "docker-saved.tar"
    image.save(d, first.tag, str(archive))
    assert archive.is_file() and not (work / "docker-saved.tar.partial").exists()
    assert image.load(d, str(archive)) == first.image_id
    assert image.load(stores("f"), str(archive)) == first.image_id
    podmans = work / "podman-saved.tar"
    image.save(stores("a"), first.tag, str(podmans))
    # the same recipe built by `docker build` (image.build's docker arguments: the epoch as a build
    # argument, no --timestamp: the same-ID promise is podman's), its facts read by docker; then
    # podman's image loaded back by docker under its tag for the tests after this one
    d.run("rmi", first.tag)                                # the store "a" is docker's too
    r, b, places, _ = built
    by_docker = make.build(d, r, b, places, str(ROOT))
    assert by_docker.tag == first.tag and by_docker.image_id.startswith("sha256:")
    assert [s for _, s in by_docker.layers] == image.layer_steps(r) and by_docker.engine.startswith("Docker version")
    d.run("rmi", first.tag)
    assert image.load(d, str(podmans)) == first.image_id


def test_a_store_without_the_image_is_told_to_build_it(stores):
    with pytest.raises(engine.ContainerError, match="build it"):
        stores("d").run("image", "tree", "localhost/cm4mlperf-llm:nothing", what="inspecting")


NO_CHARLIECLOUD = "Charliecloud (ch-run) or setpriv not installed"


@pytest.fixture(scope="module")
def squashed(built, stores, request):
    """The image as a SquashFS with its .env and .run beside it, in a folder of its own outside
    pytest's 0700 base (the uid that runs it must reach the file)."""
    if not shutil.which("ch-run") or not shutil.which("setpriv"):
        pytest.skip(NO_CHARLIECLOUD)
    r, _, _, first = built
    shared = Path(tempfile.mkdtemp(prefix="cm4mlperf-sq-"))
    request.addfinalizer(lambda: shutil.rmtree(shared, ignore_errors=True))
    shared.chmod(0o755)
    return shared, squash.export(stores("a"), first.tag, str(shared / "image.sqfs"), r.epoch)


def test_the_image_as_squashfs_runs_cm_and_the_harness_unprivileged(squashed):
    """As uid 1000: `cm` in the SquashFS, then the harness (run_all: LoadGen's Offline performance and
    accuracy tests, each a process of the image's run venv) against the stand-in on the host's loopback."""
    from mlperf_llm.datasets import cnndm
    from standin import StandinProcess, toytok
    shared, sqfs = squashed
    scratch = shared / "scratch"
    scratch.mkdir()
    articles = [f"article {i}: what happened on day {i}" for i in range(8)]
    cnndm.write_rows([cnndm.SummaryRow(a, f"summary {i}", tuple(toytok.encode(cnndm.prompt(a))))
                      for i, a in enumerate(articles)], scratch / "cnn_eval.json")
    shutil.chown(scratch, 1000, 1000)

    def as_uid_1000(argv: list[str]) -> subprocess.CompletedProcess:
        res = subprocess.run(["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", *argv], capture_output=True,
                             text=True, timeout=600, env={"PATH": os.environ["PATH"], "USER": "cmuser",
                                                          "HOME": str(scratch)})
        if res.returncode != 0 and "user namespace" in res.stderr.lower():
            pytest.skip(f"this kernel gives no unprivileged user namespaces: {res.stderr.strip()[-300:]}")
        return res

    res = as_uid_1000(squash.run_argv(sqfs, ["sh", "-c", "id -u && CM_REPOS=/mnt/CM HOME=/mnt cm run script "
                                                         "--tags=detect,os --quiet"],
                                      binds=((str(scratch), "/mnt"),), workdir="/mnt"))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert res.stdout.splitlines()[0] == "1000"
    with StandinProcess() as sp:
        res = as_uid_1000(squash.run_argv(sqfs, ["python", "-c", HARNESS_IN_IMAGE, sp.url],
                                          binds=((str(scratch), "/mnt"),), workdir="/mnt"))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    said = [line.split() for line in res.stdout.splitlines() if line.startswith("outcome ")]
    assert [(s[1], s[2]) for s in said] == [("Offline", "performance"), ("Offline", "accuracy")], res.stdout[-2000:]
    accuracy = Path(str(scratch / "results") + said[1][4][len("/mnt/results"):]) / "mlperf_log_accuracy.json"
    logged = json.loads(accuracy.read_text())
    assert sorted({rec["qsl_idx"] for rec in logged}) == list(range(8))      # every sample answered, in the image
    assert all(p.stat().st_uid == 1000 for p in (scratch / "results").rglob("*"))
    assert not engine.mounts_under(str(shared))                                # squashfuse unmounted


STANDIN_SMI = "Stand-in GPU, 1024 MiB"                  # what the stand-in nvidia-smi prints
STANDIN_DEVICES = [{"name": "Stand-in GPU", "memory_bytes": 1 << 30, "read_back_ok": True}]   # the probe's view


def standin_driver(lib: Path, smi: Path) -> None:
    """A stand-in NVIDIA driver where no GPU exists: `lib` built from tests/fixtures/cuda/standin_libcuda.c
    (soname libcuda.so.1), `smi` a script printing STANDIN_SMI. Skips the test without gcc."""
    if not shutil.which("gcc"):
        pytest.skip("no C compiler (gcc) to build the stand-in libcuda.so.1")
    for folder in {lib.parent, smi.parent}:
        folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(lib),
                    str(CUDA / "standin_libcuda.c")], check=True)
    smi.write_text(f"#!/bin/sh\necho '{STANDIN_SMI}'\n")
    smi.chmod(0o755)


def test_the_squashfs_launcher_brings_the_hosts_gpu_driver_to_a_non_root_uid(squashed):
    """IMAGE.sqfs.run --gpus=nvidia as uid 1000 with a stand-in driver (no GPU here: a libcuda.so.1
    built from tests/fixtures/cuda/standin_libcuda.c, on the host's LD_LIBRARY_PATH as a container
    host has its driver, and a stand-in nvidia-smi): the driver's files staged in the work folder,
    first on the image's paths, the probe the GPU node runs (tests/gpu) loading them in the image."""
    shared, sqfs = squashed
    driver = shared / "driver"                      # reachable by uid 1000
    standin_driver(driver / "lib64" / "libcuda.so.555.42.06", driver / "bin" / "nvidia-smi")
    (driver / "lib64" / "libcuda.so.1").symlink_to("libcuda.so.555.42.06")
    work = shared / "gpu-work"
    work.mkdir()
    shutil.copyfile(CUDA / "cuda_probe.py", work / "cuda_probe.py")
    shutil.chown(work, 1000, 1000)
    # the caller's environment as a user's shell has it (no USER: the launcher gives ch-run one), host
    # folders in it that mean nothing in the image; then `cm` as the docs run it, its CM home in /mnt
    env = {"PATH": f"{driver / 'bin'}:{os.environ['PATH']}", "LD_LIBRARY_PATH": str(driver / "lib64"),
           "HOME": str(shared / "the-hosts-home"), "PYTHONPATH": str(ROOT / "automation"), "VIRTUAL_ENV": sys.prefix}
    inside = ("python3 /mnt/cuda_probe.py && echo \"HOME=$HOME PYTHONPATH=${PYTHONPATH:-unset} "
              "VIRTUAL_ENV=${VIRTUAL_ENV:-unset}\" && cm run script --tags=detect,os --quiet > /dev/null && ls -d /mnt/CM")
    res = subprocess.run(["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", f"{sqfs}.run", "--gpus=nvidia",
                          f"--work={work}", "--", "sh", "-c", inside],
                         capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "NVIDIA driver 555.42.06 from this host: 1 library and nvidia-smi" in res.stderr
    lines = res.stdout.strip().splitlines()
    assert lines[-2:] == ["HOME=/mnt PYTHONPATH=unset VIRTUAL_ENV=unset", "/mnt/CM"]
    probe = json.loads(lines[-3])
    assert probe["uid"] == 1000 and "bookworm" in probe["os"]
    assert probe["libcuda"] == "/mnt/.host-gpu/nvidia-555.42.06/lib/libcuda.so.1"
    assert probe["ld_library_path"] == "/mnt/.host-gpu/nvidia-555.42.06/lib"      # not the host's folder
    assert probe["devices"] == STANDIN_DEVICES
    assert probe["nvidia_smi"] == STANDIN_SMI
    staged = work / ".host-gpu" / "nvidia-555.42.06"
    assert all(p.stat().st_uid == 1000 for p in staged.rglob("*"))
    assert not engine.mounts_under(str(shared))


STANDIN_CDI_PREFIX = "cm4mlperf-test-standin-"             # + the pid of the test's process
# a CDI spec of the shape `nvidia-ctk cdi generate` writes (kind nvidia.com/gpu, a device "all",
# the driver's files mounted into the container), with a stand-in driver's files in place of NVIDIA's
STANDIN_CDI = """cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
- name: all
  containerEdits:
    mounts:
    - hostPath: {lib}
      containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.1
      options: [ro, nosuid, nodev, bind]
containerEdits:
  env:
  - NVIDIA_VISIBLE_DEVICES=void
  mounts:
  - hostPath: {smi}
    containerPath: /usr/bin/nvidia-smi
    options: [ro, nosuid, nodev, bind]
"""


def test_podman_passes_nvidia_gpus_by_the_hosts_cdi_spec_to_a_non_root_uid(built, stores, tmp_path):
    """run.run with gpus="nvidia" under the real podman: the project's own arguments
    (`--device nvidia.com/gpu=all`) and its CDI check, against a spec in /var/run/cdi (podman 4.3 reads
    specs from /etc/cdi and /var/run/cdi only; this one is removed afterwards) whose driver is a
    stand-in (no GPU here: tests/fixtures/cuda/standin_libcuda.c); the probe the GPU node runs
    (tests/gpu) loads it in the image as uid 1000. Where a spec of NVIDIA's GPUs exists already (a
    GPU host), it is left alone and the test skips: tests/gpu runs there."""
    cdi_dir = Path(run.CDI_DIRS[1])
    for left in cdi_dir.glob(f"{STANDIN_CDI_PREFIX}*.yaml"):        # of a run killed before its cleanup
        if not Path("/proc", left.stem[len(STANDIN_CDI_PREFIX):]).exists():
            left.unlink()
    if run.CDI_NVIDIA in run.cdi_kinds(run.CDI_DIRS):
        pytest.skip("this host has a CDI spec of NVIDIA's GPUs: not replaced by a stand-in (tests/gpu runs here)")
    r, _, _, first = built
    e = stores("a")
    with pytest.raises(engine.ContainerError, match="nvidia-ctk cdi generate"):
        run.check_gpus("nvidia", e)                          # no spec yet: refused before any container
    driver = tmp_path / "driver"
    standin_driver(driver / "libcuda.so.1", driver / "nvidia-smi")
    made_dir = not cdi_dir.exists()
    spec = cdi_dir / f"{STANDIN_CDI_PREFIX}{os.getpid()}.yaml"
    cdi_dir.mkdir(parents=True, exist_ok=True)
    spec.write_text(STANDIN_CDI.format(lib=driver / "libcuda.so.1", smi=driver / "nvidia-smi"))
    try:
        run.check_gpus("nvidia", e)
        res = run.run(e, run.RunSpec(first.tag, ("python3", "/probe/cuda_probe.py"), gpus="nvidia", user="1000:1000",
                                     mounts=(run.Mount(str(CUDA), "/probe"),)), timeout=300)
    finally:
        spec.unlink()
        if made_dir:
            cdi_dir.rmdir()
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    probe = json.loads(res.stdout.strip().splitlines()[-1])
    assert probe["uid"] == 1000 and "bookworm" in probe["os"]
    assert probe["libcuda"] == "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
    assert probe["devices"] == STANDIN_DEVICES
    assert probe["nvidia_smi"] == STANDIN_SMI
    assert e.run("ps", "-a", "--format", "{{.Names}}").stdout.strip() == ""     # removed after it ended


# what --docker=chain's container is asked to prove here (the small image has no vLLM): the image's
# cm with its CM home in the mounted folder, the results folder written at the host's path as the
# caller's uid, the prepared model read-only, no network
CHAIN_PROBE = """set -e
cm run script --tags=detect,os --quiet >/dev/null
echo written > "$1/result.txt"
if touch "$2/changed" 2>/dev/null; then echo "model writable"; exit 3; fi
python -c 'import urllib.request as u; u.urlopen("http://1.1.1.1", timeout=3)' 2>/dev/null && { echo "network"; exit 4; }
echo chain-probe-ok
"""


def test_the_chains_container_mounts_what_the_host_prepared_and_writes_results_as_the_caller(built, stores, tmp_path):
    from dataclasses import replace
    from mlperf_llm.containers import chain
    _, _, _, first = built
    e = stores("a")
    model = tmp_path / "prepared" / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    results = tmp_path / "out" / "results"
    env = {"CM_MLPERF_RESULTS_DIR": str(results), "CM_MLPERF_SUBMISSION_DIR": str(tmp_path / "out" / "submission"),
           "CM_ML_MODEL_PATH": str(model), "CM_MLPERF_IMAGE_TAG": first.tag, "CM_GPU_COUNT": "0"}
    # a file handed in from the submission's parent (--sut_json=./sut.json): that folder mounted once, read-write
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "sut.json").write_text("{}")
    request = {"tags": ["run-mlperf", "inference"], "inputs": {"docker": "chain", "sut_json": str(tmp_path / "out" / "sut.json")},
               "env": {}, "adr": {}}
    os.chmod(tmp_path, 0o755)                           # uid 1000 reaches the mounted folders
    def planned():
        plan = chain.plan(request, env, first.tag, first.image_id, "mlcommons-loadgen==1 --hash=sha256:" + "a" * 64,
                          str(tmp_path / "containers"), uid=1000, gid=1000, host_view={"operating_system": "Debian 12"})
        assert {m.host for m in plan.spec.mounts if m.read_only} == {str(model)}
        return replace(plan, spec=replace(plan.spec, argv=("sh", "-c", CHAIN_PROBE, "sh", str(results), str(model))))
    probe = planned()
    chain.prepare_folders(probe)
    for folder in (tmp_path / "out", results, Path(probe.home), *Path(probe.home).iterdir()):
        os.chown(folder, 1000, 1000)
    os.chmod(tmp_path / "containers", 0o755)
    res = run.run(e, probe.spec, timeout=600)
    assert res.returncode == 0 and "chain-probe-ok" in res.stdout, res.stdout[-2000:] + res.stderr[-2000:]
    made = results / "result.txt"
    assert made.read_text() == "written\n" and made.stat().st_uid == 1000       # at the host's path, the caller's
    assert sorted(p.name for p in model.iterdir()) == ["config.json"]
    assert (Path(probe.home) / "cache").is_dir() and any((Path(probe.home) / "cache").iterdir())  # its own cache
    # the same image again (a record replayed twice): its CM home, which now holds the host's view of
    # this machine, is mounted once, read-write, and the container starts
    again = planned()
    chain.prepare_folders(again)
    res = run.run(e, again.spec, timeout=600)
    assert res.returncode == 0 and "chain-probe-ok" in res.stdout, res.stdout[-2000:] + res.stderr[-2000:]
    assert e.run("ps", "-a", "--format", "{{.Names}}").stdout.strip() == ""
