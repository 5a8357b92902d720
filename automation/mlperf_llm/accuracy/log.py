"""Reading LoadGen's mlperf_log_accuracy.json.

Each entry is `{"seq_id", "qsl_idx", "data": <hex of the response buffer>}` and, with
`use_token_latencies`, also `"token_data"` (the first-token buffer) and `"token_count"`.
The SUT writes token ids as int32 (as the reference vLLM SUT and TEST06's verifier expect).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Dict, List, Optional

import numpy as np

DTYPES = {"int32": np.int32, "int64": np.int64, "int16": np.int16, "float32": np.float32}


class AccuracyLogError(ValueError):
    pass


@dataclass(frozen=True)
class LogEntry:
    qsl_idx: int
    seq_id: Optional[int]
    token_ids: np.ndarray                 # decoded `data`
    first_tokens: Optional[np.ndarray]    # decoded `token_data`, if logged
    token_count: Optional[int]            # `token_count`, if logged


def decode_hex(hex_data: str, dtype: str = "int32") -> np.ndarray:
    if dtype not in DTYPES:
        raise AccuracyLogError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}")
    raw = bytes.fromhex(hex_data)
    size = np.dtype(DTYPES[dtype]).itemsize
    if len(raw) % size:
        raise AccuracyLogError(f"{len(raw)} bytes is not a whole number of {dtype} values: "
                               f"is the log written with another --dtype?")
    return np.frombuffer(raw, DTYPES[dtype])


def read_log(path: str) -> List[dict]:
    """The raw entries; a clear error for a missing, empty or truncated log."""
    if not os.path.isfile(path):
        raise AccuracyLogError(f"accuracy log {path} does not exist: run the benchmark in "
                               f"AccuracyOnly mode first (it writes mlperf_log_accuracy.json)")
    try:
        with open(path, encoding="utf-8") as f:
            entries = json.load(f)
    except json.JSONDecodeError as e:
        raise AccuracyLogError(f"accuracy log {path} is not valid JSON ({e}); a truncated log "
                               f"(as in a submission tree) cannot be scored: use the full log") from e
    if not isinstance(entries, list):
        raise AccuracyLogError(f"accuracy log {path} is not a JSON list of LoadGen entries")
    return entries


def parse_entry(raw: dict, dtype: str = "int32") -> LogEntry:
    try:
        token_data = raw.get("token_data")
        count = raw.get("token_count")
        return LogEntry(
            qsl_idx=int(raw["qsl_idx"]),
            seq_id=raw.get("seq_id"),
            token_ids=decode_hex(raw["data"], dtype),
            first_tokens=decode_hex(token_data, dtype) if token_data is not None else None,
            token_count=int(count) if count is not None else None,
        )
    except (KeyError, TypeError) as e:
        raise AccuracyLogError(f"malformed accuracy log entry {str(raw)[:120]}: missing {e}") from e


def first_per_sample(path: str, dtype: str = "int32") -> List[LogEntry]:
    """The first entry per qsl_idx, in log order (the reference keeps exactly these)."""
    seen: Dict[int, None] = {}
    out = []
    for raw in read_log(path):
        entry = parse_entry(raw, dtype)
        if entry.qsl_idx in seen:
            continue
        seen[entry.qsl_idx] = None
        out.append(entry)
    return out


def encode_ids(token_ids, dtype: str = "int32") -> str:
    """Hex of a response buffer as LoadGen logs it (for tests and fixtures)."""
    return np.asarray(token_ids, dtype=DTYPES[dtype]).tobytes().hex().upper()
