"""Replaying a recorded run on this machine: what can be had here, the chain's request, the run,
and the comparison (docs/reproduce.md).

`reproduce(options, run_script, say)` is the whole replay; `run_script` runs a chain in the
engine (a cmind-style input dict -> result dict), so tests can give their own.
"""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Callable, Optional

from cmcontract.publish import write_text
from cmcontract.secret import is_secret
from cmcontract.yesno import is_yes

from . import compare as cmp
from . import record as recmod
from . import runenv, trust
from ..sysinfo import envlock
from ..harness.hostlimit import LOADS_ENV, format_loads
from ..harness.testsizes import NAME as SIZES_NAME, format_sizes
from .capture import PATH_INPUTS_REPLACED as PATH_INPUTS
from .capture import KNOWN_SECRETS, PROJECT as PROJECT_NAME
from .record import RECORD_NAME, Record, RecordError
from ..submission.spec import IMAGE_FACTS_NAME
from ..untrusted import Limits
from ..vllm.inputs import API_KEY_ENV, VLLM_KEY_ENV
from ..vllm.install import LOCK_ENV
from .source import Measured, measured_tests, open_submission, the_record

REPORT_NAME = "reproduction.json"
PAGE_NAME = "reproduction.html"
DEVICE_FLAG = "allow_device_change"


class ReplayError(Exception):
    """A replay that cannot start or did not finish: what, why, what to do."""


@dataclass
class Host:
    machine: str = ""
    cpu: str = ""
    gpu_count: int = 0
    gpu_names: tuple = ()         # nvidia-smi's name of each GPU ("NVIDIA H100 80GB HBM3"), where it gave them

    def facts(self):
        """What a published plan asks of this machine (published/plan.HostFacts): its GPUs, which
        probe_host finds by NVIDIA's devices, and their names where nvidia-smi gave them (else only
        their vendor is known: "NVIDIA GPU")."""
        from ..published.plan import HostFacts
        names = tuple(self.gpu_names)
        one = names[0] if names and len(set(names)) == 1 else ("NVIDIA GPU" if self.gpu_count and not names else "")
        return HostFacts(len(names) or self.gpu_count, one, names)


@dataclass
class Options:
    source: str
    results_dir: str
    work_dir: str
    allow_device_change: bool = False
    inference_src: str = ""
    compare_to: str = ""          # a results folder the user has: compared with the submission, nothing replayed
    stand_in: str = ""            # embedded: rehearse the replay of a published folder with the embedded model
    size_anew: bool = False       # size the tests to this host again instead of at the recorded sizes
    trust_record: bool = False    # replay what the record asks even beyond trust.py's closed list
    docker: str = ""              # yes | no: vLLM served from an image of its recorded venv ("": as the record ran)
    image_archive: str = ""       # with --docker: the published archive of the recorded image, loaded and checked by ID
    run_env: str = ""             # lock | here: the chain in a venv of the recorded run environment, or in this
                                  # interpreter ("": the record's where it has one; runenv.py)
    model_env: str = ""           # lock | here: the model steps' `ml` venv made from the recorded model environment,
                                  # or as this machine makes it ("": the record's where it has one)
    limits: Limits = field(default_factory=Limits)     # what an archive or folder from outside may hold


@dataclass
class Plan:
    request: dict                                     # for run_script
    substitutions: list = field(default_factory=list)  # what this machine uses instead, and why
    refusals: list = field(default_factory=list)
    fixed: list = field(default_factory=list)          # what the original run chose itself, given here
    files: dict = field(default_factory=dict)          # path -> text, written before the chain runs (the locks)
    run_lock: str = ""                                 # the run environment's lock: the chain runs in its venv


# the names a record's secrets hold the servers' key under: the input, its env, vLLM's own variable
KEY_NAMES = ("api_key", API_KEY_ENV, VLLM_KEY_ENV)


def key_note(environ) -> str:
    here = (f"require the {VLLM_KEY_ENV} exported here, and the benchmark sends it" if environ.get(VLLM_KEY_ENV) else
            f"require none unless you export {VLLM_KEY_ENV} (the benchmark then sends it too)")
    return f"the original run's servers required an API key, which no record holds; the servers this replay starts {here}"


def secret_note(given: str, name: str, environ) -> str:
    """What the replay says of a secret input or --env the original run was given (a record holds only
    `present` or `absent`, never a value)."""
    if name in KEY_NAMES:
        return f"{given}: {key_note(environ)}"
    return f"{given}: a secret the original run was given is not in the record; pass it yourself if a step needs it"


def environment_notes(secrets: dict, environ, key_said: bool) -> list[str]:
    """The same for the secrets of the original run's environment (capture.KNOWN_SECRETS) not set here;
    the key once (`key_said`: an input or --env of the key said it already)."""
    out = []
    for name in KNOWN_SECRETS:
        if secrets.get(name) != "present" or environ.get(name) or (key_said and name in KEY_NAMES):
            continue
        out.append(f"{name}: {key_note(environ)}" if name in KEY_NAMES else
                   f"{name} was set for the original run and is not set here (needed only if a step downloads "
                   "from a gated source)")
    return out


def gpu_names(smi: str, timeout: float = 10) -> tuple:
    """`nvidia-smi --query-gpu=name --format=csv,noheader`: one name per GPU ("NVIDIA H100 80GB HBM3",
    "Tesla T4"); () where it fails, hangs or lists none."""
    try:
        out = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError, ValueError):
        return ()
    return tuple(ln.strip() for ln in out.stdout.splitlines() if ln.strip()) if out.returncode == 0 else ()


def probe_host() -> Host:
    """The edge: what this machine has (GPUs through nvidia-smi's presence and /dev/nvidia*, their
    names from nvidia-smi where it answers; no nvidia-smi: no GPUs). Never fails."""
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    smi = shutil.which("nvidia-smi")
    try:
        gpus = len([d for d in os.listdir("/dev") if d.startswith("nvidia") and d[6:].isdigit()]) if smi else 0
    except OSError:
        gpus = 0
    names = gpu_names(smi) if gpus else ()
    return Host(platform.machine(), cpu, len(names) or gpus, names)


def published_plan(source: str, work_dir: str, host: Host | None = None) -> str:
    """For a submission without a reproduction record (a published folder of another submitter): its
    tests, how they were made and what this machine lacks, read from its files (mlperf_llm.published);
    '' for a submission with a record (its replay is planned from the record)."""
    from ..published.plan import plan_published, render
    from ..published.reader import read_published
    sub = open_submission(source, work_dir)
    if sub.records:
        return ""
    result = read_published(sub.root)
    host = host or probe_host()
    return render(result, plan_published(result, host.facts()))


def recorded_device(rec: Record) -> str:
    return str((rec.request.get("inputs") or {}).get("device") or rec.system.get("device") or "cpu")


def plan_replay(rec: Record, host: Host, opts: Options, exists: Callable[[str], bool] = os.path.exists,
                image_facts: str = "") -> Plan:
    """What to run here for `rec`; image_facts: the recorded image's facts file (cm4mlperf-image.json
    beside the record of a --docker run), from which a --docker replay rebuilds the server's image
    and checks its ID."""
    req = rec.request
    inputs, subs, refusals = {}, [], []
    given_env, given_adr, carried = cmp.without_replay_settings(dict(req.get("env") or {}), dict(req.get("adr") or {}))
    if carried:
        subs.append("the recorded run was itself a replay: its settings of the environments it repeated ("
                    + ", ".join(carried) + ", paths of the machine it ran on) are not taken; this replay makes its "
                    "own from the record's environments")
    asked = trust.screen(list(req.get("tags") or []), dict(req.get("inputs") or {}), given_env, given_adr,
                         str(req.get("alias") or ""), opts.trust_record)
    if asked.untrusted and opts.trust_record:
        subs.append(f"--{trust.FLAG}=yes: replayed as the record asks, including what a replay does not repeat "
                    "otherwise: " + "; ".join(asked.untrusted))
    elif asked.untrusted:
        refusals.append(asked.refusal())
    for k, v in asked.inputs.items():
        if k in PATH_INPUTS:
            continue
        if is_secret(k):
            subs.append(secret_note(f"--{k}", k, os.environ))
            continue
        if k == "vllm_python":
            subs.append(f"--vllm_python={v}: the original run's own vLLM, a python of its machine, is not run "
                        "here: the chain installs the vLLM build of --device (to replay on a vLLM of your own, "
                        "run the recorded command with your --vllm_python)")
            continue
        if k == "container_engine":
            subs.append(f"--container_engine={v}: the original run's engine, a program of its machine, is not run "
                        "here: this machine's podman (else docker) is (pass --container_engine to the recorded "
                        "command yourself to choose)")
            continue
        if k == "inference_src":
            if opts.inference_src:
                if opts.inference_src != v:
                    subs.append(f"--inference_src={v} (the submitter's) -> {opts.inference_src} (given here)")
                inputs[k] = opts.inference_src
                continue
            if not exists(str(v)):
                subs.append(f"--inference_src={v} is a folder of the submitter's machine, not here: the "
                            "chain clones the round's mlcommons/inference instead (offline: pass "
                            "--inference_src=DIR to this step)")
                continue
        elif isinstance(v, str) and v.startswith("/") and not exists(v):
            subs.append(f"--{k}={v} is a path of the submitter's machine, not here: left out (the "
                        "chain's default applies)")
            continue
        inputs[k] = v
    if opts.inference_src and "inference_src" not in (req.get("inputs") or {}):
        inputs["inference_src"] = opts.inference_src
        subs.append(f"--inference_src={opts.inference_src} (given here; the original run had none)")
    if inputs.get("api_server"):
        subs.append(given_server_note(inputs["api_server"]))
    env = {}
    for k, v in asked.env.items():
        if is_secret(k):
            subs.append(secret_note(f"--env.{k}", k, os.environ))
        else:
            env[k] = v
    device = recorded_device(rec)
    if device != "cpu" and host.gpu_count == 0:
        if opts.allow_device_change:
            subs.append(f"device {device} -> cpu: this machine has no GPU (--{DEVICE_FLAG}=yes); "
                        "throughput is not comparable and accuracy may differ")
            inputs["device"] = "cpu"
        else:
            refusals.append(f"the result was measured on {device} ({rec.system.get('gpu') or 'a GPU'} "
                            f"x{rec.system.get('gpu_count') or '?'}) and this machine has no GPU: a CPU "
                            f"replay would not measure the same thing. Pass --{DEVICE_FLAG}=yes to "
                            "replay it on the CPU anyway")
    if rec.system.get("machine") and host.machine and rec.system["machine"] != host.machine:
        subs.append(f"machine {rec.system['machine']} -> {host.machine}: other kernels; throughput is "
                    "not comparable")
    if rec.system.get("cpu") and host.cpu and rec.system["cpu"] != host.cpu:
        subs.append(f"CPU {rec.system['cpu']} -> {host.cpu}")
    subs += environment_notes(rec.secrets or {}, os.environ, any(k in KEY_NAMES for k in [*asked.inputs, *asked.env]))
    fixed = []
    for name, (target, source) in recmod.chosen_targets(rec).items():
        inputs[name] = target
        fixed.append(f"--{name}={target:g}: the target the original run chose itself ({source}), "
                     "given here so both runs measure at the same load")
    loads = recmod.performance_loads(rec)
    if loads:
        env[LOADS_ENV] = format_loads({s: q for s, (q, _) in loads.items()})
        fixed += [f"--env.{LOADS_ENV}={s}={q:g}: the load the original run's {s} performance test ran at ({why}), "
                  "given here so it runs there too, its accuracy tests at the target" for s, (q, why) in loads.items()]
    sizes, where = recmod.recorded_sizes(rec)
    if sizes and opts.size_anew:
        inputs.pop(SIZES_NAME, None)
        subs.append(cmp.size_anew_note(sizes))
    elif sizes:
        inputs[SIZES_NAME] = format_sizes(sizes)
        fixed.append(f"--{SIZES_NAME}={inputs[SIZES_NAME]}: the size of each test of the original run (from "
                     f"{where}), given here so that each accuracy test scores the same samples; nothing is "
                     "sized again (--size_anew=yes sizes the tests to this host instead)")
    inputs.update(replay_folders(opts))
    recorded_docker = _recorded_docker(inputs, refusals)
    if opts.docker:
        inputs.pop("docker", None)
        if opts.docker != "no":
            inputs["docker"] = opts.docker
        if recorded_docker != opts.docker:
            subs.append(f"--docker={opts.docker} (the original run: {recorded_docker}): {DOCKER_REPLAYS[opts.docker]}")
    fixed += _image_plan(rec, opts, inputs, env, image_facts, recorded_docker, refusals)
    from ..containers.chain import DOCKER_ENV, runs_in_image
    in_image = runs_in_image({DOCKER_ENV: inputs.get("docker", "")})     # --docker=chain: the whole chain in it
    files = {}
    lock = recorded_lock(rec)
    if lock and not inputs.get("api_server") and not inputs.get("vllm_python"):
        # named by its digest where every replay finds it: the same lock is the same install-vllm entry
        path = runenv.lock_path(lock, "vllm")
        files[path] = lock
        env[LOCK_ENV] = path
        from ..containers.image import REBUILD_ENV
        where = ("in the image rebuilt from its facts, nothing installed here" if env.get(REBUILD_ENV) and in_image else
                 "the image's vLLM venv built from it, each archive by its recorded sha256, nothing installed here"
                 if in_image else "each installed from the archive of its recorded sha256, nothing resolved")
        fixed.append(f"the server's environment as recorded: {lock.count(chr(10))} packages, {where} "
                     f"({os.path.basename(path)})")
    elif lock is None:
        subs.append("the record's server environment is not a lock this version can install (see the lines the "
                    "record carries): vLLM is installed afresh, as the recorded command says")
    run_lock = _run_env_plan(rec, opts, files, fixed, subs, refusals, env, in_image)
    _loadgen_plan(rec, env, fixed, subs)
    adr = dict(asked.adr)
    _model_env_plan(rec, opts, files, fixed, subs, refusals, adr)
    request = {"tags": ",".join(asked.tags), "quiet": True, **inputs}
    if req.get("alias") and opts.trust_record:
        request["artifact"] = req["alias"]
    if env:
        request["env"] = env
    if adr:
        request["adr"] = adr
    return Plan(request, subs, refusals, fixed, files, run_lock)


def _run_env_plan(rec: Record, opts: Options, files: dict, fixed: list, subs: list, refusals: list, env: dict,
                  in_image: bool = False) -> str:
    """Where the chain runs: in a venv of the record's run environment (its lock written to files,
    its path returned), or in this interpreter ("", said where the record asked otherwise). in_image
    (--docker=chain): the image's `run` venv is made from that lock (envlock.RUN_LOCK_ENV, for
    build-mlperf-image), and the host's steps run in this interpreter ("")."""
    if opts.run_env == runenv.HERE:
        subs.append(f"--run_env={runenv.HERE}: the chain runs in this interpreter, not in the recorded run "
                    "environment (the comparison names each package that differs)")
        return ""
    entries = runenv.recorded_run_lock(rec)
    if entries:
        text = envlock.requirements(entries, bare_pins=True)
        path = runenv.lock_path(text)
        files[path] = text
        fixed.append(runenv.describe(entries, path, in_image))
        if in_image:
            env[envlock.RUN_LOCK_ENV] = path
            return ""
        return path
    why = ("the record holds no run environment (an older record)" if entries == [] else
           "the record's run environment is not a lock this version can install (a name, version or hash not in "
           "their form)")
    if opts.run_env == runenv.LOCKED:
        refusals.append(f"--run_env={runenv.LOCKED}: {why}; replay with --run_env={runenv.HERE}")
    elif entries is None:           # an older record's chain runs here, as it always did: nothing to say
        subs.append(f"{why}: the chain runs in this interpreter")
    return ""


def _model_env_plan(rec: Record, opts: Options, files: dict, fixed: list, subs: list, refusals: list,
                    adr: dict) -> None:
    """The model steps' `ml` venv as recorded (versions.model_environment): its lock written to files and
    given to that dependency alone (--adr.ml-venv.env: install-python-venv makes the venv from it, each
    archive by its sha256), so the model is fetched or converted by the recorded packages; the
    checkpoint's sha256 is compared either way. --model_env=here: as this machine makes it (a model
    its cache holds is used as it is)."""
    if opts.model_env == runenv.HERE:
        subs.append(f"--model_env={runenv.HERE}: the model steps' venv as this machine makes it (a model in its "
                    "cache is used as it is), not from the recorded model environment; the checkpoint's sha256 is "
                    "compared")
        return
    entries = runenv.recorded_environment(rec, "model")   # the `ml` venv's, each package by its hash
    if entries:
        text = envlock.requirements(entries)
        path = runenv.lock_path(text, "ml")
        files[path] = text
        over = dict(adr.get(envlock.ML_VENV_DEP) or {})
        over["env"] = {**dict(over.get("env") or {}), envlock.VENV_LOCK_ENV: path}
        adr[envlock.ML_VENV_DEP] = over
        fixed.append(f"the model's environment as recorded: {len(entries)} packages, each installed from the archive "
                     f"of its recorded sha256 into the model steps' venv, nothing resolved ({os.path.basename(path)}); "
                     "the model is made again in it")
        return
    why = ("the record holds no model environment (an older record, or a run served by --api_server, whose model "
           "no step made)" if entries == [] else
           "the record's model environment is not a lock this version can install (a name, version or hash not in "
           "their form)")
    if opts.model_env == runenv.LOCKED:
        refusals.append(f"--model_env={runenv.LOCKED}: {why}; replay with --model_env={runenv.HERE}")
    elif entries is None:
        subs.append(f"{why}: the model steps' venv is made as this machine makes it")


def _loadgen_plan(rec: Record, env: dict, fixed: list, subs: list) -> None:
    """LoadGen's wheel as recorded (versions.loadgen and loadgen_sha256): installed by that hash
    (envlock.LOADGEN_LOCK_ENV, get-mlperf-inference-loadgen); a record without the hash (older, or
    LoadGen built from source) installs the round's wheel, as before."""
    versions = rec.versions or {}
    sha, version = str(versions.get("loadgen_sha256") or ""), str(versions.get("loadgen") or "")
    if not sha:
        return
    try:
        pin = envlock.loadgen_pin(f"{envlock.LOADGEN_DIST}=={version} --hash=sha256:{sha}", "the record's LoadGen")
    except envlock.LockError:
        subs.append("the record's LoadGen wheel (its version and sha256) is not a pin this version can install: the "
                    "round's wheel is installed")
        return
    env[envlock.LOADGEN_LOCK_ENV] = pin.requirement()
    fixed.append(f"LoadGen's wheel as recorded: {pin.name} {pin.version}, installed by its sha256 {pin.sha256[:12]}")


# what a replay's --docker does, where it differs from the recorded run's
DOCKER_REPLAYS = {
    "yes": "vLLM served from an image of the recorded vLLM venv, built here (docs/containers.md)",
    "no": "vLLM served from the recorded vLLM venv on this machine",
    "chain": "the whole chain in an image of the recorded environments (the run's, LoadGen's and vLLM's), built "
             "here, with no network (docs/containers.md)",
}


def _recorded_docker(inputs: dict, refusals: list) -> str:
    """The recorded run's --docker (yes, no or chain; no where it had none); a value that is none of
    them is refused, naming it."""
    from ..containers.chain import docker_mode
    try:
        return docker_mode(inputs.get("docker")) or "no"
    except ValueError as e:
        refusals.append(f"the record's request: {e}")
        inputs.pop("docker", None)
        return "no"


def _image_plan(rec: Record, opts: Options, inputs: dict, env: dict, image_facts: str, recorded_docker: str,
                refusals: list) -> list:
    """A --docker replay of a --docker run (or --docker=chain of --docker=chain): the recorded image
    rebuilt from the recorded facts file (its recipe: the base's digest, every archive's hash) and
    checked against the recorded ID, or --image_archive loaded and checked by that ID (the env
    build-mlperf-image reads). A replay in another kind of image than the recorded run's builds it
    from the recorded locks. What is fixed, said."""
    from ..containers.image import LOAD_ENV, REBUILD_ENV
    from ..containers.chain import CHAIN, DOCKER_ENV, runs_in_image
    chain = runs_in_image({DOCKER_ENV: inputs.get("docker", "")})       # --docker=chain: the whole chain in it
    docker = chain or is_yes(str(inputs.get("docker", "") or "no"))
    same_kind = (CHAIN if chain else "yes") == recorded_docker
    image = rec.server.get("image")
    recorded_id = str(image.get("id", "")) if isinstance(image, dict) else ""
    if opts.image_archive and not (docker and image_facts and same_kind):
        refusals.append(f"--image_archive={opts.image_archive}: " + (
            "only a replay with --docker=yes or --docker=chain runs from an image" if not docker else
            f"the recorded run's image (--docker={recorded_docker}) is not the kind this replay runs in "
            f"(--docker={inputs['docker']}): replay with --docker={recorded_docker}, or without --image_archive "
            "(the image is built from the recorded locks)" if image_facts and not same_kind else
            "the submission holds no facts file of the recorded image (cm4mlperf-image.json beside its record) "
            "to check the archive against: replay without --image_archive (the image is built from the "
            "recorded lock)"))
        return []
    if not (docker and image_facts and same_kind):
        return []
    env[REBUILD_ENV] = image_facts
    what = "the image the whole chain ran in" if chain else "the server's image"
    if opts.image_archive:
        env[LOAD_ENV] = os.path.abspath(opts.image_archive)
        return [f"{what}: {os.path.basename(opts.image_archive)} loaded and checked against the recorded "
                f"ID {recorded_id[:19] or '(in ' + os.path.basename(image_facts) + ')'} (the archive's maker is "
                "trusted for its content; without --image_archive the image is rebuilt from its recipe)"]
    return [f"{what} rebuilt from its recorded recipe ({os.path.basename(image_facts)}: the base's "
            f"digest, every archive's hash) and checked against the recorded ID {recorded_id[:19]}".rstrip()]


def recorded_lock(rec: Record) -> str | None:
    """The record's server environment as a lock to install ("" where the record has none; None where
    it has one this version cannot take: a name, version or hash not in their form)."""
    entries = runenv.recorded_environment(rec, "server")
    return None if entries is None else envlock.requirements(entries) if entries else ""


def accelerators(sub, recorded_count=None, host: Host | None = None) -> tuple[int, int] | None:
    """(the submission's accelerators, this machine's), where both are known and not zero: the
    recorded count (a record's system), else the systems JSON of its first test's system
    (accelerators_per_node x number_of_nodes)."""
    count = recorded_count
    if not count and sub.results:
        desc = sub.systems.get(sub.results[0].system) or {}
        try:
            count = int(desc.get("accelerators_per_node") or 0) * int(desc.get("number_of_nodes") or 1)
        except (TypeError, ValueError):
            count = 0
    here = (host or probe_host()).gpu_count
    try:
        count = int(count or 0)
    except (TypeError, ValueError):
        count = 0
    return (count, here) if count and here else None


def as_asked(request: dict, opts: Options, source: str) -> dict:
    """A replay planned from a folder without a record (a stand-in, a README's command, another's
    plan) with --docker as asked: yes or chain added, no dropped (the folder's command's own as it
    was where none is given). --image_archive is refused: no record names an image to check it by."""
    if opts.image_archive:
        raise ReplayError(f"--image_archive={opts.image_archive}: {source} holds no reproduction record naming an "
                          "image to load and check by its ID; leave it out (--docker builds the image here)")
    if not opts.docker:
        return request
    out = {k: v for k, v in request.items() if k != "docker"}
    if opts.docker != "no":
        out["docker"] = opts.docker
    return out


def replay_folders(opts: Options) -> dict:
    """The replay's own results and submission folders, inside --results_dir."""
    return {"results_dir": os.path.join(opts.results_dir, "results"),
            "submission_dir": os.path.join(opts.results_dir, "submission")}


def _run_chain(run_script: Optional[Callable[[dict], dict]], request: dict, opts: Options, heading: str,
               say: Callable[[str], None], what: str = "replay", failed: str = "the replayed chain failed",
               run_lock: str = "") -> None:
    """Say the chain's one command under `heading`, run it through the engine (or, with run_lock, by
    the `cm` of the venv of that run environment, made first), and raise ReplayError when it cannot
    run or fails."""
    if run_script is None:
        raise ReplayError("this engine gives hooks no way to run a chain (i['run_script'] is missing): "
                          f"run the {what} with cm4mlperf-llm's own engine")
    os.makedirs(opts.results_dir, exist_ok=True)
    python = ""
    if run_lock:
        try:
            python = runenv.install(run_script, run_lock)
        except runenv.RunEnvError as e:
            raise ReplayError(str(e)) from None
        request = runenv.in_venv(request, python)
    say(f"{heading}\n  {'cm' if not python else runenv.cm_of(python)} "
        + " ".join(runenv.request_argv(request)))
    if python:
        rc = runenv.run_chain(python, request, say, cwd=opts.results_dir)
        if rc != 0:
            raise ReplayError(f"{failed}: the chain in the recorded run environment ({python}) exited with {rc} "
                              "(its output is above)")
        return
    r = run_script(request)
    if r.get("return", 0) > 0:
        raise ReplayError(f"{failed}: {r.get('error', 'no message')}")


def given_server_note(url: str) -> str:
    return (f"--api_server={url}: the original run was given a running server; the replay sends its queries "
            "to the same address, which must serve the same model now (a replay cannot start a server the "
            "original run did not start)")


def read_results_dir(results_dir: str, system: str = "") -> list[Measured]:
    """The tests of a harness results folder (<model>/<Scenario>/performance/run_1, accuracy/)."""
    return measured_tests(results_dir, system)


def check_results_dir(path: str, source: str = "") -> None:
    """The folder a reproduction writes: new or empty, and not inside the folder it replays (`source`,
    --from: a submission folder is read, never written)."""
    from ..untrusted import inside
    if source and "://" not in source and os.path.isdir(source) and inside(path, os.path.realpath(source)):
        raise ReplayError(f"--results_dir={path} is inside --from={source}: a reproduction writes nothing into "
                          "the folder it replays; choose a folder outside it")
    if os.path.isdir(path) and os.listdir(path):
        raise ReplayError(f"--results_dir={path} is not empty" +
                          (" (it holds an earlier reproduction)" if os.path.exists(os.path.join(path, REPORT_NAME))
                           else "") + ": choose a new folder (nothing is overwritten)")


def _write_report(opts: Options, report: dict, say: Callable[[str], None]) -> str:
    """<results_dir>/reproduction.json and the page beside it (reproduction.html), each written whole
    (never half), and said."""
    from ..files import write_atomic, write_json_atomic
    os.makedirs(opts.results_dir, exist_ok=True)
    path = os.path.join(opts.results_dir, REPORT_NAME)
    write_json_atomic(path, report, indent=1)
    page = os.path.join(opts.results_dir, PAGE_NAME)
    write_atomic(page, cmp.to_html(report))
    say(f"\nreproduction table: {path}\n  page: {page}")
    return path


def compare_only(opts: Options, say: Callable[[str], None] = print) -> cmp.Comparison:
    """--compare_to=DIR: the submission's published figures against the tests of a results folder
    the user already has (this tool's results layout), test by test, into reproduction.json; nothing
    runs. Without a record on both sides the inputs are not compared, and the table says so."""
    check_results_dir(opts.results_dir, opts.source)
    if opts.docker or opts.image_archive:
        flag = f"--docker={opts.docker}" if opts.docker else f"--image_archive={opts.image_archive}"
        raise ReplayError(f"{flag} with --compare_to={opts.compare_to}: a comparison runs nothing, in an image or "
                          "not; leave it out")
    if not os.path.isdir(opts.compare_to):
        raise ReplayError(f"--compare_to={opts.compare_to}: no such folder; give a results folder "
                          "(<model>/<Scenario>/performance/run_1, accuracy/), such as a run's --results_dir")
    sub = open_submission(opts.source, opts.work_dir, opts.limits)
    mine = read_results_dir(opts.compare_to)
    if not mine:
        raise ReplayError(f"--compare_to={opts.compare_to}: no tests in it (<model>/<Scenario>/performance/run_1 "
                          "or accuracy/accuracy.txt)")
    notes = [f"compared with {opts.compare_to}; nothing was replayed"]
    c = cmp.Comparison(notes=notes, inputs_compared=False)
    c.rows = cmp.compare_results(sub.results, mine, accuracy_exact=False, accelerators=accelerators(sub))
    say(f"Comparing {sub.path} with {opts.compare_to}\n\n" + cmp.render(c))
    _write_report(opts, cmp.to_json(c, source=sub.path, compared_to=opts.compare_to), say)
    return c


STAND_INS = ("embedded",)


def stand_in_request(result, opts: Options) -> tuple[dict, list[str]]:
    """The one command that rehearses a published folder's replay on the embedded model: its benchmark,
    round and scenarios, test mode, open division, this machine's CPU; and what differs, in words."""
    tests = [t for t in result.tests if t.benchmark]
    if not tests:
        raise ReplayError(f"--from={opts.source}: no test to rehearse (" +
                          "; ".join(str(f) for f in result.findings[:3]) + ")")
    first = tests[0]
    scenarios = sorted({t.scenario for t in tests if t.benchmark == first.benchmark})
    tags = ["run-mlperf", "inference", "_full", "_embedded"] + ([f"_r{first.round}"] if first.round else [])
    request = {"tags": ",".join(tags), "quiet": True, "model": first.benchmark, "division": "open",
               "device": "cpu", "execution_mode": "test", "scenario": ",".join(scenarios), **replay_folders(opts)}
    if opts.inference_src:
        request["inference_src"] = opts.inference_src
    notes = [f"stand-in: the embedded SmolLM2-135M on this machine's CPU, test mode, instead of "
             f"{first.system_desc.get('accelerator_model_name') or 'the published system'} and its weights: "
             "every figure is listed and none is comparable; this rehearses the replay's chain"]
    others = sorted({t.benchmark for t in tests} - {first.benchmark})
    if others:
        notes.append(f"rehearsed {first.benchmark} only; also published here: {', '.join(others)}")
    return request, notes


def rehearse(opts: Options, run_script: Optional[Callable[[dict], dict]],
             say: Callable[[str], None] = print) -> cmp.Comparison:
    """--stand_in=embedded on a published folder without a record: the chain its tests need, with the
    embedded model, into DIR/results, and reproduction.json listing every published figure beside
    the stand-in's, marked not comparable."""
    from ..published.reader import read_published
    if opts.stand_in not in STAND_INS:
        raise ReplayError(f"--stand_in={opts.stand_in}: not a stand-in; use --stand_in=embedded")
    check_results_dir(opts.results_dir, opts.source)
    sub = open_submission(opts.source, opts.work_dir, opts.limits)
    result = read_published(sub.root)
    request, notes = stand_in_request(result, opts)
    request = as_asked(request, opts, sub.path)
    _run_chain(run_script, request, opts, f"Rehearsing the replay of {sub.path} with the embedded model:", say,
               what="rehearsal", failed="the rehearsal's chain failed")
    mine = read_results_dir(request["results_dir"])
    c = cmp.Comparison(notes=notes + [str(f) for f in result.findings], inputs_compared=False, comparable=False)
    c.rows = cmp.compare_results(sub.results, mine, accuracy_exact=False)
    say("\n" + cmp.render(c))
    _write_report(opts, cmp.to_json(c, source=sub.path, stand_in=opts.stand_in, replay_request=request), say)
    return c


def reproduce(opts: Options, run_script: Optional[Callable[[dict], dict]],
              say: Callable[[str], None] = print, host: Optional[Host] = None) -> cmp.Comparison:
    """Open, plan, replay, compare; writes <results_dir>/reproduction.json. Raises ReplayError,
    SourceError or RecordError with a message for the user."""
    check_results_dir(opts.results_dir, opts.source)
    sub = open_submission(opts.source, opts.work_dir, opts.limits)
    if not sub.records:
        from ..published.reader import read_published
        result = read_published(sub.root)           # read once: ours from its README, or another's plan
        own = _readme_plan(result, sub, opts)
        if own is not None:
            return reproduce_from_readme(opts, run_script, own, sub, say)
        return reproduce_published(opts, run_script, sub, result, say, host)
    rec, notes = the_record(sub)
    p = rec.project
    say(f"Replaying {sub.path}\n  recorded by {p.get('name', '?')} {p.get('version', '?')}"
        + (f" at git commit {p['git_commit'][:12]}" + (" (with local changes)" if p.get('git_dirty') else "")
           if p.get("git_commit") else "") + f", files {str(p.get('files_sha256', ''))[:12]}")
    say(f"  recorded command: {rec.command.get('portable') or ' '.join(rec.command.get('argv') or [])}")
    facts = os.path.join(os.path.dirname(sub.records[0]), IMAGE_FACTS_NAME)
    plan = plan_replay(rec, host or probe_host(), opts, image_facts=facts if os.path.isfile(facts) else "")
    if plan.refusals:
        raise ReplayError("cannot replay here: " + "; ".join(plan.refusals))
    if plan.substitutions:
        say("Recorded inputs this machine cannot have, and what the replay uses instead:")
        for s in plan.substitutions:
            say(f"  - {s}")
    else:
        say("Every recorded input can be had here.")
    if plan.fixed:
        say("Choices the original run made itself, repeated:")
        for line in plan.fixed:
            say(f"  - {line}")
    for path, text in plan.files.items():
        write_text(path, text)
    _run_chain(run_script, plan.request, opts, f"Running the recorded chain into {opts.results_dir}:", say,
               run_lock=plan.run_lock)
    results_dir = plan.request["results_dir"]
    here_path = os.path.join(results_dir, RECORD_NAME)
    here = recmod.read(here_path) if os.path.isfile(here_path) else None
    if here is None:
        notes.append(f"the replay wrote no record ({here_path}): inputs could not be compared")
    system = sub.results[0].system if sub.results else ""
    reproduced = read_results_dir(results_dir, system)
    comparison = cmp.compare(rec, here, sub.results, reproduced, plan.substitutions, notes,
                             accelerators(sub, rec.system.get("gpu_count"), host))
    say("\n" + cmp.render(comparison))
    report = cmp.to_json(comparison, source=sub.path, record=os.path.relpath(sub.records[0], sub.root),
                         results_dir=results_dir, replay_request=plan.request)
    _write_report(opts, report, say)
    return comparison


def _readme_plan(result, sub, opts: Options):
    """The replay plan from the measurement READMEs of a submission of ours without its record; None
    when the READMEs are not ours (the_record then says what is missing)."""
    from .readme import ReadmeReplayError, own_tests, plan_from_readme
    if not own_tests(result):
        if any(t.generator == PROJECT_NAME for t in result.tests):
            the_record(sub)             # ours, without record or command: what is missing, said
        return None
    try:
        return plan_from_readme(result, opts.inference_src, opts.size_anew, opts.trust_record)
    except ReadmeReplayError as e:
        raise ReplayError(f"--from={opts.source} holds no reproduction record, and {e}") from None


def reproduce_from_readme(opts: Options, run_script: Optional[Callable[[dict], dict]], plan, sub,
                          say: Callable[[str], None] = print) -> cmp.Comparison:
    """The replay of a submission of ours whose record is gone: the command its measurement READMEs
    record, run here; the comparison's inputs are the steps' cache keys the READMEs list."""
    from .readme import cache_key_differences
    say(f"Replaying {sub.path}\n  no reproduction record in it: replayed from the command its measurement "
        f"READMEs record ({len(plan.tests)} tests, made by {PROJECT_NAME}):\n  {plan.command.text}")
    substitutions = list(plan.fixed) + ([given_server_note(plan.request["api_server"])]
                                        if plan.request.get("api_server") else [])
    for line in substitutions:
        say(f"  - {line}")
    request = as_asked({**plan.request, **replay_folders(opts)}, opts, sub.path)
    _run_chain(run_script, request, opts, f"Running it into {opts.results_dir}:", say)
    here_path = os.path.join(request["results_dir"], RECORD_NAME)
    here = recmod.read(here_path) if os.path.isfile(here_path) else None
    notes = ["replayed from the measurement README (no reproduction record): inputs are compared by the "
             f"cache keys of the {len(plan.cache_keys)} steps the README lists"]
    if here is None:
        notes.append(f"the replay wrote no record ({here_path}): cache keys could not be compared")
    differences, incomparable = cache_key_differences(plan.cache_keys, here, (os.path.join(opts.results_dir, ""),))
    differences += cmp.size_differences(plan.sizes, recmod.recorded_sizes(here)[0] if here else {})
    if incomparable:
        notes.append(f"not compared: the keys of {', '.join(incomparable)}, which hold each run's own results "
                     "folder (steps that run afresh every time)")
    c = cmp.Comparison(differences=differences, substitutions=substitutions,
                       notes=notes, inputs_compared=bool(plan.cache_keys) and here is not None,
                       inputs_by="cache keys")
    system = sub.results[0].system if sub.results else ""
    c.rows = cmp.compare_results(sub.results, read_results_dir(request["results_dir"], system),
                                 c.accuracy_expected_exact, accelerators(sub))
    say("\n" + cmp.render(c))
    _write_report(opts, cmp.to_json(c, source=sub.path, replayed_from="measurement README",
                                    recorded_command=plan.command.text, results_dir=request["results_dir"],
                                    replay_request=request), say)
    return c


def reproduce_published(opts: Options, run_script: Optional[Callable[[dict], dict]], sub, result,
                        say: Callable[[str], None] = print, host: Optional[Host] = None) -> cmp.Comparison:
    """A published folder of another tool or submitter (no record, no README of ours): the plan read
    from its files (published/plan.py); refused, before anything runs, where this machine lacks what
    it needs (unless --allow_device_change=yes); else the plan's one command, and every published
    figure beside the replay's (inputs not compared: nothing records them on the published side)."""
    from ..published.plan import plan_published, replay_request
    host = host or probe_host()
    plans = [p for p in plan_published(result, host.facts()) if p.test.benchmark]
    if not plans:
        raise RecordError(sub.path, "holds no reproduction record and no test this tool can read (" +
                          "; ".join(str(f) for f in result.findings[:3]) + ")",
                          "Add --dry-run to see what was read from its files")
    missing = sorted({m for p in plans for m in p.missing})
    if missing and not opts.allow_device_change:
        raise ReplayError(f"cannot replay {sub.path} here: " + "; ".join(missing) + ". --dry-run prints the "
                          "whole plan; --stand_in=embedded rehearses the replay with the embedded model")
    request = replay_request(plans)
    if opts.inference_src:
        request["inference_src"] = opts.inference_src
    request = as_asked({**request, **replay_folders(opts)}, opts, sub.path)
    notes = sorted({n for p in plans for n in p.notes}) + [f"missing here, replayed anyway "
                                                           f"(--{DEVICE_FLAG}=yes): {m}" for m in missing]
    _run_chain(run_script, request, opts, f"Replaying the published {sub.path} with the plan read from its files:", say)
    mine = read_results_dir(request["results_dir"])
    c = cmp.Comparison(notes=notes + [str(f) for f in result.findings], inputs_compared=False)
    c.rows = cmp.compare_results(sub.results, mine, accuracy_exact=False, accelerators=accelerators(sub, host=host))
    say("\n" + cmp.render(c))
    _write_report(opts, cmp.to_json(c, source=sub.path, replayed_from="published files", replay_request=request), say)
    return c
