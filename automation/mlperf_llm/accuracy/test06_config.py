"""TEST06's audit.config: from the inference source when it is at hand, else written with the
settings of the run's round.

A round's source keeps it in the round's `test06_dir` (mlperf_llm.rounds: compliance/nvidia/TEST06
in v4.1 and v5.0, compliance/TEST06 from v5.1 on); a checkout of another revision is searched in
both places. Without a source (offline, no clone) the round's settings are written, and the origin
names the round and the file they come from.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Tuple

from cmcontract.publish import write_text

from ..rounds import Round

CANDIDATES = ("compliance/nvidia/TEST06/audit.config", "compliance/TEST06/audit.config")

# TEST06's audit.config. The file is the same in the source of every round this tool runs (v4.1,
# v5.0, v5.1.1, master b66003e); tests/unit/accuracy/test_test06_config.py compares each round's
# copy in ../shared/mlcommons-inference with it. A round whose file differs needs its own table.
OFFICIAL_QUERY_COUNT = 100     # the queries (and logged samples) of a submission's TEST06
TEST06_SETTINGS = (
    ("*.*.mode", "2"),
    ("*.*.accuracy_log_rng_seed", "720381539243781796"),
    ("*.*.accuracy_log_sampling_target", str(OFFICIAL_QUERY_COUNT)),
    ("*.*.min_query_count", str(OFFICIAL_QUERY_COUNT)),
    ("*.*.min_duration", "0"),
    ("*.*.sample_concatenate_permutation", "0"),
)


class AuditConfigError(ValueError):
    pass


@dataclass(frozen=True)
class Test06Settings:
    rnd: Round
    settings: Tuple[Tuple[str, str], ...]

    @property
    def origin(self) -> str:
        """'round v6.0: mlcommons/inference commit b66003e, compliance/TEST06/audit.config'."""
        ref = f"commit {self.rnd.src_ref[:7]}" if self.rnd.src_is_commit else self.rnd.src_ref
        return f"round v{self.rnd.name}: mlcommons/inference {ref}, {self.rnd.test06_dir}/audit.config"

    def text(self) -> str:
        lines = [f"# TEST06 (llama2): written by mlperf_llm.accuracy with the settings of {self.origin}"]
        lines += [f"{key} = {value}" for key, value in self.settings]
        return "\n".join(lines) + "\n"


def settings_of(rnd: Round) -> Test06Settings:
    return Test06Settings(rnd, TEST06_SETTINGS)


def find_in_source(source: str, rnd: Round | None = None) -> str:
    """audit.config in the source: the round's folder first, then the other layout."""
    first = (f"{rnd.test06_dir}/audit.config",) if rnd else ()
    candidates = first + tuple(c for c in CANDIDATES if c not in first)
    for relative in candidates:
        path = os.path.join(source, relative)
        if os.path.isfile(path):
            return path
    raise AuditConfigError(f"no TEST06 audit.config under inference source {source} (looked for "
                           f"{', '.join(candidates)}): is it an mlcommons/inference checkout?")


SHORTENED_KEYS = ("min_query_count", "accuracy_log_sampling_target")   # under *.* (or *.<Scenario>.)


def shortened(text: str, query_count: int) -> str:
    """audit.config with TEST06's 100 queries (and 100 logged samples) replaced by query_count: a
    test run's short TEST06 (--test06_query_count), never a submission's."""
    keys = [f"*.*.{k}" for k in SHORTENED_KEYS]
    lines = [line for line in text.splitlines() if line.split("=", 1)[0].strip() not in keys]
    lines.append(f"# test mode: shortened to {query_count} queries by --test06_query_count (not for a submission)")
    lines += [f"{key} = {query_count}" for key in keys]
    return "\n".join(lines) + "\n"


def sized(text: str, counts: dict[str, int], why: str = "sized to this host") -> str:
    """audit.config with each scenario's TEST06 shortened to its count (LoadGen takes a
    `*.<Scenario>.` key before `*.*.`): a test run sized to the host (harness/sizing.py)."""
    lines = text.rstrip("\n").splitlines()
    lines.append(f"# test mode: {why}, per scenario (not for a submission)")
    for scenario, n in counts.items():
        lines += [f"*.{scenario}.{k} = {n}" for k in SHORTENED_KEYS]
    return "\n".join(lines) + "\n"


def query_count_of(path: str, scenario: str) -> int | None:
    """The queries TEST06 issues for scenario under the audit.config at path (its `*.<Scenario>.` key,
    else `*.*.`); None when the file cannot be read or has neither."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    values = {}
    for line in text.splitlines():
        key, eq, value = line.partition("=")
        if eq and value.strip().isdigit():
            values[key.strip()] = int(value.strip())
    for key in (f"*.{scenario}.min_query_count", "*.*.min_query_count"):
        if key in values:
            return values[key]
    return None


def short_query_count(value: str, execution_mode: str) -> int | None:
    """--test06_query_count: a positive whole number, for test runs only (None when not given)."""
    if not str(value or "").strip():
        return None
    text = str(value).strip()
    if not text.isdigit() or int(text) < 1:
        raise AuditConfigError(f"--test06_query_count={value!r} is not a positive whole number of queries "
                               "(TEST06's official count is 100)")
    if execution_mode == "valid":
        raise AuditConfigError(f"--test06_query_count={text} shortens TEST06 and is for test runs only: drop it "
                               "for --execution_mode=valid (a submission's TEST06 issues the official 100 queries)")
    return int(text)


def audit_config(source: str, output_dir: str, rnd: Round, query_count: int | None = None,
                 counts: dict[str, int] | None = None, counts_why: str = "sized to this host") -> Tuple[str, str]:
    """(path of audit.config inside output_dir, where it came from); with query_count, TEST06 is
    shortened to that many queries (test mode); with counts, each scenario's to its own (a test run
    sized to the host, or sizes given by --test_sizes: counts_why says which)."""
    os.makedirs(output_dir, exist_ok=True)
    target = os.path.join(output_dir, "audit.config")
    if source:
        origin_path = find_in_source(source, rnd)
        with open(origin_path, encoding="utf-8") as f:
            text = f.read()
        origin = f"audit.config from the inference source: {origin_path}"
    else:
        settings = settings_of(rnd)
        text = settings.text()
        origin = f"no inference source given: audit.config written with TEST06's settings of {settings.origin}"
    if query_count:
        text = shortened(text, query_count)
        origin += f"; shortened to {query_count} queries (--test06_query_count, test mode)"
    elif counts:
        text = sized(text, counts, counts_why)
        origin += (f"; {counts_why}: " + ", ".join(f"{s} {n} queries" for s, n in counts.items())
                   + " (test mode; --test06_query_count=N for a fixed count)")
    write_text(target, text)
    return target, origin
