"""What a test's plots show, from the harness's query_timings.json (harness/run.py): each answered
query's TTFT and TPOT as LoadGen defines them (TPOT: the time after the first token over the tokens
after it), and the output tokens/s over the run."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

from ..harness.results import TIMINGS_FILE


class TimingsError(ValueError):
    pass


@dataclass(frozen=True)
class Timings:
    ttft_ms: tuple[float, ...]             # queries with a first token (every scenario but Offline)
    tpot_ms: tuple[float, ...]             # ... and more than one token
    rate_t_s: tuple[float, ...]            # tokens/s over the run: the middle of each window,
    rate_tokens_per_s: tuple[float, ...]   # and the output tokens/s in it
    queries: int


def load(test_dir: str, windows: int = 40) -> Timings | None:
    """The test's timings (None when the test has no query_timings.json: made before it existed)."""
    path = os.path.join(test_dir, TIMINGS_FILE)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            rows = json.load(f)["queries"]
        rows = [(float(a), None if t is None else float(t), float(c), int(n)) for a, t, c, n in rows]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise TimingsError(f"{path} is not a query timings file ({e}); fix: rerun the test, or delete it "
                           "to build the page without its plots") from None
    ttft = tuple((t - a) * 1e3 for a, t, _, _ in rows if t is not None)
    tpot = tuple((c - t) * 1e3 / (n - 1) for _, t, c, n in rows if t is not None and n > 1)
    times, rates = _rate(rows, windows)
    return Timings(ttft, tpot, times, rates, len(rows))


def _rate(rows, windows: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Output tokens/s in `windows` equal windows of the run: each query's tokens spread evenly
    from its first token (its issue, without one) to its end."""
    if not rows:
        return (), ()
    end = max(c for _, _, c, _ in rows)
    if not end > 0:
        return (), ()
    width = end / windows
    tokens = [0.0] * windows
    for a, t, c, n in rows:
        start = a if t is None else t
        span = max(c - start, 1e-9)
        for w in range(int(start // width), min(windows, int(c // width) + 1)):
            lo, hi = max(start, w * width), min(c, (w + 1) * width)
            if hi > lo:
                tokens[w] += n * (hi - lo) / span
    return (tuple(round((w + 0.5) * width, 3) for w in range(windows)),
            tuple(round(x / width, 2) for x in tokens))
