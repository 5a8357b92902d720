"""git as this tool runs it: a subprocess that never stops to ask for credentials
(GIT_TERMINAL_PROMPT=0), its output captured. A missing git raises FileNotFoundError and one past its
time subprocess.TimeoutExpired: each caller says what to do instead, in its own terms."""
from __future__ import annotations

import os
import subprocess


def run_git(args: list[str], cwd: str | None = None, timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, GIT_TERMINAL_PROMPT="0"))
