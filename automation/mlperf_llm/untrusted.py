"""Bounds on what comes from outside: a submission tarball, a folder fetched from a results repository
or given by path. Each is someone else's, so it is checked before anything of it is used: an
archive's members are counted and summed against limits (raised with an input, never silently),
unpacked into a fresh folder that takes its place only when whole; a folder may hold no link that
leads out of it; a file is read only up to a size. Every refusal names the member or file, and the
limit or reason."""
from __future__ import annotations

import gzip
import os
import shutil
import tarfile
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

GIB = 1024 ** 3
MAX_BYTES = 4 * GIB          # a submission's logs, its accuracy logs included, fit many times over
MAX_MEMBERS = 200_000
MAX_READ_BYTES = 64 * 1024 * 1024     # one log or JSON of a submission; larger is not one we read


class UntrustedError(Exception):
    """Input from outside refused: which member or file, why, and the fix."""


@dataclass(frozen=True)
class Limits:
    max_bytes: int = MAX_BYTES
    max_members: int = MAX_MEMBERS

    def describe(self) -> str:
        return f"{self.max_bytes / GIB:g} GiB and {self.max_members:,} members"


RAISE = "--max_archive_gib=N and --max_archive_members=N raise the limits if you trust it"
# what reading a truncated or corrupt archive raises (tarfile, gzip and zlib each their own)
CORRUPT = (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile)


def unpack(tarball: str, dest: str, limits: Limits = Limits()) -> None:
    """The archive's plain files and folders, inside it, within the limits, into `dest` (which must
    not exist): unpacked into a temporary folder beside it, renamed to `dest` when whole."""
    if os.path.exists(dest):
        raise UntrustedError(f"{dest} exists already: an archive is unpacked into a fresh folder only")
    try:
        tar = tarfile.open(tarball)
    except (*CORRUPT, OSError) as e:
        raise UntrustedError(f"{tarball}: not a readable tarball ({e})") from None
    with tar:
        try:
            members = _checked_members(tar, tarball, limits)
        except (*CORRUPT, OSError) as e:      # reading headers only: nothing written
            raise UntrustedError(f"{tarball}: not a readable tarball (truncated or corrupt: {e})") from None
        parent = os.path.dirname(os.path.abspath(dest))
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".unpack-", dir=parent)
        try:
            # members are checked above; the "data" filter (Python >= 3.11.4) checks them again
            extra = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            tar.extractall(tmp, members=members, **extra)
            os.rename(tmp, dest)
        except CORRUPT as e:
            shutil.rmtree(tmp, ignore_errors=True)
            raise UntrustedError(f"{tarball}: not a readable tarball (truncated or corrupt: {e})") from None
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def _checked_members(tar: tarfile.TarFile, tarball: str, limits: Limits) -> list:
    """The archive's members, each a plain file or folder inside it, within the limits."""
    members, total = [], 0
    for m in tar:                   # read member by member: a bomb of headers stops at the count
        name = os.path.normpath(m.name)
        if name.startswith(("..", "/")) or os.path.isabs(name) or not (m.isfile() or m.isdir()):
            raise UntrustedError(f"{tarball}: member {m.name!r} is not a plain file or folder inside the "
                                 "archive (a link, a device, or a path out of it); refusing to unpack it")
        total += m.size
        if len(members) + 1 > limits.max_members:
            raise UntrustedError(f"{tarball}: more than {limits.max_members:,} members (at {m.name!r}); "
                                 f"refusing to unpack it ({RAISE})")
        if total > limits.max_bytes:
            raise UntrustedError(f"{tarball}: more than {limits.max_bytes / GIB:g} GiB unpacked (at member "
                                 f"{m.name!r}, {total / GIB:.2f} GiB so far); refusing to unpack it ({RAISE})")
        members.append(m)
    return members


def check_folder(folder: str, limits: Limits = Limits()) -> None:
    """A folder from outside: no link that leads out of it, and no more files than an archive may
    hold. Links inside it (a published folder's own) are kept."""
    root = os.path.realpath(folder)
    count = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            count += 1
            if count > limits.max_members:
                raise UntrustedError(f"{folder}: more than {limits.max_members:,} files and folders; refusing "
                                     f"to read it ({RAISE})")
            if os.path.islink(path) and not inside(path, root):
                raise UntrustedError(f"{path}: a link to {os.readlink(path)}, out of {folder}: a submission's "
                                     "files are inside it; refusing to read it (copy the folder without links, "
                                     "`cp -rL`, if the target is yours)")


def inside(path: str, root: str) -> bool:
    """`path`, links resolved, is `root` or below it (root already resolved)."""
    target = os.path.realpath(path)
    return target == root or target.startswith(root.rstrip(os.sep) + os.sep)


def read_capped(path: Path, root: Path, limit: int | None = None) -> bytes:
    """A file of a folder from outside, read only when it is inside `root` (links resolved) and at
    most `limit` bytes (MAX_READ_BYTES)."""
    limit = MAX_READ_BYTES if limit is None else limit
    if not inside(str(path), os.path.realpath(root)):
        raise UntrustedError(f"{path}: leads out of {root} (a link): not read")
    size = path.stat().st_size
    if size > limit:
        raise UntrustedError(f"{path}: {size:,} bytes, more than the {limit:,} read of one file: not read")
    with open(path, "rb") as f:
        return f.read(limit + 1)[:limit]
