"""Ask an installed LoadGen which seeds it applies.

Each round's checker demands that round's RNG seeds. LoadGen wheels carry an mlperf.conf built in
(a user.conf cannot override its seeds), so LoadGen is pinned to the wheels whose built-in seeds are
the round's (`mlperf_llm.rounds`), and the installed wheel is checked by asking it.
"""

from __future__ import annotations

import subprocess

from mlperf_llm.rounds import RoundError

from .pyenv import with_path

_SEED_PROBE = """
import os, sys, tempfile, mlperf_loadgen as lg
s = lg.TestSettings()
with tempfile.TemporaryDirectory() as d:
    os.chdir(d)
    if sys.argv[1]:
        s.FromConfig(sys.argv[1], "llama2-70b", "Offline")
    open("user.conf", "w").close()
    rc = s.FromConfig(os.path.join(d, "user.conf"), "llama2-70b", "Offline")
print(rc, s.qsl_rng_seed)
"""


def loadgen_seed(python: str, path: str = "", conf: str = "") -> int:
    """The qsl_rng_seed the LoadGen that `python` imports (with `path` first on PYTHONPATH) applies
    for llama2-70b from its built-in mlperf.conf (0 when the wheel has none), or from `conf` read
    first (a LoadGen built from source, which has none inside)."""
    res = subprocess.run([python, "-c", _SEED_PROBE, conf], capture_output=True, text=True, timeout=120,
                         env=with_path(path))
    if res.returncode != 0:
        raise RoundError(f"could not read LoadGen's settings with {python}: {res.stderr.strip()[-500:]}")
    rc, seed = res.stdout.split()[-2:]
    if rc != "0":
        raise RoundError(f"LoadGen FromConfig returned {rc} while reading its built-in mlperf.conf")
    return int(seed)
