#!/usr/bin/env python3
"""Run the image's SquashFS file with Charliecloud's ch-run, as any user, with the host's GPUs.

build-mlperf-image --squashfs=IMAGE.sqfs writes this file beside the image as IMAGE.sqfs.run (it
uses the standard library only: the host needs python3, 3.8 or later, and ch-run, not this project):

    IMAGE.sqfs.run [--gpus=auto|nvidia|amd|none] [--work=DIR] [--bind=HOST:TARGET]... [--dry-run] -- COMMAND...

The work folder (default: the current one) is bound at /mnt, is where COMMAND starts and is its
HOME (cm's CM home is /mnt/CM); the image is read-only. ch-run passes the host's environment on:
the image's own comes from IMAGE.sqfs.env, and the host's variables that name host folders a
program in the image would load from (HOST_PATHS) are dropped. ch-run mounts the file with FUSE; where a node's
/dev/fuse is closed to users, the launcher says so and how to run a folder unpacked from the file
(--image=DIR) instead.

GPUs. The device files come with the host's /dev, which ch-run binds. NVIDIA's user-space driver
must match the host's kernel module, so it comes from the host, as Apptainer's --nv and
Charliecloud's ch-fromhost --nvidia take it: the libraries NVIDIA's container toolkit injects for
compute (libcuda, libnvidia-ml, the PTX JIT, NVVM, ...) as `ldconfig -p` (or LD_LIBRARY_PATH)
finds them, and nvidia-smi, are copied once per driver into WORK/.host-gpu/nvidia-<version>/ (a
SquashFS takes no new folders, and ch-fromhost writes into the image), that folder the image's
LD_LIBRARY_PATH and first on its PATH. AMD: vLLM's ROCm build carries ROCm's user space; /dev/kfd and /dev/dri
come with /dev, so nothing is copied.
"""
from __future__ import annotations

import argparse
import os
import pwd
import re
import shlex
import shutil
import socket
import subprocess
import sys

TARGET = "/mnt"                         # where the work folder is bound in the image (the image has it)
STAGE = ".host-gpu"                     # under the work folder: the host driver's files, per driver
# the libraries NVIDIA's container toolkit (libnvidia-container) injects for the utility and
# compute capabilities, by their name's stem; and the tools
NVIDIA_LIBS = ("libcuda", "libcudadebugger", "libnvidia-ml", "libnvidia-ptxjitcompiler", "libnvidia-nvvm",
               "libnvidia-gpucomp", "libnvidia-allocator", "libnvidia-cfg", "libnvidia-opencl", "libnvidia-nscq",
               "libnvidia-fatbinaryloader", "libnvidia-compiler", "libnvidia-pkcs11", "libnvidia-pkcs11-openssl3")
NVIDIA_TOOLS = ("nvidia-smi", "nvidia-debugdump")
# the host's variables naming host folders (libraries, Python, a venv, CM's), unset in the image
HOST_PATHS = ("LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "VIRTUAL_ENV",
              "CM_REPOS", "CM4MLPERF_CACHE_DIR")
_LDCONFIG_LINE = re.compile(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)\s*$")
_VERSION = re.compile(r"\.so\.(\d+(?:\.\d+)+)$")


class LaunchError(RuntimeError):
    pass


def driver_libraries(ldconfig_text: str, folders: tuple = ()) -> dict:
    """{soname: host path} of the NVIDIA driver's libraries: 64-bit entries of `ldconfig -p`'s output,
    then the given folders (LD_LIBRARY_PATH's: a container host's driver is often only there).
    Only versioned names (libcuda.so.1), the first found of each; of names for one file
    (libcuda.so.1 -> libcuda.so.580.159.04) the shortest, the soname."""
    found: dict = {}
    for line in ldconfig_text.splitlines():
        m = _LDCONFIG_LINE.match(line)
        if m and "64" in m.group(2) and _wanted(m.group(1)):
            found.setdefault(m.group(1), m.group(3))
    for folder in folders:
        try:
            names = sorted(os.listdir(folder), key=lambda n: (len(n), n))
        except OSError:
            continue
        files = {os.path.realpath(p) for p in found.values()}
        for name in names:
            path = os.path.join(folder, name)
            if _wanted(name) and name not in found and os.path.realpath(path) not in files:
                found[name] = path
                files.add(os.path.realpath(path))
    return found


def _wanted(name: str) -> bool:
    stem, sep, version = name.partition(".so.")
    return bool(sep and version) and stem in NVIDIA_LIBS


def driver_version(libs: dict) -> str:
    """The driver's version from libcuda's real file name (libcuda.so.580.159.04), else 'unknown'."""
    path = libs.get("libcuda.so.1")
    m = _VERSION.search(os.path.realpath(path)) if path else None
    return m.group(1) if m else "unknown"


def stage_nvidia(work: str, libs: dict, tools: dict) -> tuple[str, int, int, tuple]:
    """Copy the driver's libraries and tools into WORK/.host-gpu/nvidia-<version>/{lib,bin}, each
    file written whole (a copy, then a rename) and copied again only when its size or time differs;
    each library stem also gets its unversioned name (libcuda.so). A name whose file is gone (a stale
    ldconfig cache, a dangling link) is left out. Returns (folder, copied, kept, left out)."""
    if "libcuda.so.1" not in libs or not os.path.exists(libs["libcuda.so.1"]):
        raise LaunchError("--gpus=nvidia: no NVIDIA driver library (libcuda.so.1) in `ldconfig -p` or "
                          "LD_LIBRARY_PATH on this host; fix: run on a node with the NVIDIA driver "
                          "installed, or --gpus=none")
    folder = os.path.join(work, STAGE, "nvidia-" + driver_version(libs))
    copied = kept = 0
    gone = []
    for sub, files in (("lib", libs), ("bin", tools)):
        os.makedirs(os.path.join(folder, sub), exist_ok=True)
        for name, src in sorted(files.items()):
            real = os.path.realpath(src)
            dest = os.path.join(folder, sub, name)
            try:
                st = os.stat(real)
            except FileNotFoundError:
                gone.append(src)
                continue
            try:
                have = os.stat(dest, follow_symlinks=False)
                if (have.st_size, int(have.st_mtime)) == (st.st_size, int(st.st_mtime)):
                    kept += 1
                    continue
            except FileNotFoundError:
                pass
            part = f"{dest}.part-{socket.gethostname()}-{os.getpid()}"     # a work folder nodes share
            try:
                shutil.copy2(real, part)
                os.replace(part, dest)
            finally:
                if os.path.exists(part):
                    os.unlink(part)
            copied += 1
    for soname in (n for n, p in libs.items() if p not in gone):
        link = os.path.join(folder, "lib", soname.partition(".so.")[0] + ".so")
        if not os.path.lexists(link):
            try:
                os.symlink(soname, link)
            except FileExistsError:             # another launch on this node made it meanwhile
                pass
    return folder, copied, kept, tuple(gone)


def gpu_kind(requested: str, exists=os.path.exists, which=shutil.which) -> str:
    """auto: nvidia where the host has the NVIDIA driver's device or nvidia-smi, amd where /dev/kfd."""
    if requested != "auto":
        return requested
    if exists("/dev/nvidiactl") or which("nvidia-smi"):
        return "nvidia"
    return "amd" if exists("/dev/kfd") else "none"


def ch_run_argv(image: str, argv: list, binds: tuple = (), workdir: str = TARGET, env: tuple = (),
                env_file: str = "") -> list:
    """ch-run's command line: the host's variables naming host folders (HOST_PATHS) unset, then the
    image's environment file (IMAGE.env, or env_file), then `env` (VAR=value, in order: a value may
    name $VAR), the host folders bound (host, target; a target must exist in the read-only image:
    /mnt does)."""
    out = ["ch-run", *(f"--unset-env={v}" for v in HOST_PATHS), f"--set-env={env_file or image + '.env'}"]
    out += [f"--set-env={e}" for e in env]
    out.append(f"--cd={workdir}")
    out += [f"--bind={os.path.abspath(host)}:{target}" for host, target in binds]
    return out + [image, "--", *argv]


def plan(image: str, work: str, argv: list, gpus: str = "auto", binds: tuple = (), environ=None,
         ldconfig=None, which=shutil.which, exists=os.path.exists, stage: bool = True,
         env_file: str = "") -> tuple[list, str]:
    """(ch-run's argv, what was done for the GPUs, one line). `stage=False` (a dry run) copies nothing."""
    environ = os.environ if environ is None else environ
    kind = gpu_kind(gpus, exists, which)
    env: tuple = (f"HOME={TARGET}",)
    if kind == "nvidia":
        folders = tuple(p for p in environ.get("LD_LIBRARY_PATH", "").split(":") if p)
        libs = driver_libraries((ldconfig or _ldconfig)(), folders)
        tools = {t: p for t in NVIDIA_TOOLS if (p := which(t))}
        if stage:
            _stageable(work)
            folder, copied, kept, gone = stage_nvidia(work, libs, tools)
        else:
            folder, copied, kept, gone = os.path.join(work, STAGE, "nvidia-" + driver_version(libs)), 0, 0, ()
        inside = f"{TARGET}/{os.path.relpath(folder, work)}"
        env += (f"LD_LIBRARY_PATH={inside}/lib", f"PATH={inside}/bin:$PATH", f"TRITON_LIBCUDA_PATH={inside}/lib")
        n = len(libs) - len([g for g in gone if g in libs.values()])
        note = (f"GPUs: NVIDIA driver {driver_version(libs)} from this host: {n} "
                f"librar{'y' if n == 1 else 'ies'} and "
                f"{', '.join(sorted(tools)) or 'no nvidia-smi'} in {folder} "
                + (f"({copied} copied, {kept} already there)" if stage else "(dry run: nothing copied)")
                + (f"; left out, their files gone: {', '.join(gone)}" if gone else ""))
    elif kind == "amd":
        if not exists("/dev/kfd"):
            raise LaunchError("--gpus=amd: this host has no /dev/kfd (the ROCm kernel driver); fix: run on a "
                              "node with AMD GPUs, or --gpus=none")
        note = "GPUs: AMD: /dev/kfd and /dev/dri come with the host's /dev; ROCm's user space is the image's"
    elif kind == "none":
        note = "GPUs: none"
    else:
        raise LaunchError(f"--gpus={gpus}: auto, nvidia, amd or none")
    return ch_run_argv(image, argv, ((work, TARGET), *binds), TARGET, env, env_file), note


def _stageable(work: str) -> None:
    """LaunchError where the driver cannot be staged in the work folder and run from it."""
    if not os.access(work, os.W_OK | os.X_OK):
        raise LaunchError(f"--work={work}: uid {os.getuid()} cannot write there, and the host's NVIDIA driver is "
                          "copied there for the image; fix: --work=a folder of yours, or --gpus=none")
    if os.statvfs(work).f_flag & os.ST_NOEXEC:
        raise LaunchError(f"--work={work}: its file system is mounted noexec, so the image could not load the "
                          "driver copied there; fix: --work=a folder on another file system (not /tmp where it "
                          "is noexec), or --gpus=none")


def _ldconfig() -> str:
    for cmd in ("ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"):
        try:
            return subprocess.run([cmd, "-p"], capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
    return ""


def _user() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:                                    # a uid the host's passwd does not list
        return f"uid{os.getuid()}"


def fuse_refusal(image: str, sqfs: str, access=os.access, isfile=os.path.isfile) -> str:
    """Why ch-run cannot mount a SquashFS file here ('' where it can, or for an unpacked folder):
    it mounts the file with FUSE in its user namespace, which needs /dev/fuse open to this user."""
    if not isfile(image) or access("/dev/fuse", os.R_OK | os.W_OK):
        return ""
    return (f"{image}: ch-run mounts a SquashFS with FUSE, and this node's /dev/fuse is not open to uid "
            f"{os.getuid()} (its mode, or no /dev/fuse); fix: unpack it once into a folder (unsquashfs -d DIR "
            f"{image}) and run that: {sqfs}.run --image=DIR ...; or ask the site to open /dev/fuse (mode 0666, "
            "as most distributions ship it)")


def main(args: list, image: str = "") -> int:
    p = argparse.ArgumentParser(prog=os.path.basename(image + ".run" if image else "squash_launcher"),
                                description="Run the image's SquashFS with ch-run, with the host's GPUs.",
                                allow_abbrev=False)
    p.add_argument("--image", default=image, help="the SquashFS file, or a folder unpacked from it (default: this "
                                                  "file's name without .run)")
    p.add_argument("--gpus", default="auto", choices=("auto", "nvidia", "amd", "none"))
    p.add_argument("--work", default=os.getcwd(), help="the host folder bound at /mnt (default: the current one)")
    p.add_argument("--bind", action="append", default=[], metavar="HOST:TARGET",
                   help="another host folder (its target must exist in the image)")
    p.add_argument("--dry-run", action="store_true", help="print ch-run's command line; copy and run nothing")
    p.add_argument("command", nargs="+", help="what to run in the image (after --)")
    if "--" not in args:
        p.error("put -- before the command to run in the image (IMAGE.sqfs.run [options] -- COMMAND ...)")
    cut = args.index("--")
    a = p.parse_args(args[:cut] + ["--", *args[cut + 1:]])
    a.command = args[cut + 1:]
    try:
        # the environment: beside the image run, else beside the SquashFS this launcher came with
        env_file = next((e + ".env" for e in (a.image, image) if e and os.path.isfile(e + ".env")), "")
        if not a.image or not os.path.exists(a.image) or not env_file:
            raise LaunchError(f"image {a.image or '(none)'}: the SquashFS (or a folder unpacked from it) and the "
                              ".env file build-mlperf-image --squashfs wrote beside it are both needed; fix: "
                              "name that file (--image=PATH)")
        binds = []
        for b in a.bind:
            host, sep, target = b.partition(":")
            if not sep or not target.startswith("/"):
                raise LaunchError(f"--bind={b}: HOST:TARGET, the target an absolute folder of the image")
            binds.append((host, target))
        work = os.path.abspath(a.work)
        if not os.path.isdir(work):
            raise LaunchError(f"--work={a.work}: not a folder; fix: create it, or name another")
        for flag, path in [("--work", work), *(("--bind", h) for h, _ in binds)]:
            if ":" in os.path.abspath(path):        # ch-run's --bind=SRC:DST
                raise LaunchError(f"{flag}={path}: ch-run cannot bind a path with ':' in it; fix: a link to it "
                                  "without one")
        for path in (a.image, env_file):
            if "=" in os.path.abspath(path):        # ch-run's --set-env=FILE reads VAR=VALUE
                raise LaunchError(f"{path}: ch-run would read a path with '=' as VAR=VALUE; fix: move or link "
                                  "the image and its .env to a path without one")
        if not a.dry_run and not shutil.which("ch-run"):
            raise LaunchError("ch-run is not on PATH: install Charliecloud (Debian: apt-get install "
                              "charliecloud-runtime; a cluster: its module), or run the image with Apptainer "
                              f"(apptainer exec --nv {a.image} ...)")
        refusal = "" if a.dry_run else fuse_refusal(a.image, image or a.image)
        if refusal:
            raise LaunchError(refusal)
        argv, note = plan(os.path.abspath(a.image), work, a.command, a.gpus, tuple(binds), stage=not a.dry_run,
                          env_file=os.path.abspath(env_file))
    except (LaunchError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(note, file=sys.stderr)
    if a.dry_run:
        print(shlex.join(argv))
        return 0
    env = dict(os.environ)
    env.setdefault("USER", _user())                              # ch-run refuses to start without it
    sys.stderr.flush()
    os.execvpe("ch-run", argv, env)                              # ch-run takes this process's place and signals
    return 127


if __name__ == "__main__":
    me = os.path.abspath(sys.argv[0])
    sys.exit(main(sys.argv[1:], me[:-len(".run")] if me.endswith(".run") else ""))
