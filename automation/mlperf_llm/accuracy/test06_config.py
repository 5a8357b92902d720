"""TEST06's audit.config: from the inference source when it is at hand, else written by us.

The inference source keeps it at compliance/nvidia/TEST06/audit.config (v4.1 .. v5.1; later
trees at compliance/TEST06/). Without a source (offline, no clone) the same settings are written
from the values below, which are those of v5.1's file, and the origin says so.
"""
from __future__ import annotations

import os
import shutil
from typing import Tuple

from cmcontract.publish import staged_file, write_text

CANDIDATES = ("compliance/nvidia/TEST06/audit.config", "compliance/TEST06/audit.config")

# TEST06 settings (mlcommons/inference v5.1 compliance/nvidia/TEST06/audit.config)
TEST06_SETTINGS = (
    ("*.*.mode", "2"),
    ("*.*.accuracy_log_rng_seed", "720381539243781796"),
    ("*.*.accuracy_log_sampling_target", "100"),
    ("*.*.min_query_count", "100"),
    ("*.*.min_duration", "0"),
    ("*.*.sample_concatenate_permutation", "0"),
)


class AuditConfigError(ValueError):
    pass


def find_in_source(source: str) -> str:
    for relative in CANDIDATES:
        path = os.path.join(source, relative)
        if os.path.isfile(path):
            return path
    raise AuditConfigError(f"no TEST06 audit.config under inference source {source} (looked for "
                           f"{', '.join(CANDIDATES)}): is it an mlcommons/inference checkout?")


def render_settings() -> str:
    lines = ["# TEST06 (llama2): written by mlperf_llm.accuracy, values of mlcommons/inference v5.1",
             "# compliance/nvidia/TEST06/audit.config"]
    lines += [f"{key} = {value}" for key, value in TEST06_SETTINGS]
    return "\n".join(lines) + "\n"


def audit_config(source: str, output_dir: str) -> Tuple[str, str]:
    """(path of audit.config inside output_dir, where it came from)."""
    os.makedirs(output_dir, exist_ok=True)
    target = os.path.join(output_dir, "audit.config")
    if source:
        origin_path = find_in_source(source)
        with staged_file(target) as tmp:
            shutil.copyfile(origin_path, tmp)
        origin = f"audit.config from the inference source: {origin_path}"
    else:
        write_text(target, render_settings())
        origin = ("no inference source given: audit.config written with TEST06's settings of "
                  "mlcommons/inference v5.1")
    return target, origin
