"""MLPerf Inference rounds: which LoadGen wheels and which inference source tag belong to each.

Each round's checker demands that round's RNG seeds. LoadGen wheels carry an mlperf.conf built in
(a user.conf cannot override its seeds), so LoadGen is pinned to the wheels whose built-in seeds are
the round's, and the installed wheel is checked by asking it.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from cmengine.versions import compare

from .pyenv import with_path


@dataclass(frozen=True)
class Round:
    name: str              # "v5.1"
    loadgen_min: str       # the wheels whose built-in mlperf.conf has this round's seeds
    loadgen_max: str
    src_tag: str           # git tag of mlcommons/inference
    qsl_rng_seed: int      # what the round's mlperf.conf sets (REFERENCE.md section 4)


# Measured 2026-11-22 on the PyPI wheels (FromConfig with an empty user.conf, llama2-70b Offline):
#   4.1.7 has no built-in mlperf.conf (seed 0); 4.1.12-4.1.30 carry the v4.1 seed;
#   5.0.0-5.0.7 the v4.1 seed, 5.0.8 an unreleased one, 5.0.9-5.0.21 the v5.0 seed,
#   5.0.22-5.0.25 the v5.1 seed; 5.1.0-5.1.2 the v5.1 seed; 6.0.x another one.
ROUNDS = {
    "4.1": Round("v4.1", "4.1.12", "4.1.30", "v4.1", 3066443479025735752),
    "5.0": Round("v5.0", "5.0.9", "5.0.21", "v5.0", 6023615788873153749),
    "5.1": Round("v5.1", "5.1.0", "5.1.999", "v5.1", 1780908523862526354),
}


class RoundError(ValueError):
    pass


def round_info(text: str) -> Round:
    """"r5.1", "v5.1", "5.1" -> Round."""
    key = re.sub(r"^[rv]", "", (text or "").strip().lower())
    if key not in ROUNDS:
        known = ", ".join(f"_r{k}" for k in ROUNDS)
        raise RoundError(f"round {text!r} is not supported; use one of {known}")
    return ROUNDS[key]


def in_range(version: str, rnd: Round) -> bool:
    return bool(version) and compare(version, rnd.loadgen_min) >= 0 and compare(version, rnd.loadgen_max) <= 0


_SEED_PROBE = """
import os, tempfile, mlperf_loadgen as lg
s = lg.TestSettings()
with tempfile.TemporaryDirectory() as d:
    os.chdir(d)
    open("user.conf", "w").close()
    rc = s.FromConfig(os.path.join(d, "user.conf"), "llama2-70b", "Offline")
print(rc, s.qsl_rng_seed)
"""


def loadgen_seed(python: str, path: str = "") -> int:
    """The qsl_rng_seed the LoadGen that `python` imports (with `path` first on PYTHONPATH) applies
    for llama2-70b from its built-in mlperf.conf (0 when the wheel has none)."""
    res = subprocess.run([python, "-c", _SEED_PROBE], capture_output=True, text=True, timeout=120,
                         env=with_path(path))
    if res.returncode != 0:
        raise RoundError(f"could not read LoadGen's settings with {python}: {res.stderr.strip()[-500:]}")
    rc, seed = res.stdout.split()[-2:]
    if rc != "0":
        raise RoundError(f"LoadGen FromConfig returned {rc} while reading its built-in mlperf.conf")
    return int(seed)
