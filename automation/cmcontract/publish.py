"""Putting a file or a folder in place whole: a reader sees the old one or the new one, never a half.

Everything is built under a temporary name beside its destination (same file system, so the final
rename is atomic) and renamed into place only when complete; a failure removes the temporary.
A folder that replaces another is swapped in by renames: the old one is renamed aside, the new
one renamed in, and only then is the old one removed (`rmtree` first would leave no folder, or
half of one, to a reader or to a run that stops there).
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def staged_file(path: str) -> Iterator[str]:
    """A temporary path beside `path` to write to; renamed to `path` when the block ends without an
    error, removed when it raises. The file is made readable like any other result (0644)."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        os.chmod(tmp, 0o644)   # mkstemp makes it 0600
        yield tmp
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def write_text(path: str, text: str) -> None:
    """`text` (UTF-8) at `path`, never half-written."""
    with staged_file(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)


def write_json(path: str, data, indent: int | None = 2, sort_keys: bool = False) -> None:
    """`data` as JSON and a final newline at `path`. A value JSON cannot hold fails before any
    file is touched."""
    write_text(path, json.dumps(data, indent=indent, sort_keys=sort_keys) + "\n")


def replace_dir(src: str, dest: str) -> None:
    """Put the complete folder `src` at `dest` (same file system), replacing any folder there:
    the old one is renamed aside, `src` renamed in, then the old one removed. If `src` cannot be
    renamed in, the old folder is put back and the error raised."""
    src, dest = os.fspath(src), os.fspath(dest)
    if not os.path.lexists(dest):
        os.rename(src, dest)
        return
    aside = tempfile.mkdtemp(prefix=f".{os.path.basename(dest)}.old-", dir=os.path.dirname(os.path.abspath(dest)))
    old = os.path.join(aside, "old")
    os.rename(dest, old)
    try:
        os.rename(src, dest)
    except BaseException:
        os.rename(old, dest)
        os.rmdir(aside)
        raise
    shutil.rmtree(aside, ignore_errors=True)
