"""MLPerf Inference rounds: which LoadGen series and which inference source tag belong to each.

Each round's checker demands that round's RNG seeds, and LoadGen carries them (built in from 5.0;
in 4.1 they come from the round's mlperf.conf), so LoadGen is pinned to the round's series.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from cmengine.versions import compare


@dataclass(frozen=True)
class Round:
    name: str              # "v5.1"
    loadgen_series: str    # "5.1" -> mlcommons-loadgen 5.1.x
    loadgen_min: str       # the 5.x wheels whose built-in mlperf.conf has this round's seeds
    loadgen_max: str
    src_tag: str           # git tag of mlcommons/inference
    qsl_rng_seed: int      # what the round's mlperf.conf sets (REFERENCE.md section 4)
    mlperf_conf_builtin: bool


# Measured 2026-11-22 (FromConfig with an empty user.conf, llama2-70b Offline) on every wheel of PyPI:
#   5.0.0-5.0.7 carry the v4.1 seed, 5.0.8 an unreleased one, 5.0.9-5.0.21 the v5.0 seed and
#   5.0.22-5.0.25 the v5.1 seed; 5.1.0-5.1.2 the v5.1 seed. 4.1.x reads the round's mlperf.conf.
ROUNDS = {
    "4.1": Round("v4.1", "4.1", "4.1.0", "4.1.999", "v4.1", 3066443479025735752, False),
    "5.0": Round("v5.0", "5.0", "5.0.9", "5.0.21", "v5.0", 6023615788873153749, True),
    "5.1": Round("v5.1", "5.1", "5.1.0", "5.1.999", "v5.1", 1780908523862526354, True),
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
import os, sys, tempfile, mlperf_loadgen as lg
conf, builtin = sys.argv[1], sys.argv[2] == "1"
s = lg.TestSettings()
with tempfile.TemporaryDirectory() as d:
    os.chdir(d)
    user = os.path.join(d, "user.conf"); open(user, "w").close()
    rc = s.FromConfig(user, "llama2-70b", "Offline") if builtin else s.FromConfig(conf, "llama2-70b", "Offline")
print(rc, s.qsl_rng_seed)
"""


def loadgen_seed(python: str, rnd: Round, mlperf_conf: str = "") -> int:
    """The qsl_rng_seed the installed LoadGen applies for llama2-70b (needs mlperf_conf before 5.0)."""
    if not rnd.mlperf_conf_builtin and not mlperf_conf:
        raise RoundError(f"{rnd.name}: LoadGen has no built-in mlperf.conf; pass the round's mlperf.conf")
    res = subprocess.run([python, "-c", _SEED_PROBE, mlperf_conf, "1" if rnd.mlperf_conf_builtin else "0"],
                         capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        raise RoundError(f"could not read LoadGen's settings with {python}: {res.stderr.strip()[-500:]}")
    rc, seed = res.stdout.split()[-2:]
    if rc != "0":
        raise RoundError(f"LoadGen FromConfig returned {rc} while reading the {rnd.name} settings")
    return int(seed)
