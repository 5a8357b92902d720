"""accuracy/compliance_verify.py: TEST09 and TEST07 verified by the round's own scripts (master
b66003e's, from ../shared), on accuracy logs made here: pass and fail both seen, the verify file
where the checker looks, the logs beside it."""
import json
import shlex
import sys
from pathlib import Path

import pytest

from mlperf_llm.accuracy.compliance_verify import ComplianceError, verify_test07, verify_test09
from mlperf_llm.accuracy.log import encode_ids

SOURCE = Path(__file__).resolve().parents[4] / "shared" / "mlcommons-inference" / "master-b66003e"


def _logs(folder: Path, lengths) -> Path:
    folder.mkdir(parents=True)
    entries = [{"seq_id": i, "qsl_idx": i, "data": encode_ids([7] * n)} for i, n in enumerate(lengths)]
    (folder / "mlperf_log_accuracy.json").write_text(json.dumps(entries))
    (folder / "mlperf_log_summary.txt").write_text("Result is : VALID\n")
    return folder


@pytest.mark.parametrize("lengths, passed", [([1200, 1300, 1350], True), ([900, 1000, 1100], False)])
def test_test09_passes_inside_the_length_range_and_fails_outside(tmp_path, lengths, passed):
    run = _logs(tmp_path / "run", lengths)
    v = verify_test09(SOURCE, "gpt-oss-120b", run, tmp_path / "out")
    assert v.passed is passed
    assert v.verify_file == tmp_path / "out" / "TEST09" / "verify_output_len.txt"
    assert ("TEST PASS" if passed else "TEST FAIL") in v.verify_file.read_text()
    assert (tmp_path / "out" / "TEST09" / "accuracy" / "mlperf_log_accuracy.json").is_file()
    assert (tmp_path / "out" / "TEST09" / "performance" / "run_1" / "mlperf_log_summary.txt").is_file()


@pytest.mark.parametrize("score, passed", [(70.5, True), (40.0, False)])
def test_test07_takes_the_scorers_line_against_the_threshold(tmp_path, score, passed):
    run = _logs(tmp_path / "run", [10, 20])
    printer = f"{shlex.quote(sys.executable)} -c \"import sys; print(\\\"'exact_match': {score}\\\", sys.argv[1])\" {{accuracy_log}}"
    v = verify_test07(SOURCE, "gpt-oss-120b", run, tmp_path / "out", printer)
    assert v.passed is passed and v.verify_file.name == "verify_accuracy.txt"
    assert "60.698" in v.verify_file.read_text()        # the audit.config's threshold


def test_a_source_without_the_test_and_a_command_without_the_log_are_named(tmp_path):
    with pytest.raises(ComplianceError, match="TEST09 for llama2-70b-99: .* has no TEST09 for it; fix: --inference_src=DIR"):
        verify_test09(SOURCE, "llama2-70b-99", tmp_path, tmp_path / "out")
    with pytest.raises(ComplianceError, match=r"must hold \{accuracy_log\}"):
        verify_test07(SOURCE, "gpt-oss-120b", tmp_path, tmp_path / "out", "echo 1")
