"""The container engine a host has: podman (preferred: rootful or rootless, no daemon) or the docker
CLI (Docker's daemon, or podman's Docker-API service behind it).

podman gets a containers.conf of ours (`write_conf`): runc as the runtime where it is installed
(crun fails on some cgroup layouts, this project's build hosts among them) and nofile/nproc limits
the host's own hard limits allow. A private store (`root`, `runroot`) keeps a test's images and
containers apart from the user's and is removed whole afterwards.

Every call goes through `Engine.run`, which turns the engine's failures a user can act on (no
engine, a full or busy image store, a missing image) into `ContainerError` naming the fix.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass, replace
from typing import Callable, Optional

from cmcontract.publish import write_text

KINDS = ("podman", "docker")
CONF_NAME = "containers.conf"
NOFILE, NPROC = 20000, 32768        # the most the build hosts' limits allow a container
RUNROOT_MAX = 50                    # podman: "the specified runroot is longer than 50 characters"


def local_docker_host(value: str) -> bool:
    """A DOCKER_HOST a record may carry: a Unix socket on this machine (a tcp:// or ssh:// one would
    have a record's removal command reach another machine)."""
    return value.startswith("unix:///") and "\n" not in value and len(value) < 300


class ContainerError(RuntimeError):
    pass


@dataclass(frozen=True)
class Engine:
    kind: str                       # "podman" or "docker"
    binary: str
    conf: str = ""                  # podman: our containers.conf ("" : the host's)
    root: str = ""                  # podman: a private image store ("" : the user's)
    runroot: str = ""

    def argv(self, *args: str) -> list[str]:
        out = [self.binary]
        if self.kind == "podman" and self.root:
            out += ["--root", self.root, "--runroot", self.runroot or self.root + "-run"]
        return out + list(args)

    def environ(self, base: Optional[dict] = None) -> dict:
        env = dict(os.environ if base is None else base)
        if self.kind == "podman" and self.conf:
            env["CONTAINERS_CONF"] = self.conf
        return env

    def reach_env(self, environ: Optional[dict] = None) -> dict:
        """What a later process needs in its environment to reach this engine's containers (a server
        record keeps it for `_stop`, which may run from a shell without it): podman's containers.conf;
        the docker daemon's socket the CLI is pointed at (DOCKER_HOST of `environ`, this process's by
        default), a local one only (local_docker_host)."""
        if self.kind == "podman":
            return {"CONTAINERS_CONF": self.conf} if self.conf else {}
        host = (os.environ if environ is None else environ).get("DOCKER_HOST", "")
        return {"DOCKER_HOST": host} if local_docker_host(host) else {}

    def to_json(self) -> str:
        """The engine as one string (a step hands it to the next in its env)."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Engine":
        try:
            data = json.loads(text)
            engine = cls(**{k: str(data[k]) for k in ("kind", "binary", "conf", "root", "runroot") if k in data})
        except (ValueError, TypeError, KeyError) as e:
            raise ContainerError(f"not a container engine's description ({e}): {text[:120]!r}") from None
        if engine.kind not in KINDS:
            raise ContainerError(f"container engine kind {engine.kind!r}: podman or docker")
        return engine

    def with_store(self, root: str) -> "Engine":
        """The same engine with a private image store under `root` (podman only). podman refuses a
        runroot longer than RUNROOT_MAX characters; a deeper `root` gets its runroot in /tmp, named
        by the root's digest (discard_store removes it too)."""
        if self.kind != "podman":
            raise ContainerError("a private image store needs podman; docker keeps one store per daemon")
        root = os.path.abspath(root)
        runroot = os.path.join(root, "run")
        if len(runroot) > RUNROOT_MAX:
            runroot = "/tmp/cm4mlperf-run-" + hashlib.sha256(root.encode()).hexdigest()[:16]
        return replace(self, root=os.path.join(root, "storage"), runroot=runroot)

    def run(self, *args: str, timeout: float = 3600, what: str = "", check: bool = True,
            runner: Callable = subprocess.run) -> subprocess.CompletedProcess:
        argv = self.argv(*args)
        try:
            res = runner(argv, capture_output=True, text=True, timeout=timeout, env=self.environ(),
                         stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            raise ContainerError(f"{self.binary} is gone; install podman (Debian: apt-get install podman runc) "
                                 "or docker, or name another with --container_engine") from None
        except subprocess.TimeoutExpired:
            raise ContainerError(f"{what or ' '.join(argv[:3])} took longer than {timeout:.0f} s and was stopped")
        if check and res.returncode != 0:
            raise failure(what or " ".join(argv[:3]), res.returncode, res.stderr or res.stdout, self.kind)
        return res


def reach_env_ok(kind: str, env: dict) -> bool:
    """`env` (a server record's, a file read back) is what Engine.reach_env writes for `kind`, and
    nothing else."""
    if kind == "podman":
        return set(env) <= {"CONTAINERS_CONF"}
    return set(env) <= {"DOCKER_HOST"} and all(local_docker_host(str(v)) for v in env.values())


_KNOWN = (
    ("no space left on device", "the image store is full: free space where it lives "
     "({kind} system df; {kind} image prune) and build again"),
    ("database is locked", "the image store is busy (another podman holds its lock): wait for it to end "
     "and run again"),
    ("timeout waiting for lock", "the image store is busy (another podman holds its lock): wait for it to end "
     "and run again"),
    ("image not known", "the image is not in this store: build it (cm run script --tags=build,mlperf,image) "
     "or load its archive"),
    ("no such image", "the image is not in this store: build it (cm run script --tags=build,mlperf,image) "
     "or load its archive"),
    ("cannot connect to the docker daemon", "no Docker daemon answers: start it (or podman system service), "
     "or use podman"),
)


def failure(what: str, rc: int, output: str, kind: str = "podman") -> ContainerError:
    """A ContainerError for a failed engine command: the cause a user can act on, where known (in
    the commands of the engine `kind`), and the tail of what the engine said."""
    low = output.lower()
    fix = next((fix.format(kind=kind) for needle, fix in _KNOWN if needle in low), "")
    tail = "\n".join(output.strip().splitlines()[-12:])
    return ContainerError(f"{what} failed (exit {rc})" + (f": {fix}" if fix else "") + f"\n{tail}")


def find(prefer: str = "", which: Callable[[str], Optional[str]] = shutil.which) -> Engine:
    """The engine to use: `prefer` ("podman", "docker", or a path to either) when given, else podman,
    else docker; ContainerError naming what to install when there is none."""
    if prefer:
        kind = os.path.basename(prefer)
        kind = next((k for k in KINDS if kind.startswith(k)), "")
        if not kind:
            raise ContainerError(f"--container_engine={prefer}: not podman or docker; give one of {', '.join(KINDS)} "
                                 "or the path of either")
        binary = prefer if os.sep in prefer else which(prefer)
        if not binary or not os.access(binary, os.X_OK):
            raise ContainerError(f"--container_engine={prefer}: not found or not executable; install it "
                                 "(Debian: apt-get install podman runc) or leave the option out to take "
                                 "whichever the host has")
        return Engine(kind, binary)
    for kind in KINDS:
        binary = which(kind)
        if binary:
            return Engine(kind, binary)
    raise ContainerError("neither podman nor docker is installed, and a container run needs one: install podman "
                         "(Debian/Ubuntu: apt-get install podman runc; it needs no daemon) or docker, or run "
                         "without --docker")


def conf_text(runc: Optional[str], hard_nofile: int, hard_nproc: int) -> str:
    """containers.conf: limits no higher than the host's hard limits allow; runc where present."""
    nofile = min(NOFILE, hard_nofile) if hard_nofile > 0 else NOFILE
    nproc = min(NPROC, hard_nproc) if hard_nproc > 0 else NPROC
    lines = ["# written by cm4mlperf-llm (mlperf_llm/containers/engine.py)", "[containers]",
             f'default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]']
    if runc:
        lines += ["", "[engine]", 'runtime = "runc"']
    return "\n".join(lines) + "\n"


def _hard_limit(which: int) -> int:
    import resource
    hard = resource.getrlimit(which)[1]
    return -1 if hard == resource.RLIM_INFINITY else hard


def write_conf(folder: str, which: Callable[[str], Optional[str]] = shutil.which) -> str:
    """Our containers.conf in `folder`; its path."""
    import resource
    path = os.path.join(folder, CONF_NAME)
    write_text(path, conf_text(which("runc"), _hard_limit(resource.RLIMIT_NOFILE),
                               _hard_limit(resource.RLIMIT_NPROC)))
    return path


def configured(engine: Engine, folder: str) -> Engine:
    """podman with our containers.conf (written in `folder`); docker as it is."""
    if engine.kind != "podman":
        return engine
    return replace(engine, conf=write_conf(folder))


def discard_store(engine: Engine, folder: str) -> list[str]:
    """A private store (Engine.with_store(folder)) gone whole: its containers, images and mounts,
    then the folder. Returns what was still mounted and had to be unmounted by force (a leak to
    report). A store's overlay mounts must go before its files: removing a mounted image's files
    would reach into the image's layers."""
    if engine.root:
        engine.run("rm", "-af", "-t", "0", check=False, timeout=300)
        engine.run("image", "unmount", "--all", check=False, timeout=300)
        engine.run("rmi", "-af", check=False, timeout=300)
    leaked = []
    for top in [folder] + ([engine.runroot] if engine.runroot and not engine.runroot.startswith(folder) else []):
        left = mounts_under(top)
        for point in sorted(left, key=len, reverse=True):
            subprocess.run(["umount", "-l", point], capture_output=True, timeout=60)
        if not mounts_under(top):
            shutil.rmtree(top, ignore_errors=True)
        leaked += left
    return leaked


def mounts_under(folder: str, table: str = "/proc/self/mounts") -> list[str]:
    top = os.path.abspath(folder).rstrip("/") + "/"
    try:
        with open(table, encoding="utf-8") as f:
            points = [line.split()[1].replace("\\040", " ") for line in f if len(line.split()) > 1]
    except OSError:
        return []
    return [p for p in points if (p + "/").startswith(top)]
