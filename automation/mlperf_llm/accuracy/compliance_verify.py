"""TEST07 and TEST09 (gpt-oss-120b's compliance tests) verified by the round's own scripts.

The runs themselves are LoadGen performance runs with the test's audit.config (TEST07 on the GPQA
compliance set, TEST09 on the performance set); what makes their verdict is the round's
`compliance/TEST0N/run_verification.py` from the inference source, run here as it is, in a scratch
folder of its own (it writes its verify file into its working folder first):

- TEST09: the mean output length of the run's accuracy log within the audit.config's
  [test09_min_output_tokens, test09_max_output_tokens];
- TEST07: the accuracy (`'exact_match': X` printed by `accuracy_command`, run on the log) at least
  the audit.config's test07_accuracy_threshold.

Each writes `<output_dir>/TEST0N/verify_*.txt` (with `TEST PASS` or `TEST FAIL`, what the checker
looks for) and copies the logs beside it. A source without the test is an error naming the source
and the fix.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

VERIFY_FILES = {"TEST07": "verify_accuracy.txt", "TEST09": "verify_output_len.txt"}


class ComplianceError(ValueError):
    """A compliance test that cannot be verified: what is missing and the fix."""


@dataclass(frozen=True)
class Verified:
    test: str
    passed: bool
    verify_file: Path
    output_tail: str                 # the script's last lines, for the run's output


def _script_and_audit(inference_src: str | Path, test: str, benchmark: str) -> tuple[Path, Path]:
    folder = Path(inference_src) / "compliance" / test
    script, audit = folder / "run_verification.py", folder / benchmark / "audit.config"
    for path in (script, audit):
        if not path.is_file():
            raise ComplianceError(f"{test} for {benchmark}: {path} is missing: the inference source {inference_src} "
                                  f"has no {test} for it; fix: --inference_src=DIR, a checkout that has it "
                                  "(master b66003e for v6.0 and v6.1)")
    return script, audit


def _verify(test: str, argv: list[str], output_dir: Path, env: dict | None = None) -> Verified:
    with tempfile.TemporaryDirectory(prefix=f"cm4mlperf-{test.lower()}-") as scratch:
        proc = subprocess.run(argv, cwd=scratch, capture_output=True, text=True, env=env)
    text = (proc.stdout + proc.stderr).strip()
    verify = output_dir / test / VERIFY_FILES[test]
    if not verify.is_file():
        raise ComplianceError(f"{test}: the verification wrote no {verify.name} (exit {proc.returncode}): "
                              + "; ".join(text.splitlines()[-3:]))
    return Verified(test, "TEST PASS" in verify.read_text(errors="replace"), verify,
                    "\n".join(text.splitlines()[-6:]))


def verify_test09(inference_src: str | Path, benchmark: str, compliance_dir: str | Path, output_dir: str | Path,
           python: str = sys.executable) -> Verified:
    script, audit = _script_and_audit(inference_src, "TEST09", benchmark)
    return _verify("TEST09", [python, str(script), "--compliance_dir", str(compliance_dir),
                              "--output_dir", str(output_dir), "--audit-config", str(audit)], Path(output_dir))


def verify_test07(inference_src: str | Path, benchmark: str, compliance_dir: str | Path, output_dir: str | Path,
           accuracy_command: str, python: str = sys.executable, env: dict | None = None) -> Verified:
    """`accuracy_command`: a shell command with `{accuracy_log}` where the log's path goes, printing
    `'exact_match': X` (the scorer's line); `env`: the environment it runs in (None: this process's)."""
    if "{accuracy_log}" not in accuracy_command:
        raise ComplianceError("TEST07: the accuracy command must hold {accuracy_log}, the place of the log's path")
    script, audit = _script_and_audit(inference_src, "TEST07", benchmark)
    return _verify("TEST07", [python, str(script), "--compliance_dir", str(compliance_dir),
                              "--output_dir", str(output_dir), "--audit-config", str(audit),
                              "--accuracy-script", accuracy_command], Path(output_dir), env)
