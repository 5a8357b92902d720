"""LoadGen built from an mlcommons/inference source, for TEST06 where the round's wheels cannot run it.

The PyPI 4.1.x wheels (4.1.12 ... 4.1.30: all of v4.1's range) ignore audit.config's
accuracy_log_sampling_target and accuracy_log_rng_seed, so their TEST06 run logs no sample to
verify. LoadGen built from the v4.1 source applies them. Such a build has no mlperf.conf inside (the
wheels carry one): the source's mlperf.conf is put beside the module and the harness
reads it before user.conf, as v4.1's main.py does (loadgen_conf.py).

What is built is what is hashed and what the cache re-checks: `source_files`, the files at the top
of loadgen/ and in loadgen/bindings/ (the set LoadGen itself logs as Sha1OfFiles). The build runs on
a copy (setup.py writes next to itself; a shared source may be read-only).
"""
from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from typing import Callable, Optional

from cmcontract.places import cache_root

from ..files import sha256_file
from ..rounds import Round, RoundError
from .loadgen_conf import CONF_BESIDE
from .pyenv import PyEnvError, installed_version, pip_install_target
from .rounds import loadgen_seed

SKIP_SUFFIXES = (".so", ".pyc", ".pyd", ".o")
DOCS = "docs/accuracy.md, TEST06"
# --docker=chain: the build the host made for TEST06 (keep_build's folder), handed to the chain in the
# image, which has no compiler
HOST_BUILD_ENV = "CM_LOADGEN_HOST_BUILD"
HOST_PROBLEM_ENV = "CM_LOADGEN_HOST_BUILD_PROBLEM"      # or why the host could not build it


class LoadgenBuildError(RuntimeError):
    """LoadGen cannot be built from the source at hand; the message says why and the fix."""


def wheel_ignores_audit_sampling(loadgen_version: str) -> bool:
    """The PyPI 4.1.x wheels (4.1.12 ... 4.1.30 tried) ignore accuracy_log_sampling_target and
    accuracy_log_rng_seed: their TEST06 runs log nothing (4.1.7 and source builds apply them)."""
    parts = loadgen_version.strip().split(".")
    return len(parts) >= 3 and parts[:2] == ["4", "1"] and parts[2].isdigit() and int(parts[2]) >= 12


def wheel_problem(loadgen_version: str) -> str:
    return (f"the LoadGen {loadgen_version} wheel ignores audit.config's accuracy_log_sampling_target and "
            "accuracy_log_rng_seed, so its TEST06 run logs no samples to check")


def not_verified_reason(loadgen_version: str, reported: str) -> str:
    """Why a TEST06 run logged no sample ("" when its LoadGen should have): what the `_test06`
    LoadGen step reported, else (a run verified later, `--verify_only`) the wheel's known flaw."""
    if reported:
        return reported
    if wheel_ignores_audit_sampling(loadgen_version):
        return (f"{wheel_problem(loadgen_version)}; run TEST06 again with an mlcommons/inference source at hand "
                f"(--inference_source), from which LoadGen is built ({DOCS})")
    return ""


@dataclass(frozen=True)
class LoadgenSource:
    loadgen_dir: str
    files: tuple[str, ...]      # relative to loadgen_dir
    digest: str                 # sha256 over the files' names and contents
    mlperf_conf: str            # the source's mlperf.conf ("" if it has none)

    def paths(self) -> list[str]:
        return [os.path.join(self.loadgen_dir, f) for f in self.files]


def source_files(loadgen_dir: str) -> tuple[str, ...]:
    """The files at the top of loadgen/ and in loadgen/bindings/, sorted, compiled leftovers (an
    in-place build's .so) left out."""
    out = []
    for sub in ("", "bindings"):
        folder = os.path.join(loadgen_dir, sub)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if name.endswith(SKIP_SUFFIXES):
                continue
            if os.path.isfile(os.path.join(folder, name)):
                out.append(os.path.join(sub, name) if sub else name)
    return tuple(sorted(out))


def digest_of(loadgen_dir: str, files: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for rel in files:
        h.update(f"{rel}\0{sha256_file(os.path.join(loadgen_dir, rel))}\n".encode())
    return h.hexdigest()


def read_source(inference_source: str) -> LoadgenSource:
    """The LoadGen source of an mlcommons/inference checkout."""
    loadgen_dir = os.path.join(os.path.abspath(inference_source), "loadgen")
    if not os.path.isfile(os.path.join(loadgen_dir, "setup.py")):
        raise LoadgenBuildError(f"{loadgen_dir}/setup.py does not exist: {inference_source} is not an "
                                "mlcommons/inference checkout; give one at the round's tag")
    files = source_files(loadgen_dir)
    conf = next((p for p in (os.path.join(loadgen_dir, "mlperf.conf"),
                             os.path.join(os.path.dirname(loadgen_dir), "mlperf.conf")) if os.path.isfile(p)), "")
    return LoadgenSource(loadgen_dir, files, digest_of(loadgen_dir, files), conf)


_TOOLS_PROBE = ("import os, sysconfig\n"
                "print(os.path.join(sysconfig.get_config_var('INCLUDEPY') or '', 'Python.h'))\n"
                "print(os.environ.get('CXX') or sysconfig.get_config_var('CXX') or 'c++')\n")


def missing_tools(python: str) -> list[str]:
    """What building a C++ extension for `python` needs and this machine lacks: the C++ compiler
    setuptools will call (CXX, else the interpreter's) and Python's C headers."""
    res = subprocess.run([python, "-c", _TOOLS_PROBE], capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        return [f"{python} could not be asked for its compiler and headers: {res.stderr.strip()[-300:]}"]
    header, cxx = res.stdout.splitlines()[-2:]
    missing = []
    compiler = (shlex.split(cxx) or ["c++"])[0]
    if not shutil.which(compiler):
        missing.append(f"no C++ compiler ({compiler} is not on PATH; apt-get install g++)")
    if not os.path.isfile(header):
        missing.append(f"no Python headers ({header} is missing; apt-get install python3-dev, or the "
                       "python3.X-dev of that interpreter)")
    return missing


@dataclass(frozen=True)
class LoadgenChoice:
    """What the TEST06 run's LoadGen is: the wheel (it logs TEST06's samples, or it cannot and
    `problem` says why and the fix), or a build of `source`."""
    source: Optional[LoadgenSource] = None
    problem: str = ""


def for_test06(wheel_version: str, inference_source: str, python: str,
               tools: Optional[Callable[[str], list[str]]] = None, given: str = "",
               host_problem: str = "") -> LoadgenChoice:
    """The TEST06 LoadGen: the wheel where it logs TEST06's samples; else a build of the source
    at hand (`given`: one made on the host, which needs no compiler here where it is the build of
    that source for this interpreter's ABI); else the wheel, with why no build is possible and the
    fix (`host_problem`: the host's reason, where the host builds it for a chain in an image)."""
    if not wheel_ignores_audit_sampling(wheel_version):
        return LoadgenChoice()
    if host_problem and not given:
        return LoadgenChoice(problem=f"{host_problem} (--docker=chain: the host builds it for the image, "
                             "which has no compiler)")
    problem = wheel_problem(wheel_version)
    if not inference_source:
        return LoadgenChoice(problem=f"{problem}; no mlcommons/inference source is at hand to build LoadGen "
                             "from: pass --inference_src=<checkout of the round's tag> to run-mlperf-inference-app "
                             f"(--inference_source to run-mlperf-compliance-test06), and have a C++ compiler and "
                             f"Python's headers ({DOCS})")
    try:
        source = read_source(inference_source)
    except LoadgenBuildError as e:
        return LoadgenChoice(problem=f"{problem}; LoadGen cannot be built from the source at hand: {e}")
    host = ""
    if given:
        try:
            wanted = kept_name(source, interpreter_abi(python))
        except LoadgenBuildError as e:
            return LoadgenChoice(problem=f"{problem}; {e}")
        if is_build(given, wanted):
            return LoadgenChoice(source=source)
        host = (f"; the host's build {given} is not {wanted}, the build of these files for this "
                "interpreter (another Python, or other source files)")
    missing = (tools or missing_tools)(python)
    if missing:
        return LoadgenChoice(problem=f"{problem}; LoadGen cannot be built from {source.loadgen_dir} for "
                             f"{python}: {'; '.join(missing)}{host}; then run again ({DOCS})")
    return LoadgenChoice(source=source)


def build(python: str, source: LoadgenSource, site: str, timeout: float = 3600) -> None:
    """`pip install --no-deps --target site` of a copy of the source's files (pip gets the build
    requirements, pybind11 among them, as the source's pyproject.toml names them). The copy is
    removed afterwards; a failed build leaves no site."""
    copy = site + ".src"
    shutil.rmtree(copy, ignore_errors=True)
    for rel in source.files:
        os.makedirs(os.path.dirname(os.path.join(copy, rel)), exist_ok=True)
        shutil.copy2(os.path.join(source.loadgen_dir, rel), os.path.join(copy, rel))
    try:
        pip_install_target(python, [copy], site, timeout=timeout)
    except PyEnvError as e:
        raise LoadgenBuildError(f"building LoadGen from {source.loadgen_dir} failed: {e}") from None
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def interpreter_abi(python: str) -> str:
    """What a compiled extension for `python` is bound to (its SOABI, e.g. cpython-311-x86_64-linux-gnu)."""
    res = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_config_var('SOABI') or '')"],
                         capture_output=True, text=True, timeout=120)
    abi = res.stdout.strip()
    if res.returncode != 0 or not abi:
        raise LoadgenBuildError(f"{python} does not say its extension ABI (sysconfig SOABI): {res.stderr.strip()[-300:]}")
    return abi


def builds_store() -> str:
    """The cache's folder of finished builds (keep_build), which the TEST06 LoadGen step and the host
    of a --docker=chain run both build into."""
    return os.path.join(cache_root(), "builds")


def kept_name(source: LoadgenSource, abi: str) -> str:
    """A finished build's folder name: what it depends on, the digest of the source files it compiled
    and the interpreter's extension ABI."""
    return f"loadgen-{source.digest[:16]}-{abi}"


def is_build(folder: str, name: str) -> bool:
    """`folder` is a finished build named `name` (kept_name): a build made elsewhere is taken only as
    what its name says it is."""
    return bool(folder) and os.path.basename(os.path.normpath(folder)) == name and os.path.isdir(folder)


def keep_build(python: str, source: LoadgenSource, store: str) -> tuple[str, bool]:
    """(folder, found): the build of `source` for `python` in `store`, a folder of finished builds
    named by kept_name; compiled there first where it is missing (found False), through a temporary
    folder renamed into place, so a failed or interrupted build leaves none."""
    kept = os.path.join(store, kept_name(source, interpreter_abi(python)))
    if os.path.isdir(kept):
        return kept, True
    os.makedirs(store, exist_ok=True)
    tmp = f"{kept}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        build(python, source, tmp)
        os.replace(tmp, kept)
    except OSError:                     # another run kept the same build meanwhile
        if not os.path.isdir(kept):
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return kept, False


def build_kept(python: str, source: LoadgenSource, site: str, store: str,
               say: Callable[[str], None] = lambda m: None, given: str = "") -> bool:
    """The build of `source` for `python` copied into site (through a temporary folder renamed into
    place): `given`, a finished build made elsewhere (the host's, handed to a chain in an image that
    has no compiler) where it is the build of these files for this ABI, else keep_build's from
    `store`, compiled there first where missing. True where nothing was compiled."""
    if given and is_build(given, kept_name(source, interpreter_abi(python))):   # the ABI asked once, not twice
        kept, found, when = given, True, "on the host"
    else:
        kept, found = keep_build(python, source, store)
        when = "before"
    tmp = f"{site}.tmp-copy"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(kept, tmp, symlinks=True)
    shutil.rmtree(site, ignore_errors=True)
    os.replace(tmp, site)
    if found:
        say(f"LoadGen of these source files (sha256 {source.digest[:12]}) for this interpreter was built "
            f"{when}: copied from {kept}")
    return found


def build_on_host(wheel_version: str, inference_source: str, python: str, store: str) -> tuple[str, str]:
    """(folder, problem): for a chain that runs in an image without a compiler (--docker=chain),
    TEST06's LoadGen built here, by `python` (of the image's Python ABI: 3.11, as the image's
    Debian), into `store` (keep_build; one kept there before is taken, compiler or not); ("", "")
    where the round's wheel runs TEST06 itself; ("", why and the fix) where it cannot be built here."""
    if not wheel_ignores_audit_sampling(wheel_version):
        return "", ""
    try:
        kept = os.path.join(store, kept_name(read_source(inference_source), interpreter_abi(python))) \
            if inference_source else ""
    except LoadgenBuildError:
        kept = ""                       # for_test06 says why
    if kept and os.path.isdir(kept):
        return kept, ""
    choice = for_test06(wheel_version, inference_source, python)
    if choice.source is None:
        return "", choice.problem
    try:
        return keep_build(python, choice.source, store)[0], ""
    except LoadgenBuildError as e:
        return "", f"{wheel_problem(wheel_version)}; {e}"


@dataclass(frozen=True)
class BuiltLoadgen:
    site: str
    version: str
    qsl_rng_seed: int
    conf: str           # the mlperf.conf beside the module ("" when the build carries its own)


def build_for_round(python: str, source: LoadgenSource, site: str, rnd: Round, store: str = "",
                    say: Callable[[str], None] = lambda m: None, given: str = "") -> BuiltLoadgen:
    """build() (through `store` where given, or from `given`, the host's build: build_kept), then the check the round's wheels get: the
    seed this LoadGen applies must be the round's, or the source is not the round's. A build with no
    mlperf.conf inside (v4.1) gets the source's beside it (CONF_BESIDE), which the harness reads
    first; the seed is asked with it."""
    if store or given:
        build_kept(python, source, site, store, say, given)
    else:
        build(python, source, site)
    conf = ""
    try:
        version = installed_version(python, "mlcommons-loadgen", site)
        seed = loadgen_seed(python, site)
        if seed != rnd.qsl_rng_seed and source.mlperf_conf:
            conf = os.path.join(site, CONF_BESIDE)
            shutil.copyfile(source.mlperf_conf, conf)
            seed = loadgen_seed(python, site, conf)
    except (PyEnvError, RoundError) as e:
        raise LoadgenBuildError(f"LoadGen built from {source.loadgen_dir} cannot be used: {e}") from None
    if seed != rnd.qsl_rng_seed:
        read = f"with {source.mlperf_conf}" if conf else "the source has no mlperf.conf"
        raise LoadgenBuildError(f"LoadGen built from {source.loadgen_dir} applies qsl_rng_seed {seed} ({read}), "
                                f"but round v{rnd.name} requires {rnd.qsl_rng_seed}: the source is not the "
                                f"round's; give a checkout of mlcommons/inference {rnd.src_ref}")
    return BuiltLoadgen(site, version, seed, conf)
