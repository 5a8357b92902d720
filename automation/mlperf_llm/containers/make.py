"""The route from a run's environments to its image: the recipe from the venvs' locks (`recipe_here`)
or from a record (recipe.from_json), the archives it names (wheels.py), the base (base.py), the
build (image.py). Caches: the base tarball by its spec, the wheelhouse by archive, both under
`<cache>/containers`; the image by its recipe's tag in the engine's store.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from ..sysinfo import envlock
from . import base as basemod
from . import image as imagemod
from . import wheels
from .engine import Engine
from .recipe import RUN_VENV, Recipe, VenvLock, files_sha256, project_files, write_context

PROJECT_DIST = "cm4mlperf-llm"
# the image's build venv: the one set of pinned build tools (envlock.BUILD_TOOLS)
BUILD_TOOLS = envlock.BUILD_TOOLS


@dataclass(frozen=True)
class Places:
    root: str                                   # <cache>/containers

    @property
    def wheels(self) -> str:
        return os.path.join(self.root, "wheels")

    def base_tar(self, spec: basemod.BaseSpec) -> str:
        return os.path.join(self.root, f"base-{spec.suite}-{spec.key()[:16]}.tar")

    def context(self, recipe: Recipe) -> str:
        return os.path.join(self.root, f"context-{recipe.digest()[:16]}")


# what no image venv holds: this project (built from its files) and pip (the image's venvs are made
# without it, and the build venv's pinned pip installs into them): a server's image made from its
# venv and one made from that venv's lock in a record (which has no hash for the venv's own pip) are
# then the same recipe
LEFT_OUT = frozenset((PROJECT_DIST, "pip"))


def venv_entries(python: str, reader=envlock.read) -> list[envlock.Locked]:
    """A venv's distributions for an image: all but LEFT_OUT and what came from a folder (an
    editable or local install has no archive to pin)."""
    return [d for d in reader(python) if envlock.dist_key(d.name) not in LEFT_OUT and d.note != "a folder, not an archive"]


def lock_entries(path: str, bare_pins: bool = False) -> list[envlock.Locked]:
    """A lock file's distributions for an image (a record's, as `envlock.requirements` writes it):
    all but LEFT_OUT; LockError naming the file, or a line that is not `name==version --hash=...`
    (bare_pins: or `name==version`, a run environment's package installed by hand, fetched by that
    version and hashed)."""
    return [d for d in envlock.parse_file(path, bare_pins) if envlock.dist_key(d.name) not in LEFT_OUT]


def recipe_here(base: basemod.Base, venvs: dict, project_root: str, places: Places, project: dict,
                python: str = sys.executable, reader=envlock.read, download=wheels.download,
                locked: dict | None = None) -> Recipe:
    """The recipe for this host's environments: `venvs` maps a venv name to its interpreter
    (RUN_VENV: the one `cm` runs in, this project installed into it; without it, no project: a
    server's image); `locked` maps a venv name to its lock's entries instead (lock_entries: a
    record's lock, nothing installed here). Every archive is fetched into the wheelhouse and hashed."""
    locked = locked or {}
    venvs = {**{n: "" for n in locked}, **{n: p for n, p in venvs.items() if n not in locked}}
    if not venvs:
        raise ValueError("no venv given")
    locks = []
    for name in sorted(venvs, key=lambda n: (n != RUN_VENV, n)):
        wanted = locked[name] if name in locked else venv_entries(venvs[name], reader)
        # every archive hashed already (a venv this project made, a lock): the recipe is known, and
        # its archives are fetched only if its image must be built (build)
        entries = tuple(wanted) if all(d.sha256 for d in wanted) else download(wanted, places.wheels, python=python)
        locks.append(VenvLock(name, tuple(entries)))
    tools = VenvLock("build", BUILD_TOOLS)
    if RUN_VENV not in venvs:
        return Recipe(base.facts(), tuple(locks), tools, "", {})
    digest = files_sha256(project_root, project_files(project_root))
    return Recipe(base.facts(), tuple(locks), tools, digest, project)


def fetch_for(recipe: Recipe, places: Places, python: str = sys.executable, download=wheels.download) -> None:
    """Every archive a recipe names, into the wheelhouse (checked by hash)."""
    for v in recipe.venvs + (recipe.build_tools,):
        download(list(v.entries), places.wheels, python=python)


def base_for(recipe: Recipe, places: Places, runner=None) -> basemod.Base:
    """The recipe's base, built (or found) and checked against the recipe's tarball hash."""
    b = recipe.base
    spec = basemod.BaseSpec(b["mirror"], b["suite"], tuple(b["included"]), int(b["source_date_epoch"]),
                            b.get("variant", basemod.VARIANT), b.get("snapshot", ""))
    got = basemod.build(spec, places.base_tar(spec), **({"runner": runner} if runner else {}))
    if got.sha256 != b["tar_sha256"]:
        raise basemod.BaseError(f"the base built from {spec.mirror} ({spec.suite}) has sha256 {got.sha256[:12]}, the "
                                f"recipe's {b['tar_sha256'][:12]}: the mirror has moved on since (give the recipe's "
                                f"snapshot with --base_mirror={b.get('snapshot') or 'URL'})")
    return got


def build(engine: Engine, recipe: Recipe, base: basemod.Base, places: Places, project_root: str,
          timeout: float = 3600, say=lambda line: None) -> imagemod.ImageFacts:
    """The image of `recipe` in the engine's store (built unless an image of its tag is there); its
    facts. The build context is removed afterwards, built or not."""
    tag = imagemod.tag_for(recipe)
    found = imagemod.inspect(engine, tag) is not None
    say(f"  {tag}: " + ("in the store already, not built again" if found else "building"))
    if not found:
        fetch_for(recipe, places)
        context = places.context(recipe)
        try:
            write_context(recipe, context, base.tar, {v.name: places.wheels for v in recipe.venvs + (recipe.build_tools,)},
                          project_root)
            imagemod.build(engine, recipe, context, timeout)
        finally:
            imagemod.clear_context(context)
    return imagemod.facts(engine, recipe, tag)


MAX_FACTS_BYTES = 16 << 20          # an image's facts file from elsewhere: its recipe lists a few hundred packages


def read_facts(path: str) -> tuple[dict, Recipe]:
    """An image's facts (image.ImageFacts.to_json, as a run or a submission keeps them) and the recipe
    in it, checked (recipe.from_json): a file from elsewhere is bounded and never obeyed beyond it."""
    import json

    from .recipe import RecipeError, from_json
    try:
        size = os.path.getsize(path)
        if size > MAX_FACTS_BYTES:
            raise RecipeError(f"{path} is {size} bytes; an image's facts file is at most {MAX_FACTS_BYTES}")
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise RecipeError(f"{path}: cannot be read ({e.strerror})") from None
    except ValueError as e:
        raise RecipeError(f"{path} is not JSON ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("recipe"), dict):
        raise RecipeError(f"{path} holds no image recipe (a cm4mlperf-image.json written by build-mlperf-image)")
    return data, from_json(data["recipe"], where=path)


def image_for(engine: Engine, places: Places, project_root: str, venvs: dict | None = None, mirror: str = "",
              recorded_path: str = "", say=print, locked: dict | None = None) -> imagemod.ImageFacts:
    """This host's image (`venvs`: name -> interpreter, RUN_VENV among them), or the image a facts
    file records, rebuilt and checked against its ID (ImageMismatch naming the layer)."""
    if recorded_path:
        recorded, recipe = read_facts(recorded_path)
        say(f"Rebuilding {recorded.get('image_id', '?')[:19]} from {recorded_path}")
        base = base_for(recipe, places)
        say(f"  base {base.sha256[:12]} ({len(base.packages)} Debian packages) matches the recipe")
        built = build(engine, recipe, base, places, project_root, say=say)
        imagemod.check(recorded, built)
        say(f"  the same image ID: {built.image_id}")
        return built
    venvs = venvs if venvs or locked else {RUN_VENV: sys.executable}
    # each venv read once: its distributions choose the base, and make the recipe as a lock would
    locked = locked or {}
    locked = {**{n: venv_entries(py) for n, py in venvs.items() if n not in locked}, **locked}
    spec = base_spec(mirror, [d for entries in locked.values() for d in entries])
    say(f"Base: Debian {spec.suite} from {spec.mirror} (mmdebstrap, SOURCE_DATE_EPOCH={spec.epoch})"
        + ("; with gcc and Python's headers: Triton compiles its launchers on the GPU at run time"
           if spec.packages != basemod.PACKAGES else ""))
    base = basemod.build(spec, places.base_tar(spec))
    has_project = RUN_VENV in locked                                    # the run venv: this project in it
    recipe = recipe_here(base, {}, project_root, places, _project(project_root) if has_project else {},
                         locked=locked)
    say("Venvs: " + ", ".join(f"{v.name} ({len(v.entries)} packages)" for v in recipe.venvs))
    return build(engine, recipe, base, places, project_root, say=say)


def base_spec(mirror: str, distributions: list) -> basemod.BaseSpec:
    """The base for venvs of these distributions (basemod.packages_for), from `mirror`, else from the
    host's apt mirror (its snapshot address noted)."""
    packages = basemod.packages_for(distributions)
    if mirror:
        return basemod.BaseSpec(mirror, packages=packages)
    found, snapshot = basemod.host_mirror()
    return basemod.BaseSpec(found, packages=packages, snapshot=snapshot)


def _project(root: str) -> dict:
    from ..reproduce.capture import PROJECT, git_runner, project_section
    from importlib.metadata import PackageNotFoundError, version
    try:
        ver = version(PROJECT)
    except PackageNotFoundError:
        ver = ""
    return project_section(root, ver, git_runner(root))
