"""The image as one SquashFS file, run without root: Charliecloud's `ch-convert` and `ch-run`
(user namespaces; no daemon, no setuid helper). A cluster's Apptainer runs the same file system
from the same recipe (docs/containers.md says which of the two was tested).

The image's file system is exported from a created (never started) container, converted, and the
container removed; the environment the recipe sets is written beside the file, since a flat file
system carries no image configuration, and so is the launcher (squash_launcher.py as IMAGE.sqfs.run)
that runs it with ch-run and the host's GPUs.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from typing import Callable, Optional

from cmcontract.publish import staged_file, write_text

from . import squash_launcher
from .engine import ContainerError, Engine
from .recipe import ENV

LAUNCHER_SUFFIX = ".run"            # IMAGE.sqfs.run: squash_launcher.py, ch-run with the host's GPUs


def tools(which: Callable[[str], Optional[str]] = shutil.which) -> None:
    """ContainerError naming what to install when Charliecloud or squashfs-tools is missing."""
    missing = [t for t in ("ch-convert", "ch-run", "mksquashfs", "squashfuse") if not which(t)]
    if missing:
        raise ContainerError(f"the SquashFS route needs {', '.join(missing)}: install Charliecloud with squashfs-tools "
                             "and squashfuse (Debian: apt-get install charliecloud squashfs-tools squashfuse)")


def environment(epoch: int) -> str:
    """The recipe's environment, one VAR=value a line, as `ch-run --set-env=FILE` reads it."""
    return "".join(f"{k}={v}\n" for k, v in ENV + (("SOURCE_DATE_EPOCH", str(epoch)),))


def export(engine: Engine, ref: str, out_sqfs: str, epoch: int, timeout: float = 3600) -> str:
    """`ref` as a SquashFS file at out_sqfs (written whole or not at all) and its environment file
    beside it (<out>.env); returns the SquashFS path."""
    tools()
    folder = os.path.dirname(os.path.abspath(out_sqfs))
    os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".ch-", dir=folder) as tmp:
        fs_tar = os.path.join(tmp, "fs.tar")
        ident = engine.run("create", "--pull=never", ref, "/bin/true", what=f"creating a container of {ref}",
                           timeout=300).stdout.strip().splitlines()[-1]
        try:
            engine.run("export", "-o", fs_tar, ident, what=f"exporting {ref}'s file system", timeout=timeout)
        finally:
            engine.run("rm", "-f", ident, check=False, timeout=120)
        part = os.path.join(tmp, "image.sqfs")
        res = subprocess.run(["ch-convert", "-i", "tar", "-o", "squash", fs_tar, part], capture_output=True, text=True,
                             timeout=timeout, stdin=subprocess.DEVNULL)
        if res.returncode != 0:
            raise ContainerError(f"ch-convert could not make {out_sqfs} (exit {res.returncode}):\n"
                                 + (res.stderr or res.stdout).strip()[-800:])
        write_beside(out_sqfs, epoch)
        os.replace(part, out_sqfs)
    return out_sqfs


def write_beside(image: str, epoch: int) -> None:
    """IMAGE.env (the recipe's environment) and IMAGE.run (the launcher: ch-run with the host's GPUs)
    beside the image, each written whole."""
    write_text(image + ".env", environment(epoch))
    with staged_file(image + LAUNCHER_SUFFIX) as tmp:
        shutil.copyfile(squash_launcher.__file__, tmp)
        os.chmod(tmp, 0o755)


def run_argv(sqfs: str, argv: list[str], binds: tuple = (), workdir: str = "/root") -> list[str]:
    """ch-run's command line: the image's environment, the host folders bound (host, target), the
    image read-only (write under a bound folder; a target must exist in the image, /mnt does)."""
    return squash_launcher.ch_run_argv(sqfs, argv, binds, workdir)
