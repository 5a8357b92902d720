"""File helpers every area uses: a content hash, and writing without ever leaving a half file (the
contract's `cmcontract/publish.py`, under the names the library calls it by)."""
from __future__ import annotations

import hashlib

from cmcontract.publish import write_json as write_json_atomic  # noqa: F401
from cmcontract.publish import write_text as write_atomic  # noqa: F401


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
