"""TEST06 end to end on loopback: the harness runs LoadGen with TEST06's audit.config in its own
folder against the stand-in server, then the verification reads the log LoadGen wrote."""
import subprocess
import sys
from pathlib import Path

import pytest

from mlperf_llm.accuracy.process import Test06Request as Request06, verify_test06
from mlperf_llm.accuracy.test06_config import audit_config
from mlperf_llm.harness.driver import HarnessRequest, run_all
from mlperf_llm.harness.qsl import load_dataset
from mlperf_llm.rounds import round_for
from standin import StandinConfig, StandinProcess
from standin.dataset import write_dataset
from standin.server import prompt_key
from standin import toytok

ROWS = 24


def run_test06(tmp_path, cfg, scenario):
    dataset = write_dataset(str(tmp_path / "ds.pkl"), ROWS)
    conf, _ = audit_config("", str(tmp_path / "audit"), round_for("", "llama2-70b-99"))
    with StandinProcess(cfg) as sp:
        outs = run_all(HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path / "results"), dataset_path=dataset,
                                      api_servers=(sp.url,), api_model_name="standin-model",
                                      test_query_count=ROWS, progress=False, scenarios=(scenario,),
                                      modes=("TEST06",), audit_conf=conf, server_target_qps=50))
    assert outs and outs[0].returncode == 0, [o.reasons for o in outs]
    run_dir = tmp_path / "results" / "llama2-70b-99" / scenario / "TEST06"
    detail = (run_dir / "mlperf_log_detail.txt").read_text()
    assert "audit.config" in detail  # LoadGen read the audit config (the README's own check)
    [out] = verify_test06(Request06(str(tmp_path / "results"), "llama2-70b-99", [scenario],
                                    eos_token_id=toytok.EOS_ID))
    same_as_reference(run_dir, scenario, tmp_path)
    return out, run_dir


def same_as_reference(run_dir: Path, scenario: str, tmp_path: Path) -> None:
    """The official run_verification.py (v5.1.1's, from ../shared) writes the same lines."""
    from inference_sources import inference_source
    from mlperf_llm.accuracy.test06_config import find_in_source
    script = Path(find_in_source(inference_source("5.1"))).parent / "run_verification.py"
    out = tmp_path / "reference-out"
    # eos_token_id: the reference's default (2), which is the toy tokenizer's EOS too
    subprocess.run([sys.executable, str(script), "-c", str(run_dir), "-o", str(out), "-s", scenario],
                   check=True, capture_output=True, timeout=120)
    assert (out / "TEST06" / "verify_accuracy.txt").read_text() == (run_dir / "verify_accuracy.txt").read_text()


@pytest.mark.parametrize("scenario", ["Offline", "Server"])
def test_test06_passes_on_a_well_behaved_server(tmp_path, scenario):
    out, run_dir = run_test06(tmp_path, StandinConfig(output_tokens=6), scenario)
    assert out.result.passed, out.result.problems
    lines = (run_dir / "verify_accuracy.txt").read_text().splitlines()
    assert lines[0] == ("First token check pass: Skipped" if scenario == "Offline"
                        else "First token check pass: True")
    assert (run_dir / "accuracy" / "mlperf_log_accuracy.json").is_file()
    assert 1 <= out.result.samples <= ROWS * 10


def test_test06_catches_answers_ending_in_two_eos(tmp_path):
    ds = load_dataset(write_dataset(str(tmp_path / "probe.pkl"), ROWS))
    eos = toytok.EOS_ID
    scripted = {prompt_key(list(ds.tok_input[i])): [toytok.OFFSET + 100, toytok.OFFSET + 101, eos, eos]
                for i in range(ROWS)}
    out, run_dir = run_test06(tmp_path, StandinConfig(responses=scripted), "Offline")
    assert out.result.eos is False and not out.result.passed
    assert "EOS check pass: False" in (run_dir / "verify_accuracy.txt").read_text().splitlines()
