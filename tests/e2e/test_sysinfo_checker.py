"""The real submission checker accepts our system descriptions (needs an mlcommons/inference checkout:
MLPERF_INFERENCE_SRC=DIR, e.g. the one get-mlperf-inference-src made)."""
import json
import os
import subprocess
import sys

import pytest

from mlperf_llm.sysinfo.probe import collect
from mlperf_llm.sysinfo.sut import SoftwareStack, SutInputs, build_sut_description

pytestmark = pytest.mark.e2e

PROBE = """
import json, logging, sys
sys.path.insert(0, sys.argv[1])
logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
import submission_checker as ck
fields = json.load(open(sys.argv[2]))
print("RESULT", ck.check_system_desc_id("sut.json", fields, fields["submitter"], fields["division"], "v5.1", False))
"""


def test_checker_accepts_detected_and_default_descriptions(tmp_path):
    # MLPERF_INFERENCE_SRC, else ../shared/mlcommons-inference/v5.1.1 beside the clone
    shared = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "mlcommons-inference", "v5.1.1")
    dirs = [os.path.join(s, "tools", "submission")
            for s in (os.environ.get("MLPERF_INFERENCE_SRC", ""), shared) if s]
    checker_dir = next((d for d in dirs if os.path.isfile(os.path.join(d, "submission_checker.py"))), None)
    if not checker_dir:
        pytest.skip("no mlcommons/inference checkout: set MLPERF_INFERENCE_SRC=DIR (../shared/mlcommons-inference "
                    "is not beside this clone)")
    facts = collect()
    cases = {"given": SutInputs(hw_name="a", submitter="Acme", division="open"), "defaults": SutInputs(hw_name="b")}
    for name, inputs in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(build_sut_description(facts, inputs, SoftwareStack()).fields))
        res = subprocess.run([sys.executable, "-c", PROBE, checker_dir, str(path)], capture_output=True, text=True)
        assert "RESULT True" in res.stdout, res.stdout + res.stderr
        assert "ERROR" not in res.stderr and "WARNING" not in res.stderr, res.stderr
