"""Accuracy logs in a submission: sha256 recorded in accuracy.txt, the log cut to its head and tail.

The result is the same as tools/submission/truncate_accuracy_log.py produces: `hash=<sha256>` appended
to accuracy.txt, and the JSON replaced by its first and last 4096 characters joined by `\\n\\n...\\n\\n`.
Both files are written to temporary names and renamed, so a failure leaves the originals.
"""

from __future__ import annotations

import os
import re

from .errors import SubmissionError
from .logs import HASH_PATTERN
from .spec import VIEWABLE_SIZE


from ..files import sha256_file as sha256_of  # noqa: E402
from ..files import write_atomic as _write_atomic  # noqa: E402


def truncated_text(path: str) -> str | None:
    """The truncated form of the log at `path`, or None when it is short enough to keep whole."""
    size = os.stat(path).st_size
    if size < VIEWABLE_SIZE:
        return None
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return text[:VIEWABLE_SIZE] + "\n\n...\n\n" + text[-VIEWABLE_SIZE:]


def recorded_hash(accuracy_txt: str) -> str | None:
    with open(accuracy_txt, encoding="utf-8") as f:
        for line in f:
            m = re.match(HASH_PATTERN, line.rstrip("\n"))
            if m:
                return m.group(1)
    return None


def truncate_with_hash(accuracy_dir: str) -> str:
    """Record the log's hash in accuracy.txt (or check the one there) and truncate the log. Returns the hash."""
    log_path = os.path.join(accuracy_dir, "mlperf_log_accuracy.json")
    txt_path = os.path.join(accuracy_dir, "accuracy.txt")
    for p in (log_path, txt_path):
        if not os.path.isfile(p):
            raise SubmissionError(p, "is missing", "run the accuracy mode and process-mlperf-accuracy first")
    digest = sha256_of(log_path)
    existing = recorded_hash(txt_path)
    if existing and existing != digest:
        raise SubmissionError(txt_path, f"records hash={existing} but mlperf_log_accuracy.json hashes to {digest}",
                              "the log was changed or truncated after scoring; score the untruncated log again")
    if not existing:
        with open(txt_path, encoding="utf-8") as f:
            text = f.read()
        _write_atomic(txt_path, text + f"\nhash={digest}\n")
    cut = truncated_text(log_path)
    if cut is not None:
        _write_atomic(log_path, cut)
    return digest
