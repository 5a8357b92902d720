"""The real submission checker (v5.1.1's, from ../shared/mlcommons-inference) accepts our system
descriptions."""
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
    from inference_sources import inference_source
    checker_dir = os.path.join(inference_source("5.1"), "tools", "submission")
    facts = collect()
    cases = {"given": SutInputs(hw_name="a", submitter="Acme", division="open"), "defaults": SutInputs(hw_name="b")}
    for name, inputs in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(build_sut_description(facts, inputs, SoftwareStack()).fields))
        res = subprocess.run([sys.executable, "-c", PROBE, checker_dir, str(path)], capture_output=True, text=True)
        assert "RESULT True" in res.stdout, res.stdout + res.stderr
        assert "ERROR" not in res.stderr and "WARNING" not in res.stderr, res.stderr
