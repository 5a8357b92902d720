"""The whole benchmark chain in the run's image (`--docker=chain`).

The host prepares what needs the network or this machine's own tools: the inference source, the
model, the data set, vLLM's venv and the round's LoadGen wheel (and, for TEST06 on a round whose
wheel cannot run it, LoadGen built from the source: the image has no compiler); build-mlperf-image puts this
project, the interpreter `cm` runs in, that LoadGen wheel (`loadgen` venv) and vLLM's venv into one
image. Then the run's own request is run again by the image's `cm`, in one container with **no
network**: the vLLM server, the harness, LoadGen, the scoring, the compliance tests, the submission
and the checker all run from the image. What the host prepared is handed in (`--env.` of those
steps' outputs, their steps skipped there, `IN_IMAGE_ENV`), each host path it names mounted
read-only at the same place; the results folder and the submission's parent are mounted read-write,
at the same place, and written as the caller's uid. The container's CM home and cache are a host
folder of their own per image (`home_for`), mounted at its own path (what the chain prints is the
host's path), so a second run in the same image reuses its entries.
"""
from __future__ import annotations

import json
import os
import shlex
import socket
import sys
from dataclasses import dataclass
from typing import Optional

from cmcontract.places import run_cwd
from cmcontract.secret import is_secret
from cmcontract.yesno import YesNoError, is_yes, parse_yes_no

from ..sysinfo.envlock import LOADGEN_DIST, LOADGEN_LOCK_ENV, LOADGEN_SITE_ENV, RUN_LOCK_ENV
from ..sysinfo.loadgen_src import HOST_BUILD_ENV, HOST_PROBLEM_ENV
from ..files import write_json_atomic
from ..sysinfo.pyenv import HARNESS_PYTHON_ENV
from ..sysinfo.sut import HOST_VIEW_ENV
from ..vllm.install import LOCK_ENV as VLLM_LOCK_ENV
from . import run as crun
from .engine import Engine
from .image import FACTS_ENV, ID_ENV, LOAD_ENV, REBUILD_ENV, TAG_ENV
from .recipe import PREFIX
from .served import PASSED, VLLM_PYTHON, gpu_kind

DOCKER_ENV = "CM_MLPERF_DOCKER"             # --docker: chain runs the whole chain in the image (yes: only vLLM)
IN_IMAGE_ENV = "CM_MLPERF_IN_IMAGE"         # yes: this chain runs in the image; the host prepared its inputs
CHAIN_IMAGE_ENV = "CM_MLPERF_CHAIN_IMAGE"   # the image's tag, for the record made in it (and on the host after)
REQUEST_ENV = "CM_MLPERF_IMAGE_REQUEST"     # the host's request and command (JSON): what the record names as the run's
LOADGEN_VENV = f"{PREFIX}/loadgen"          # the round's LoadGen wheel, installed by its hash
# the outputs of the steps the host ran for the chain (the inference source, the model, the data
# set); the chain in the image is handed them and skips those steps
PREPARED = ("CM_MLPERF_INFERENCE_SOURCE", "CM_MLPERF_INFERENCE_CHECKER", "CM_MLPERF_INFERENCE_MLPERF_CONF",
            "CM_MLPERF_INFERENCE_LLAMA2_PATH", "CM_ML_MODEL_", "CM_DATASET_")
# inputs the chain in the image is not given: how the host runs it, and the host's own vLLM
HOST_ONLY = frozenset(("docker", "container_engine", "vllm_python", "quiet", "out", "v"))
# --env. values the chain in the image is not given: how the host runs it, the host's interpreter for
# the harness and its vLLM and run environment locks (a replay's: the image holds them)
HOST_ONLY_ENV = frozenset((DOCKER_ENV, IN_IMAGE_ENV, HARNESS_PYTHON_ENV, VLLM_LOCK_ENV, RUN_LOCK_ENV, REBUILD_ENV,
                           LOAD_ENV))
# host folders never mounted, whatever an input names: these, and anything in the system's trees
SYSTEM = ("/", "/home", "/opt", "/root", "/tmp", "/var")
SYSTEM_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/proc", "/run", "/sbin", "/sys", "/usr", PREFIX)


class ChainError(RuntimeError):
    pass


NO_LOADGEN_HASH = ("the round's LoadGen wheel has no recorded sha256 (a get-mlperf-inference-loadgen entry made "
                   "before it kept one): rerun with --renew_tags=loadgen, then with --docker=chain again")


def loadgen_pin(env: dict) -> str:
    """The pin of the LoadGen wheel the image holds: a replay's (LOADGEN_LOCK_ENV, which the get step
    installed exactly), else the get step's version and sha256; ChainError when it kept no sha256."""
    if env.get(LOADGEN_LOCK_ENV):
        return env[LOADGEN_LOCK_ENV]
    version, sha = env.get("CM_LOADGEN_VERSION", ""), env.get("CM_LOADGEN_SHA256", "")
    if not (version and sha):
        raise ChainError(NO_LOADGEN_HASH)
    return f"{LOADGEN_DIST}=={version} --hash=sha256:{sha}"


CHAIN = "chain"


def docker_mode(value, flag: str = "--docker") -> str:
    """--docker's value as one of yes (vLLM served from an image), no, or chain (the whole chain in
    it); "" where not given. ValueError naming the flag and the choices for anything else."""
    text = str(value if value is not None else "").strip()
    if not text:
        return ""
    if text.lower() == CHAIN:
        return CHAIN
    try:
        return "yes" if parse_yes_no(flag, text) else "no"
    except YesNoError as e:
        raise ValueError(f"{e}; or {flag}={CHAIN}: the whole chain in the run's image") from None


def runs_in_image(env: dict) -> bool:
    """True on the host of a --docker=chain run: its steps from the server on ran in the image."""
    return str(env.get(DOCKER_ENV, "")).strip().lower() == CHAIN


def in_image(env: dict) -> bool:
    """True in the image of a --docker=chain run: the host prepared this chain's inputs."""
    return is_yes(env.get(IN_IMAGE_ENV))


def as_requested(i: dict) -> dict:
    """A hook's input with the request the user made: in the image, the host's (REQUEST_ENV), not
    the one the host made for the image's `cm`; elsewhere `i` as it is."""
    given = i["env"].get(REQUEST_ENV, "")
    if not in_image(i["env"]) or not given:
        return i
    try:
        host = json.loads(given)
        request, argv = host["request"], host["argv"]
    except (ValueError, TypeError, KeyError):
        return i
    if not isinstance(request, dict) or not isinstance(argv, list):
        return i
    return {**i, "request": request, "argv": [str(a) for a in argv]}


@dataclass(frozen=True)
class ChainRun:
    spec: crun.RunSpec
    argv: tuple                     # the image's `cm` command line
    home: str                       # the container's CM home, cache and working folder: a host folder, at its own path
    made: tuple = ()                # the folders it writes to, made on the host first (the results', the submission's parent)
    host_view: Optional[dict] = None    # what the container cannot see of this machine (sysinfo.sut.HOST_VIEW)

    def describe(self) -> str:
        ro = [m.host for m in self.spec.mounts if m.read_only]
        rw = [m.host for m in self.spec.mounts if not m.read_only and m.host != self.home]
        return (f"the chain runs in image {self.spec.image}, no network, as uid {self.spec.user or '0 (root)'}:\n"
                f"  {shlex.join(self.argv)}\n"
                f"  read-only: {', '.join(ro) or '(nothing)'}\n  read-write: {', '.join(rw)}; its CM home and "
                f"cache: {self.home}")


def prepared_env(env: dict) -> dict:
    """What the host's steps made that the chain in the image is handed."""
    return {k: v for k, v in sorted(env.items()) if k.startswith(PREPARED) and isinstance(v, str)}


def inner_request(request: dict, env: dict, loadgen_pin: str, results_dir: str, submission_dir: str,
                  argv: tuple = (), host_view_file: str = "") -> dict:
    """The run's request (the engine's record of it: tags, inputs, env, adr) as the image's `cm`
    runs it: cmind's input form, the image's vLLM and LoadGen, the host's prepared outputs."""
    cwd = run_cwd(env)                  # where `cm` was started: relative paths are from there
    paths = request.get("paths") or {}  # the inputs the engine made absolute (path_inputs)
    inputs = {k: paths.get(k) or host_absolute(v, cwd) for k, v in (request.get("inputs") or {}).items()
              if k not in HOST_ONLY}
    given_env = {k: host_absolute(v, cwd) for k, v in (request.get("env") or {}).items() if k not in HOST_ONLY_ENV}
    inputs.update(vllm_python=VLLM_PYTHON, results_dir=results_dir, submission_dir=submission_dir)
    added = {**prepared_env(env), IN_IMAGE_ENV: "yes", LOADGEN_LOCK_ENV: loadgen_pin, LOADGEN_SITE_ENV: LOADGEN_VENV,
             REQUEST_ENV: json.dumps({"request": request, "argv": list(argv)}, sort_keys=True, separators=(",", ":"))}
    for key in (ID_ENV, FACTS_ENV, HOST_BUILD_ENV, HOST_PROBLEM_ENV):
        if env.get(key):
            added[key] = env[key]
    added[CHAIN_IMAGE_ENV] = env.get(TAG_ENV, "")
    if host_view_file:
        added[HOST_VIEW_ENV] = host_view_file
    return {"tags": ",".join(request.get("tags") or []), **inputs, "env": {**given_env, **added},
            "adr": request.get("adr") or {}, "quiet": True}


def host_absolute(value, cwd: str):
    """A value naming a file or folder relative to the folder `cm` was started in, `cwd`
    (`--env.X=./file`), made absolute: the image's `cm` runs in a folder of its own, where the
    relative name finds nothing. Only a value written as a path (a '/' in it, or a leading '.') that
    exists there: for what no step declares a file or folder (env values, inputs that may be a name);
    the declared ones (path_inputs) come absolute from the engine, bare names too."""
    if (isinstance(value, str) and value and not os.path.isabs(value) and os.pathsep not in value
            and ("/" in value or value.startswith(".")) and os.path.exists(os.path.join(cwd, value))):
        return os.path.normpath(os.path.join(cwd, value))
    return value


def host_paths(values, exclude: tuple = ()) -> list[str]:
    """The host folders to mount for the existing absolute paths among `values`: a folder as it is, a
    file with its folder (a step reads the files beside one it was handed: a data set's reference
    answers); each once, none under `exclude` or in a system folder."""
    out: list[str] = []
    for v in values:
        if not isinstance(v, str) or not os.path.isabs(v) or os.pathsep in v or not os.path.exists(v):
            continue
        p = os.path.normpath(v if os.path.isdir(v) else os.path.dirname(v))
        if p in SYSTEM or _under(p, SYSTEM_TREES + tuple(exclude)) or p in out:
            continue
        out.append(p)
    return [p for p in out if not _under(p, tuple(q for q in out if q != p))]   # a folder's files come with it


def _under(path: str, trees: tuple) -> bool:
    return any(path == t or path.startswith(t.rstrip("/") + "/") for t in trees)


def home_for(cache_containers: str, image_id: str) -> str:
    return os.path.join(cache_containers, f"chain-home-{image_id.split(':')[-1][:16]}")


def plan(request: dict, env: dict, image: str, image_id: str, loadgen_pin: str, cache_containers: str,
         uid: Optional[int] = None, gid: Optional[int] = None, environ: Optional[dict] = None,
         argv: Optional[list] = None, hostname: str = "", host_view: Optional[dict] = None) -> ChainRun:
    """How the run's request (and `argv`, the command typed on the host) runs in `image`: the
    container's command, mounts and user. host_view: this machine's fields the container cannot see
    (sysinfo.sut.host_view), handed to the image's systems description in a file of its CM home."""
    if not loadgen_pin:
        raise ChainError(NO_LOADGEN_HASH)
    secrets = sorted([f"--{k}" for k in request.get("inputs") or {} if is_secret(k)]
                     + [f"--env.{k}" for k in request.get("env") or {} if is_secret(k)])
    if secrets:
        raise ChainError(f"{', '.join(secrets)} with --docker=chain: the chain in the image gets the run's inputs on "
                         "the engine's command line, which every user of this machine can read (ps) and the "
                         "container keeps; fix: export it instead (--api_key as VLLM_API_KEY, a hub token as HF_TOKEN: "
                         "the image gets the VLLM_* and HF_* variables in the engine's environment, never on its "
                         "command line), or --docker=yes, or no --docker")
    results = os.path.abspath(env.get("CM_MLPERF_RESULTS_DIR") or "mlperf_results")
    submission = os.path.abspath(env.get("CM_MLPERF_SUBMISSION_DIR") or "mlperf_submission")
    home = home_for(cache_containers, image_id)
    request_in = inner_request(request, env, loadgen_pin, results, submission, tuple(sys.argv if argv is None else argv),
                               host_view_file(home) if host_view else "")
    uid = os.getuid() if uid is None else uid
    gid = os.getgid() if gid is None else gid
    values = list(prepared_env(env).values()) + [v for k, v in request_in.items() if k not in ("env", "adr", "tags")]
    values += list(request_in["env"].values())
    # the submission is made beside its folder and renamed into place, its tarball written beside it:
    # its parent is mounted read-write
    parent = os.path.dirname(submission)
    if parent == "/" or _under(parent, SYSTEM_TREES):
        raise ChainError(f"--submission_dir={submission}: the chain in the image writes the submission beside it, "
                         f"in {parent}, a system folder it does not mount: give a folder of your own")
    writable = (results, parent)
    # the chain's CM home is mounted read-write below: never read-only as well, though its files (the
    # host's view of this machine, left by an earlier run of this image) are among the values
    ro = host_paths(values + [env.get(FACTS_ENV, "")], exclude=(results, submission, home))
    rw = [p for p in writable if not _under(p, tuple(w for w in writable if w != p))]
    # a file handed in from a folder the chain writes to (--sut_json=./sut.json beside the default
    # results and submission folders): that folder is mounted once, read-write
    mounts = tuple(crun.Mount(p, p) for p in ro if p not in rw) + tuple(crun.Mount(p, p, read_only=False) for p in rw)
    # parents first: a read-only folder inside a writable one stays read-only, and the other way round
    mounts = tuple(sorted(mounts, key=lambda m: m.target.rstrip("/").count("/"))) + (
        crun.Mount(home, home, read_only=False),)   # at its own path: every path the chain prints is the host's
    passed = {k: v for k, v in (os.environ if environ is None else environ).items() if k.startswith(PASSED)}
    cmenv = {**passed, "HOME": f"{home}/home", "CM_REPOS": f"{home}/CM", "CM4MLPERF_CACHE_DIR": f"{home}/cache",
             "HF_HUB_OFFLINE": "1"}
    gpus = gpu_kind(env.get("CM_GPU_VENDOR", ""), env.get("CM_GPU_COUNT", ""))
    from ..reproduce.runenv import request_argv
    argv = ("cm", *request_argv(request_in))
    spec = crun.RunSpec(image, argv, mounts=mounts, gpus=gpus, user="" if uid == 0 else f"{uid}:{gid}", env=cmenv,
                        workdir=f"{home}/work",
                        # the host's name: the system the chain describes (detect-os) is this machine
                        extra=("--hostname", hostname or socket.gethostname()) + (("--ipc=host",) if gpus else ()))
    return ChainRun(spec, argv, home, made=(results, parent), host_view=host_view)


def host_view_file(home: str) -> str:
    return os.path.join(home, "host-system.json")


def prepare_folders(chain: ChainRun) -> None:
    """The folders the container writes to, made on the host (as the caller's) before it starts, and
    the host's view of this machine beside them."""
    for folder in chain.made:
        os.makedirs(folder, exist_ok=True)
    for sub in ("home", "CM", "cache", "work"):
        os.makedirs(os.path.join(chain.home, sub), exist_ok=True)
    if chain.host_view:
        write_json_atomic(host_view_file(chain.home), chain.host_view)


def run(engine: Engine, chain: ChainRun) -> int:
    """The chain's exit status; its output goes to this process's. The container is removed when it
    ends, and when this process is stopped (Ctrl-C, SIGTERM, SIGHUP): nothing of it is left running."""
    prepare_folders(chain)
    return crun.run(engine, chain.spec, capture=False).returncode
