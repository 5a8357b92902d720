"""Where the engine keeps its cache: `$CM4MLPERF_CACHE_DIR`, else `$CM_REPOS/cm4mlperf-llm-cache`
(`~/CM/cm4mlperf-llm-cache` without CM_REPOS). The library keeps its own memos there too."""
from __future__ import annotations

import os


def cache_root() -> str:
    explicit = os.environ.get("CM4MLPERF_CACHE_DIR", "").strip()
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    repos = os.environ.get("CM_REPOS", "").strip() or os.path.join(os.path.expanduser("~"), "CM")
    return os.path.join(repos, "cm4mlperf-llm-cache")
