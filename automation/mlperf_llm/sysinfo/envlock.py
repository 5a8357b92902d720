"""An environment's lock: every distribution a venv of ours holds, with its exact version and, for
what this project installed into it, the sha256 of the archive pip installed it from: what a replay
(or an image built for the run) needs to install the same environment instead of resolving a new one.

The lock is written at install time (`record_install`, called by pyenv.pip_install after pip
succeeded) from pip's own `--report`, merged into `LOCK_NAME` in the venv's folder, so it lives in
the venv's cache entry. `read` gives the whole lock: every distribution the interpreter sees
(importlib.metadata), with the hash and source where an install of ours recorded one; a
distribution nothing of ours installed (pip and setuptools of `python -m venv`, or one installed by
hand) has its version and no hash, and says so. `requirements` writes it as pip's `--require-hashes`
input.

Only a venv this project made (pyenv.DONE_MARK in its folder) gets a lock file: the system's or
the user's interpreter is never written into.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import asdict, dataclass

from cmcontract.publish import staged_file

LOCK_NAME = "cm4mlperf-lock.json"
LOCK_FORMAT = 1
NO_HASH = "not installed by this project (the venv's own, or by hand): version only"


class LockError(RuntimeError):
    pass


@dataclass(frozen=True)
class Locked:
    name: str                   # the distribution's name as its metadata says it
    version: str
    sha256: str = ""            # of the archive pip installed it from ("" where none is known)
    url: str = ""               # where that archive came from (an index, a file on disk)
    note: str = ""              # why there is no hash

    def requirement(self) -> str:
        line = f"{self.name}=={self.version}"
        return f"{line} --hash=sha256:{self.sha256}" if self.sha256 else line


# the build tools, pinned: the pip that installs an image's venvs, and what builds a wheel of this
# project (setup.py's setuptools commands) and of a package published only as a source archive
# (rouge-score), in an image (containers/make.py) and on the host (pyenv.pip_install_locked,
# pip_install_project); each by its wheel's sha256 on PyPI, so a recipe is known with no index asked
BUILD_TOOLS = (Locked("pip", "25.0.1", "c46efd13b6aa8279f33f2864459c8ce587ea6a1a59ee20de055868d8f7688f7f"),
               Locked("setuptools", "75.8.0", "e3982f444617239225d675215d51f6ba05f845d4eec313da4418fdbb56fb27e3"),
               Locked("wheel", "0.45.1", "708e7481cc80179af0e556bbf0cc00b8444c7321e2700b8d8580231d13017248"))


def venv_dir_of(python: str) -> str | None:
    """The folder of the venv `python` belongs to, when this project made it; else None."""
    from .pyenv import DONE_MARK
    folder = os.path.dirname(os.path.dirname(os.path.abspath(python)))
    return folder if os.path.isfile(os.path.join(folder, DONE_MARK)) else None


def from_report(report_path: str) -> list[Locked]:
    """The distributions a `pip install --report` installed, with the archives' sha256 and sources."""
    try:
        with open(report_path, encoding="utf-8") as f:
            items = json.load(f).get("install", [])
    except (OSError, ValueError) as e:
        raise LockError(f"pip's install report {report_path} is unreadable ({e}); install again") from None
    out = []
    for item in items:
        meta, info = item.get("metadata") or {}, item.get("download_info") or {}
        hashes = (info.get("archive_info") or {}).get("hashes") or {}
        sha = hashes.get("sha256", "")
        if not sha:                         # pip's older single "hash": "sha256=..."
            algo, _, value = str((info.get("archive_info") or {}).get("hash", "")).partition("=")
            sha = value if algo == "sha256" else ""
        note = "" if sha else ("a folder, not an archive" if "dir_info" in info else "pip reported no sha256")
        out.append(Locked(str(meta.get("name", "")), str(meta.get("version", "")), sha, str(info.get("url", "")),
                          note))
    return [d for d in out if d.name and d.version]


def dist_key(name: str) -> str:
    """A distribution name as pip compares them (PEP 503: runs of '-', '_', '.' are one '-')."""
    return re.sub(r"[-_.]+", "-", name).lower()


def load(path: str) -> dict[str, Locked]:
    """A lock file's entries by normalised name ({} when there is no file)."""
    if not os.path.isfile(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
        return {dist_key(d["name"]): Locked(**d) for d in raw.get("distributions", [])}
    except (OSError, ValueError, TypeError, KeyError) as e:
        raise LockError(f"{path} is not a lock file of this project ({e}); remove it and install again, or "
                        "clean the cache entry of that venv (cm rm cache)") from None


def save(path: str, entries: dict[str, Locked]) -> None:
    """Written whole or not at all (staged beside it, then renamed)."""
    body = {"format": LOCK_FORMAT, "distributions": [asdict(entries[k]) for k in sorted(entries)]}
    with staged_file(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(body, f, indent=1, sort_keys=True)
            f.write("\n")


def site_lock(folder: str) -> dict[str, Locked]:
    """The lock of a site folder pyenv.pip_install_into filled (LoadGen's wheel of a round), by
    normalised name ({} for a folder without one: an older entry, a build from source)."""
    return load(os.path.join(folder, LOCK_NAME))


# get-mlperf-inference-loadgen's pin of the recorded wheel ("mlcommons-loadgen==V --hash=sha256:H",
# one line of a lock): a replay's, so that the harness drives the same LoadGen build
LOADGEN_LOCK_ENV = "CM_LOADGEN_LOCK"
LOADGEN_SITE_ENV = "CM_LOADGEN_SITE"        # a venv that holds LOADGEN_LOCK_ENV's wheel already (--docker=chain's image)
LOADGEN_DIST = "mlcommons-loadgen"
# a run environment's lock (a record's: name==version[ --hash=sha256:...] lines): install-run-environment's
# venv, or --docker=chain's image's `run` venv (build-mlperf-image)
RUN_LOCK_ENV = "CM_RUN_ENV_LOCK"
# the model steps' environment (the `ml` venv a model was fetched or converted in), written beside the
# model when it is made (write_requirements): the model steps' output MODEL_LOCK_ENV names it, the
# record carries it (versions.model_environment), and a replay makes the `ml` venv from it
# (install-python-venv's VENV_LOCK_ENV, given to that dependency alone: ML_VENV_DEP)
MODEL_LOCK_ENV = "CM_ML_MODEL_ENV_LOCK"
MODEL_LOCK_FILE = "ml-environment-lock.txt"
VENV_LOCK_ENV = "CM_VENV_LOCK"              # install-python-venv's --lock
ML_VENV_DEP = "ml-venv"                     # the model steps' name for their install,python-venv,_name.ml


def loadgen_pin(line: str, where: str = LOADGEN_LOCK_ENV) -> Locked:
    """The one pin of LOADGEN_LOCK_ENV, read as any lock line (exact version, the archive's hash);
    LockError for anything else."""
    entries = parse(line, where)
    if len(entries) != 1 or dist_key(entries[0].name) != LOADGEN_DIST:
        raise LockError(f"{where}: give one '{LOADGEN_DIST}==VERSION --hash=sha256:<64 hex>' line")
    return entries[0]


def record_install(python: str, report_path: str, fetched: tuple[Locked, ...] = ()) -> str | None:
    """Merge what pip installed (its report) into the lock of `python`'s venv; the lock's path, or
    None for an interpreter whose venv this project did not make (nothing is written). fetched: the
    archives the packages were fetched as, where pip installed wheels built here from some of them:
    the lock names what was fetched (a source archive's sha256 is the index's; a wheel built from it
    is this machine's, and no index serves it)."""
    folder = venv_dir_of(python)
    if folder is None:
        return None
    path = os.path.join(folder, LOCK_NAME)
    entries = load(path)
    archives = {dist_key(d.name): d for d in fetched}
    for d in from_report(report_path):
        got = archives.get(dist_key(d.name))
        # a newer install of the same name replaces the older one
        entries[dist_key(d.name)] = Locked(d.name, d.version, got.sha256, got.url) if got and got.sha256 and \
            got.version == d.version else d
    save(path, entries)
    return path


_LIST = ("import importlib.metadata as m, json\n"
         "print(json.dumps(sorted({(d.metadata['Name'], d.version) for d in m.distributions() "
         "if d.metadata['Name']})))\n")


def read(python: str, timeout: float = 120) -> list[Locked]:
    """The whole lock of `python`: every distribution it sees, each with the hash an install of ours
    recorded, else its version and why there is no hash."""
    res = subprocess.run([python, "-c", _LIST], capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise LockError(f"{python} could not list its distributions:\n{res.stderr.strip()[-800:]}")
    folder = venv_dir_of(python)
    recorded = load(os.path.join(folder, LOCK_NAME)) if folder else {}
    out = []
    for name, version in json.loads(res.stdout):
        got = recorded.get(dist_key(name))
        out.append(got if got and got.version == version else Locked(name, version, note=NO_HASH))
    return sorted(out, key=lambda d: dist_key(d.name))


def write_requirements(python: str, path: str) -> int:
    """`python`'s whole lock (`read`) written to `path` as `requirements` (what has no hash in comments,
    which `parse` skips), whole or not at all; the number of distributions pinned by hash. LockError
    where the interpreter cannot list itself."""
    entries = read(python)
    with staged_file(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(requirements(entries))
    return sum(1 for d in entries if d.sha256)


def requirements(entries: list[Locked], bare_pins: bool = False) -> str:
    """The lock as pip's requirements (`name==version --hash=sha256:...`); distributions without a
    hash are listed apart, in comments, since `--require-hashes` refuses a line without one, or
    (bare_pins: a run environment, whose hand-installed packages have no hash) as `name==version`
    lines, which `parse(..., bare_pins=True)` reads back."""
    hashed = [d.requirement() for d in entries if d.sha256]
    bare = [d.requirement() if bare_pins else f"# {d.requirement()}  ({d.note or NO_HASH})"
            for d in entries if not d.sha256]
    return "\n".join(hashed + bare) + "\n"


_LINE = re.compile(r"^([A-Za-z0-9](?:[A-Za-z0-9._-]{0,198}[A-Za-z0-9])?)==([A-Za-z0-9][A-Za-z0-9.+!_-]{0,63})"
                   r"(?: --hash=sha256:([0-9a-f]{64}))?$")


def parse(text: str, where: str = "the lock", bare_pins: bool = False) -> list[Locked]:
    """A lock as `requirements` writes it, read back: `name==version --hash=sha256:...` lines
    (comments and blank lines skipped); with bare_pins, `name==version` lines too (an exact version
    whose archive no hash pins). A lock from elsewhere (a record) is untrusted: any other line (an
    option, a URL, a range) is refused, naming it, never handed to pip."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m or (m.group(3) is None and not bare_pins):
            form = "'name==version', with ' --hash=sha256:<64 hex>' where known" if bare_pins else \
                "'name==version --hash=sha256:<64 hex>'"
            raise LockError(f"{where}, line {n}: {line[:80]!r} is not {form}; a lock holds only exact pins"
                            + ("" if bare_pins else " with their archive's hash"))
        out.append(Locked(m.group(1), m.group(2), m.group(3) or "", note="" if m.group(3) else NO_HASH))
    return out


MAX_LOCK_BYTES = 1 << 20         # a lock file from elsewhere is read up to this, and refused when larger


def parse_file(path: str, bare_pins: bool = False) -> list[Locked]:
    """The lock file at `path` (`requirements`' form) read back by `parse`: LockError naming the file
    when it cannot be read or is larger than MAX_LOCK_BYTES (never cut short and parsed in part)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_LOCK_BYTES + 1)
    except OSError as e:
        raise LockError(f"{path}: cannot be read ({e.strerror})") from None
    if len(raw) > MAX_LOCK_BYTES:
        raise LockError(f"{path}: larger than {MAX_LOCK_BYTES >> 20} MiB; not a lock of ours (a name==version "
                        "--hash line per distribution)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise LockError(f"{path}: not UTF-8 text; not a lock of ours") from None
    return parse(text, path, bare_pins)


def from_record(environment: dict, bare_pins: bool = False, leave_out: tuple[str, ...] = (),
                where: str = "the record's server environment") -> list[Locked]:
    """A record's `server_environment` or `run_environment` ({name: {"version", "sha256"}}) as lock
    entries: those with a hash (the venv's own pip and setuptools have none and are left to the new
    venv), or (bare_pins) every one, those without a hash by exact version only. `leave_out`: names
    never taken from a record (this project: installed from its files here). LockError naming the
    entry that is not an exact pin."""
    out = []
    skip = {dist_key(n) for n in leave_out}
    for name, d in sorted(environment.items()):
        if not isinstance(d, dict) or dist_key(str(name)) in skip or not (d.get("sha256") or bare_pins):
            continue
        out.append(Locked(str(name), str(d.get("version", "")), str(d.get("sha256") or "")))
    return parse(requirements(out, bare_pins), where, bare_pins)
