"""Building a recipe's image and checking it: the same recipe gives the same image ID (podman's
`build --timestamp` from `scratch`, offline, no byte code), so a record names its image by ID and a
rebuild elsewhere is checked against it layer by layer.

`make` is the whole route a step takes: the base (cached by its spec), the wheelhouses (cached by
archive), the context, the build, and the facts a record keeps (`ImageFacts`).
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass, field

from cmcontract.publish import write_json

from .engine import ContainerError, Engine
from .recipe import Recipe

REPOSITORY = "localhost/cm4mlperf-llm"
# build-mlperf-image's inputs a replay sets (--from, --load): the recorded image rebuilt from its facts
# file and checked against its ID; an archive of it loaded first (then checked, not rebuilt)
REBUILD_ENV = "CM_MLPERF_IMAGE_FROM"
LOAD_ENV = "CM_MLPERF_IMAGE_LOAD"
# build-mlperf-image's outputs: the image's ID and tag, its facts file (what a record keeps) and the
# engine (and store) it is in (Engine.to_json)
ID_ENV = "CM_MLPERF_IMAGE_ID"
TAG_ENV = "CM_MLPERF_IMAGE_TAG"
FACTS_ENV = "CM_MLPERF_IMAGE_FACTS"
ENGINE_ENV = "CM_MLPERF_IMAGE_ENGINE"


class ImageMismatch(ContainerError):
    pass


@dataclass(frozen=True)
class ImageFacts:
    image_id: str
    tag: str
    engine: str                         # "podman 4.3.1", ...
    layers: tuple = ()                  # (diff_id, the Containerfile step that made it)
    recipe: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        out = asdict(self)
        out["layers"] = [{"diff_id": d, "step": s} for d, s in self.layers]
        return out


def tag_for(recipe: Recipe) -> str:
    return f"{REPOSITORY}:{recipe.digest()[:16]}"


def layer_steps(recipe: Recipe) -> list[str]:
    """The Containerfile steps that make a layer, in order (FROM scratch makes none; ENV, WORKDIR and
    CMD change only the configuration)."""
    return [line if len(line) <= 160 else line[:157] + "..." for line in recipe.containerfile().splitlines()
            if line.split(" ", 1)[0] in ("ADD", "COPY", "RUN")]


def build(engine: Engine, recipe: Recipe, context: str, timeout: float = 3600) -> str:
    """The image built from `context` (written by recipe.write_context), tagged tag_for(recipe);
    its ID. Intermediate containers are removed, failed or not."""
    iid = os.path.join(context, ".image-id")
    args = ["build", "--network", "none", "--force-rm", "-f", os.path.join(context, "Containerfile"),
            "-t", tag_for(recipe), "--iidfile", iid]
    if engine.kind == "podman":
        args += ["--pull=never", "--timestamp", str(recipe.epoch)]
    else:                               # BuildKit reads the epoch from this build argument
        args += ["--build-arg", f"SOURCE_DATE_EPOCH={recipe.epoch}"]
    before = working_containers(engine)
    try:
        engine.run(*args, context, timeout=timeout, what=f"{engine.kind} build of {tag_for(recipe)}")
    except BaseException:               # failed, timed out, or this process told to stop: podman's build
        left = sorted(working_containers(engine) - before)     # leaves its working containers behind
        if left:
            engine.run("rm", "-f", *left, check=False, timeout=300)
        raise
    with open(iid, encoding="utf-8") as f:
        return f.read().strip()


def working_containers(engine: Engine) -> set[str]:
    """The IDs of podman's build containers in the store (buildah's `*working-container`); docker's
    builder keeps none in view."""
    if engine.kind != "podman":
        return set()
    res = engine.run("ps", "-a", "--external", "--format", "{{.ID}} {{.Names}}", check=False, timeout=120)
    return {line.split()[0] for line in res.stdout.splitlines()
            if len(line.split()) == 2 and line.split()[1].endswith("working-container")}


def inspect(engine: Engine, ref: str) -> dict | None:
    """{'id', 'layers'} of an image in the store; None when the store has no such image."""
    res = engine.run("image", "inspect", ref, check=False, timeout=120)
    if res.returncode != 0:
        return None
    try:
        seen = json.loads(res.stdout)[0]
        return {"id": _sha(str(seen["Id"])), "layers": tuple((seen.get("RootFS") or {}).get("Layers") or ())}
    except (ValueError, IndexError, KeyError, TypeError) as e:
        raise ContainerError(f"{engine.kind} image inspect {ref} answered what this tool cannot read ({e})") from None


def _sha(ident: str) -> str:
    return ident if ident.startswith("sha256:") else f"sha256:{ident}"


def facts(engine: Engine, recipe: Recipe, ref: str) -> ImageFacts:
    seen = inspect(engine, ref)
    if seen is None:
        raise ContainerError(f"{ref} is not in the image store after its build")
    steps = layer_steps(recipe)
    layers = tuple((d, steps[i] if i < len(steps) else "") for i, d in enumerate(seen["layers"]))
    version = engine.run("--version", timeout=60).stdout.strip()
    return ImageFacts(seen["id"], tag_for(recipe), version, layers, recipe.to_json())


def check(recorded: dict, built: ImageFacts) -> None:
    """ImageMismatch naming the first layer (and its Containerfile step) whose content differs from
    the record's, when the IDs differ."""
    want = _sha(str(recorded.get("image_id", "")))
    if want == built.image_id:
        return
    old = [(x.get("diff_id"), x.get("step", "")) for x in recorded.get("layers", [])]
    for i, (new_layer, step) in enumerate(built.layers):
        if i >= len(old) or old[i][0] != new_layer:
            raise ImageMismatch(f"the rebuilt image {built.image_id[:19]} is not the recorded {want[:19]}: layer {i + 1} "
                                f"differs ({step or '?'})" + _hint(step))
    raise ImageMismatch(f"the rebuilt image {built.image_id[:19]} is not the recorded {want[:19]}: every layer is "
                        "the same, so its configuration differs (the engine's version or defaults: recorded "
                        f"{recorded.get('engine', '?')}, here {built.engine})")


def _hint(step: str) -> str:
    if step.startswith("ADD base.tar"):
        return ": the base differs (another mirror state, or another mmdebstrap)"
    if "venv" in step:
        return ": a package of that venv's lock installed differently (the engine's version, or Debian's pip)"
    if "project" in step:
        return ": the project's files or the build tools differ"
    return ""


def save(engine: Engine, ref: str, archive: str) -> None:
    """The image as one archive file (docker-archive, which `load` takes back with the same ID; docker's
    `save` has no --format and writes that layout itself); written whole or not at all."""
    tmp = archive + ".partial"
    if os.path.exists(tmp):
        os.unlink(tmp)
    form = ["--format", "docker-archive"] if engine.kind == "podman" else []
    try:
        engine.run("save", *form, "-o", tmp, ref, what=f"saving {ref} to {archive}")
        os.replace(tmp, archive)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load(engine: Engine, archive: str) -> str:
    """Loads an image archive; the loaded image's ID."""
    if not os.path.isfile(archive):
        raise ContainerError(f"image archive {archive}: no such file")
    res = engine.run("load", "-i", archive, what=f"loading {archive}")
    names = [line.split(":", 1)[1].strip() for line in res.stdout.splitlines()
             if line.lower().startswith(("loaded image:", "loaded image(s):"))]
    seen = inspect(engine, names[-1].split(",")[0]) if names else None
    if seen is None:
        raise ContainerError(f"{engine.kind} load of {archive} named no image it could inspect:\n{res.stdout[-400:]}")
    return seen["id"]


def remove(engine: Engine, ref: str) -> None:
    engine.run("rmi", "-f", ref, check=False, timeout=300)


def write_facts(path: str, built: ImageFacts) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_json(path, built.to_json(), indent=1)


def clear_context(context: str) -> None:
    shutil.rmtree(context, ignore_errors=True)
