"""An image's recipe: the base (base.py), each venv as a lock (every distribution with its exact
version and archive sha256), the tools that build this project's wheel, and the project's files;
written out as a Containerfile and a build context whose every byte is pinned.

`Recipe` is what a record carries (`to_json`/`from_json`): built again from it, on another machine
with the same mirrors and the same project commit, it gives the same image ID. The Containerfile
installs offline (`--no-index --require-hashes` from the context's wheelhouse), writes no byte
code, and turns every usage report off; the build itself runs with `--network none`.
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass, field

from ..sysinfo.envlock import Locked
from ..sysinfo.pyenv import PROJECT_FILES          # what `pip install .` builds from: what an image installs
from ..files import sha256_file

# 2: each venv's lock in its own layer, vLLM's venv first (LAYER_ORDER); 3: and each venv's byte code
# in its layer (BYTECODE). A recorded format-2 recipe is built as it was (no byte code): the same ID
FORMAT = 3
READS = (2, 3)
PREFIX = "/opt/cm4mlperf"               # the image's venvs: PREFIX/<name>, their locks PREFIX/locks/<name>.txt
RUN_VENV = "run"                        # the venv `cm` runs in: this project and what it needs
# the venvs' layers, first to last: the biggest and least often changed first (any other name between)
LAYER_ORDER = {"vllm": 0, "loadgen": 1, RUN_VENV: 3}
SKIP = {"__pycache__", ".git", ".pytest_cache", "build", "dist"}
# the image's environment: no byte code written and no pip cache kept (they would carry build
# times), nothing asked of an index, no usage report from vLLM, Ray or the hub client; the recipe
# adds SOURCE_DATE_EPOCH, which dates the wheels built inside
ENV = (("LANG", "C.UTF-8"), ("PYTHONDONTWRITEBYTECODE", "1"), ("PIP_NO_INDEX", "1"),
       ("PIP_DISABLE_PIP_VERSION_CHECK", "1"), ("PIP_NO_CACHE_DIR", "1"), ("VLLM_NO_USAGE_STATS", "1"), ("DO_NOT_TRACK", "1"),
       ("RAY_USAGE_STATS_ENABLED", "0"), ("HF_HUB_DISABLE_TELEMETRY", "1"),
       ("PATH", f"{PREFIX}/{RUN_VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"))
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
# each venv's modules compiled when its layer is built (format 3), checked against their source's hash
# and not its time (`unchecked-hash`: the same bytes on every build, so the same layer): without them
# every process in a container compiled what it imported, each time (vLLM's import 9.7 s -> 4.7 s
# on a fast 2-core host). A file that does not compile (a template, another Python's syntax) is left
# to its source, as pip leaves it; PYTHONDONTWRITEBYTECODE keeps the container from writing any
BYTECODE = "-m compileall -q -j 0 --invalidation-mode unchecked-hash"


class RecipeError(RuntimeError):
    pass


@dataclass(frozen=True)
class VenvLock:
    name: str                           # "run", "vllm", ...: the venv's folder under PREFIX
    entries: tuple = ()                 # Locked, each with its sha256

    def __post_init__(self):
        if not _NAME.match(self.name):
            raise RecipeError(f"venv name {self.name!r}: lower-case letters, digits, '-' and '_' only")
        bare = [d.name for d in self.entries if not d.sha256]
        if bare:
            raise RecipeError(f"the {self.name} venv's lock has no archive hash for {', '.join(bare[:8])}: an "
                              "image installs only what a hash pins")

    def requirements(self) -> str:
        return "".join(d.requirement() + "\n" for d in sorted(self.entries, key=lambda d: d.name.lower()))

    def path(self) -> str:
        return f"{PREFIX}/{self.name}"


@dataclass(frozen=True)
class Recipe:
    base: dict                          # base.Base.facts(): suite, mirror, epoch, tar_sha256, packages
    venvs: tuple                        # VenvLock, RUN_VENV first where there is one
    build_tools: VenvLock               # setuptools and wheel, pinned, to build this project's wheel
    project_sha256: str                 # of the project's files (PROJECT_FILES) in the context; "": no
                                        # RUN_VENV, no project (a server's image: only vLLM's venv)
    project: dict = field(default_factory=dict)     # the record's project section (commit, version)
    format: int = FORMAT                # a recorded recipe's own (READS): how its image was built

    @property
    def has_project(self) -> bool:
        """The project is installed into RUN_VENV; an image without that venv (--docker's server
        image) has neither, so a change of the project's files does not change it."""
        return any(v.name == RUN_VENV for v in self.venvs)

    @property
    def epoch(self) -> int:
        return int(self.base["source_date_epoch"])

    def containerfile(self) -> str:
        env = " \\\n    ".join(f"{k}={v}" for k, v in ENV + (("SOURCE_DATE_EPOCH", str(self.epoch)),))
        build = f"{PREFIX}/build/bin/python -m pip"
        offline = "-q --no-index --no-deps"
        # venvs are made without pip (ensurepip would byte-compile it, stamping the build's time);
        # the build venv's pip is run from its own locked wheel, then installs into each venv with
        # --python. Each venv's archives are checked by hash and turned into wheels by the pinned
        # build tools (a wheel is taken as it is, a source archive is built), then installed with
        # no byte code.
        wheel = (f"{build} wheel {offline} --no-build-isolation --require-hashes --find-links /wheels "
                 "-w /tmp/wheels -r {lock}")
        install = f"{build} --python {{venv}}/bin/python install {offline} --no-compile /tmp/wheels/*.whl && rm -rf /tmp/wheels"
        compiled = (f" && ({{venv}}/bin/python {BYTECODE} {{venv}}/lib > /dev/null || true)" if self.format >= 3 else "")
        lines = ["# cm4mlperf-llm image (mlperf_llm/containers/recipe.py); every input is pinned:",
                 f"# base {self.base.get('suite')} from {self.base.get('mirror')}, tar sha256 {self.base['tar_sha256']}",
                 "FROM scratch", "ADD base.tar /", f"ENV {env}", f"COPY locks/build.txt {PREFIX}/locks/build.txt",
                 f"RUN --mount=type=bind,source=wheels/build,target=/wheels python3 -m venv --without-pip {PREFIX}/build && "
                 "PIP_WHEEL=$(echo /wheels/pip-*.whl) && "
                 f"{PREFIX}/build/bin/python $PIP_WHEEL/pip install {offline} --no-compile --require-hashes "
                 f"--find-links /wheels -r {PREFIX}/locks/build.txt"]
        # each venv's lock in the layer before its own, the venvs in LAYER_ORDER: an image's layers
        # up to a venv depend on nothing after it, so a server's image (vLLM's venv only) is the
        # first layers of a run image with the same vLLM, and a change of the run venv or the
        # project leaves vLLM's layer (gigabytes) as it is
        for v in sorted(self.venvs, key=lambda v: LAYER_ORDER.get(v.name, len(LAYER_ORDER))):
            lines.append(f"COPY locks/{v.name}.txt {PREFIX}/locks/{v.name}.txt")
            lines.append(f"RUN --mount=type=bind,source=wheels/{v.name},target=/wheels "
                         f"python3 -m venv --without-pip {v.path()} && "
                         + wheel.format(lock=f"{PREFIX}/locks/{v.name}.txt") + " && " + install.format(venv=v.path())
                         + compiled.format(venv=v.path()))
        if self.has_project:
            # the project's digest in a layer of its own, just before the project's step: a change of
            # the project rebuilds that step (a bind mount's content is not in the build cache's key),
            # and only that step, the venvs' layers are reused
            lines.append(f"COPY project.sha256 {PREFIX}/project.sha256")
            lines.append(f"RUN --mount=type=bind,source=project,target=/project cp -r /project /tmp/src && "
                         f"{build} wheel {offline} --no-build-isolation -w /tmp/wheels /tmp/src && rm -rf /tmp/src && "
                         + install.format(venv=f"{PREFIX}/{RUN_VENV}"))
        lines += ["WORKDIR /root", 'CMD ["/bin/bash"]']
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict:
        def venv(v: VenvLock) -> dict:
            return {"name": v.name, "distributions": [{"name": d.name, "version": d.version, "sha256": d.sha256}
                                                      for d in sorted(v.entries, key=lambda d: d.name.lower())]}
        return {"format": self.format, "base": copy.deepcopy(self.base), "venvs": [venv(v) for v in self.venvs],
                "build_tools": venv(self.build_tools), "project_sha256": self.project_sha256,
                "project": self.project, "containerfile_sha256": hashlib.sha256(self.containerfile().encode()).hexdigest()}

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()


# what a recipe from elsewhere may hold: each value lands in a requirements file, an mmdebstrap
# command line or a Containerfile, so anything beyond these forms is refused, never passed on
_DIST = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,198}[A-Za-z0-9])?$")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+!_-]{0,63}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_DEB = re.compile(r"^[a-z0-9][a-z0-9+.-]{0,99}$")
_SUITE = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
_MIRROR = re.compile(r"^https?://[A-Za-z0-9.-]+(?::[0-9]+)?(?:/[A-Za-z0-9._~%/+-]*)?$")


def _checked(recipe: Recipe) -> Recipe:
    for v in recipe.venvs + (recipe.build_tools,):
        for d in v.entries:
            if not (_DIST.match(d.name) and _VERSION.match(d.version) and _SHA256.match(d.sha256)):
                raise RecipeError(f"the {v.name} venv's entry {d.name!r}=={d.version!r} (sha256 {d.sha256[:16]!r}) is not "
                                  "a distribution name, version and sha256")
    b = recipe.base
    if not _MIRROR.match(str(b["mirror"])) or not _SUITE.match(str(b["suite"])):
        raise RecipeError(f"the base's mirror {str(b['mirror'])[:80]!r} or suite {str(b['suite'])[:40]!r} is not an "
                          "http(s) address and a Debian suite name")
    bad = [p for p in b["included"] if not _DEB.match(str(p))]
    project_ok = _SHA256.match(recipe.project_sha256) if recipe.has_project else recipe.project_sha256 == ""
    if bad or not _SHA256.match(str(b["tar_sha256"])) or not project_ok:
        raise RecipeError("the base's packages or a sha256 are not in their form" + (f" ({bad[0]!r})" if bad else ""))
    if not isinstance(b["source_date_epoch"], int) or not 0 <= b["source_date_epoch"] < 2 ** 33:
        raise RecipeError(f"source_date_epoch {b['source_date_epoch']!r} is not a time in seconds")
    if len({v.name for v in recipe.venvs}) != len(recipe.venvs) or any(v.name == "build" for v in recipe.venvs):
        raise RecipeError("venv names repeat, or one is named 'build' (the build tools' own)")
    return recipe


def from_json(data: dict, where: str = "the record") -> Recipe:
    """A recipe a record carries, checked: RecipeError naming the field when it is not one."""
    try:
        if data.get("format") not in READS:
            raise RecipeError(f"recipe format {data.get('format')!r}, this version reads {' and '.join(map(str, READS))}")

        def venv(v: dict) -> VenvLock:
            return VenvLock(str(v["name"]), tuple(Locked(str(d["name"]), str(d["version"]), str(d["sha256"]))
                                                  for d in v["distributions"]))
        base = dict(data["base"])
        for key in ("suite", "mirror", "source_date_epoch", "tar_sha256", "included"):
            if key not in base:
                raise RecipeError(f"the base has no {key!r}")
        recipe = _checked(Recipe(base, tuple(venv(v) for v in data["venvs"]), venv(data["build_tools"]),
                                 str(data["project_sha256"]), dict(data.get("project") or {}), int(data["format"])))
    except RecipeError as e:
        raise RecipeError(f"{where}: its image recipe is not one this version can build ({e})") from None
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise RecipeError(f"{where}: its image recipe is incomplete or malformed ({e.__class__.__name__}: {e}); "
                          "it cannot be built from") from None
    if not recipe.venvs or recipe.has_project and recipe.venvs[0].name != RUN_VENV:
        raise RecipeError(f"{where}: its image recipe has no venv, or its {RUN_VENV!r} venv is not the first")
    return recipe


def project_files(root: str) -> list[str]:
    """The project's files an image installs from (relative paths, sorted); RecipeError when `root`
    lacks one of them (a checkout has them all; an installed package too, since setup.py ships in it)."""
    missing = [p for p in PROJECT_FILES if not os.path.exists(os.path.join(root, p))]
    if missing:
        raise RecipeError(f"{root} is not a checkout of cm4mlperf-llm (no {', '.join(missing)}): an image is built "
                          "from a clone of the project (git clone ...; give its folder with --project_src)")
    out = []
    for part in PROJECT_FILES:
        top = os.path.join(root, part)
        if os.path.isfile(top):
            out.append(part)
            continue
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d not in SKIP and not d.startswith(".") and not d.endswith(".egg-info"))
            rel = os.path.relpath(folder, root)
            out += [os.path.join(rel, f) for f in sorted(files) if not f.endswith((".pyc", ".pyo"))]
    return sorted(out)


def files_sha256(root: str, files: list[str]) -> str:
    h = hashlib.sha256()
    for rel in files:
        with open(os.path.join(root, rel), "rb") as f:
            h.update(f"{rel}\0{hashlib.sha256(f.read()).hexdigest()}\n".encode())
    return h.hexdigest()


def write_context(recipe: Recipe, dest: str, base_tar: str, wheelhouses: dict, project_root: str) -> str:
    """The build context in `dest` (emptied first): Containerfile, base.tar (a hard link where the
    file system allows), locks/, wheels/<venv>/ (from `wheelhouses`: venv name -> folder of the
    locked archives), project/ and project.sha256. Every archive is checked against its lock. Returns the Containerfile."""
    if os.path.exists(dest):
        shutil.rmtree(dest)
    os.makedirs(os.path.join(dest, "locks"))
    _place(base_tar, os.path.join(dest, "base.tar"))
    if recipe.has_project:
        with open(os.path.join(dest, "project.sha256"), "w", encoding="utf-8") as f:
            f.write(recipe.project_sha256 + "\n")     # in a layer, so the project's step is rebuilt when it changes
    indexes: dict[str, dict] = {}           # each wheelhouse's archives by sha256, hashed once (venvs share one)
    for v in recipe.venvs + (recipe.build_tools,):
        with open(os.path.join(dest, "locks", f"{v.name}.txt"), "w", encoding="utf-8") as f:
            f.write(v.requirements())
        source = wheelhouses.get(v.name, "")
        if source not in indexes:
            indexes[source] = _by_sha256(source)
        _copy_wheelhouse(v, source, indexes[source], os.path.join(dest, "wheels", v.name))
    files = project_files(project_root) if recipe.has_project else []
    got = files_sha256(project_root, files) if recipe.has_project else ""
    if got != recipe.project_sha256:
        raise RecipeError(f"the project's files at {project_root} (sha256 {got[:12]}) are not those the recipe "
                          f"names ({recipe.project_sha256[:12]}"
                          + (f", git commit {recipe.project['git_commit'][:12]}" if recipe.project.get("git_commit") else "")
                          + "): check that commit out and build from it")
    for rel in files:
        target = os.path.join(dest, "project", rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(project_root, rel), target)
    path = os.path.join(dest, "Containerfile")
    with open(path, "w", encoding="utf-8") as f:
        f.write(recipe.containerfile())
    return path


def _by_sha256(source: str) -> dict:
    """The archives of the folder `source` by their sha256 ({} for none)."""
    have = {}
    if source and os.path.isdir(source):
        for name in sorted(os.listdir(source)):
            path = os.path.join(source, name)
            if os.path.isfile(path):
                have[sha256_file(path)] = path
    return have


def _copy_wheelhouse(venv: VenvLock, source: str, have: dict, dest: str) -> None:
    """Exactly the locked archives (`have`: source's archives by sha256), each checked by its sha256;
    RecipeError naming those missing."""
    os.makedirs(dest)
    missing = [d for d in venv.entries if d.sha256 not in have]
    if missing:
        raise RecipeError(f"the {venv.name} venv's wheelhouse {source or '(none)'} lacks the locked archive of "
                          + ", ".join(f"{d.name}=={d.version}" for d in missing[:10])
                          + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
                          + ": download them (containers/wheels.py) with the network on")
    for d in venv.entries:
        src = have[d.sha256]
        _place(src, os.path.join(dest, os.path.basename(src)))


def _place(src: str, dest: str) -> None:
    """A hard link where the file system allows (a vLLM venv's archives are ~1 GB), else a copy."""
    try:
        os.link(src, dest)
    except OSError:
        shutil.copyfile(src, dest)
