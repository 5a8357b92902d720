"""The audit.config of TEST07 and TEST09 (gpt-oss-120b's compliance tests), from the round's source.

Both are LoadGen performance runs with the test's audit.config in the test's folder: TEST07 on the
benchmark's GPQA compliance set (`compliance/TEST07/<benchmark>/audit.config`: 990 queries, every
sample's answer logged, the accuracy threshold), TEST09 on the performance set
(`compliance/TEST09/<benchmark>/audit.config`: 6,396 queries, the output-length bounds). A valid run
takes the file as it is. A test run is shortened: its query count and logged samples become the
test's own, per scenario (`*.<Scenario>.min_query_count`), and the file says so in a comment; the
thresholds stay, and the verification reads them from the round's own file anyway
(compliance_verify.py), never from this copy.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cmcontract.publish import write_text

TESTS = ("TEST07", "TEST09")
SHORTENED = ("min_query_count", "accuracy_log_sampling_target")


class AuditError(ValueError):
    """The round's source lacks the test: names the file and the fix."""


@dataclass(frozen=True)
class Audit:
    test: str
    path: Path              # the copy the run reads (<audit_dir>/<test>/audit.config)
    source: Path            # the round's file
    counts: dict            # scenario -> queries (a test run); {} for the official count


def source_file(inference_src: str | Path, test: str, benchmark: str) -> Path:
    path = Path(inference_src) / "compliance" / test / benchmark / "audit.config"
    if not path.is_file():
        raise AuditError(f"{test} for {benchmark}: {path} is missing: the inference source {inference_src} has no "
                         f"{test} for it; fix: --inference_src=DIR, a checkout that has it (master b66003e for "
                         "v6.0 and v6.1)")
    return path


def shortened(text: str, counts: dict) -> str:
    """The file with its query count and logged samples replaced by each scenario's count."""
    drop = {f"*.*.{k}" for k in SHORTENED}
    lines = [line for line in text.splitlines() if line.split("=", 1)[0].strip() not in drop]
    lines.append("# test mode: query count and logged samples shortened by cm4mlperf-llm (not for a submission)")
    for scenario, n in counts.items():
        lines += [f"*.{scenario}.{key} = {n}" for key in SHORTENED]
    return "\n".join(lines) + "\n"


def write_audits(inference_src: str | Path, benchmark: str, audit_dir: str | Path,
                 counts: dict[str, dict] | None = None) -> list[Audit]:
    """<audit_dir>/<TEST>/audit.config for TEST07 and TEST09; `counts` (test -> scenario -> queries)
    shortens a test run's, None keeps the official files."""
    out = []
    for test in TESTS:
        source = source_file(inference_src, test, benchmark)
        text = source.read_text(encoding="utf-8")
        mine = (counts or {}).get(test) or {}
        path = Path(audit_dir) / test / "audit.config"
        write_text(str(path), shortened(text, mine) if mine else text)
        out.append(Audit(test, path, source, dict(mine)))
    return out
