"""File helpers every area uses: a content hash, and writing without ever leaving a half file."""
from __future__ import annotations

import hashlib
import json
import os
import tempfile


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_atomic(path: str, text: str) -> None:
    """Write to a temporary file beside `path`, then rename: never a half-written file."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(path), dir=directory)
    try:
        os.chmod(tmp, 0o644)   # readable like any other result file (mkstemp makes it 0600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json_atomic(path: str, data, indent: int | None = 2, sort_keys: bool = False) -> None:
    """`data` as JSON (and a final newline) through write_atomic. A value JSON cannot hold fails
    before any file is touched."""
    write_atomic(path, json.dumps(data, indent=indent, sort_keys=sort_keys) + "\n")
