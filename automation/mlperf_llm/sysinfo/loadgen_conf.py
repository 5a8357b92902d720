"""The mlperf.conf beside a LoadGen built from source: where the build puts it, where the harness
finds it.

The PyPI wheels carry their round's mlperf.conf inside. LoadGen built from the v4.1 source has none
(get-mlperf-inference-loadgen `_test06`, mlperf_llm.sysinfo.loadgen_src), so the build puts the
source's mlperf.conf next to the module under CONF_BESIDE, and the harness reads it before user.conf,
as v4.1's main.py does. Standard library only: the harness process imports it.
"""
from __future__ import annotations

import importlib.util
import os

CONF_BESIDE = "mlperf_loadgen.mlperf.conf"


def conf_beside_loadgen() -> str:
    """The mlperf.conf the LoadGen this process would import must read before user.conf: CONF_BESIDE
    next to `mlperf_loadgen` ("" for a wheel, which carries its own)."""
    spec = importlib.util.find_spec("mlperf_loadgen")
    if spec is None or not spec.origin:
        return ""
    path = os.path.join(os.path.dirname(spec.origin), CONF_BESIDE)
    return path if os.path.isfile(path) else ""
