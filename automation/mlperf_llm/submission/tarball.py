"""A tarball of the submission, ready to upload, with its SHA-1 beside it (as pack_submission.sh makes).

The archive is reproducible: entries sorted, owner root, fixed mtime, gzip header without time or name,
so the same tree gives the same bytes. It is written to a temporary name and renamed.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tarfile
from dataclasses import dataclass

from cmcontract.publish import staged_file

from ..benchmarks import DIVISIONS
from .errors import SubmissionError
from .rules import find_violations

FIXED_MTIME = 1700000000


@dataclass
class Tarball:
    path: str
    sha1: str
    sha1_path: str
    members: int
    size: int


def _normalize(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mtime = FIXED_MTIME
    info.mode = 0o755 if info.isdir() else 0o644
    return info


def _add_file(tar: tarfile.TarFile, path: str, arcname: str) -> int:
    with open(path, "rb") as f:
        tar.addfile(_normalize(tar.gettarinfo(path, arcname)), f)
    return 1


def tarball_path(submission_dir: str, submitter: str, out_dir: str | None = None) -> str:
    """Where pack() writes the tarball of `submission_dir`'s tree for `submitter`: beside the tree."""
    root = os.path.abspath(submission_dir)
    return os.path.join(os.path.abspath(out_dir or os.path.dirname(root)), f"{os.path.basename(root)}_{submitter}.tar.gz")


def pack(submission_dir: str, submitter: str, out_dir: str | None = None) -> Tarball:
    """Pack the division folders of `submission_dir` (and its README.md) as <its name>_<submitter>.tar.gz
    (mlperf_submission_<submitter>.tar.gz for the default folder), with its .sha1: named after the tree, so
    two submissions made in one folder each keep their own."""
    root = os.path.abspath(submission_dir)
    violations = find_violations(root)
    if violations:
        raise SubmissionError(f"submission tree {root}", "breaks the submission rules: " +
                              "; ".join(map(str, violations[:10])), "rebuild it; never edit it by hand")
    out_dir = os.path.abspath(out_dir or os.path.dirname(root))
    if out_dir == root or out_dir.startswith(root + os.sep):
        raise SubmissionError(f"tarball folder {out_dir}", "is inside the tree it packs",
                              "write the tarball next to the tree")
    os.makedirs(out_dir, exist_ok=True)
    path = tarball_path(root, submitter, out_dir)
    stem = os.path.basename(path)[:-len(".tar.gz")]
    entries = sorted(n for n in os.listdir(root) if n in (*DIVISIONS, "README.md"))
    if not any(n in entries for n in DIVISIONS):
        raise SubmissionError(f"submission tree {root}", "has no closed/, open/ or network/ folder",
                              "build the tree first")
    members = 0
    with staged_file(path) as tmp:
        with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz, \
                tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for top in entries:
                top_path = os.path.join(root, top)
                if os.path.isfile(top_path):
                    members += _add_file(tar, top_path, top)
                    continue
                for dirpath, dirnames, filenames in os.walk(top_path):
                    dirnames.sort()
                    rel = os.path.relpath(dirpath, root)
                    tar.addfile(_normalize(tar.gettarinfo(dirpath, rel)))
                    members += 1
                    for name in sorted(filenames):
                        members += _add_file(tar, os.path.join(dirpath, name), os.path.join(rel, name))
    h = hashlib.sha1()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    sha1_path = os.path.join(out_dir, f"{stem}.sha1")
    with open(sha1_path, "w", encoding="utf-8") as f:
        f.write(f"{h.hexdigest()}  {os.path.basename(path)}\n")
    return Tarball(path, h.hexdigest(), sha1_path, members, os.path.getsize(path))
