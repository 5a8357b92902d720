"""Published results of others read into typed tests (mlperf_llm.published), on the two real folders in
../shared/published-results (unmodified, read-only) and on copies of them made untidy the ways real
published folders are (empty files, CRLF, a cut accuracy log, a command that disagrees with its folder,
an accuracy folder with another test's logs, a benchmark name outside the checker's list)."""
import json
import shutil
from pathlib import Path

import pytest

from mlperf_llm.published.commands import find_commands
from mlperf_llm.published.reader import read_published

ROOT = Path(__file__).resolve().parents[3]
PUBLISHED = ROOT.parent / "shared" / "published-results"
NM = PUBLISHED / "nm-v4.1-fp8"
VULTR = PUBLISHED / "vultr-v5.1-mi325x"


def test_the_neural_magic_folder_reads_as_one_cm_made_server_test():
    result = read_published(NM)
    (t,) = result.tests
    assert (t.submitter, t.division, t.benchmark, t.scenario) == ("NeuralMagic", "open", "llama2-70b-99", "Server")
    assert t.system == "4xH100-SXM-80GB_vLLM_FP8-reference-cpu-pytorch-v2.3.1-default_config"
    assert t.loadgen_version.startswith("4.0 @") and t.target_qps == 5 and t.validity == "VALID"
    assert (t.round, t.round_source) == ("4.1", "the _r tag of its recorded command")
    assert t.seeds["qsl_rng_seed"] == 3066443479025735752
    assert t.performance["samples_per_second"] == pytest.approx(4.99)          # the summary's, as published
    assert t.performance["tokens_per_second"] == pytest.approx(1468.24)
    assert t.accuracy["ROUGE1"] == pytest.approx(44.5491) and t.accuracy["TOKENS_PER_SAMPLE"] == pytest.approx(293.9, abs=0.05)
    assert t.user_conf == {"llama2-70b.Server.target_qps": "5"}
    assert t.weights["weight_data_types"] == "fp8"
    assert t.software["cmind"].startswith("2.3") and "vllm" not in t.software     # CM's python, not the server's
    assert t.made_by == "cm"
    cm = next(c for c in t.commands if c.kind == "cm")
    assert "_r4.1" in cm.tags() and cm.options()["vllm_model_name"] == "nm-testing/Llama-2-70b-chat-hf-FP8"
    assert cm.options()["server_target_qps"] == "5"
    served = [c.model() for c in t.server_commands]
    assert "nm-testing/Llama-2-70b-chat-hf-FP8" in served
    assert t.server_commands[0].options()["tensor_parallel_size"] == "4"
    assert str(t.system_desc["accelerators_per_node"]) == "4"          # a string in this systems JSON
    # the repository keeps a cut copy of the accuracy log: a finding, not a failure
    assert any("cut short" in f.what and f.where.endswith("mlperf_log_accuracy.json") for f in result.findings)


def test_the_vultr_folder_reads_as_three_closed_tests_made_without_cm():
    result = read_published(VULTR)
    tests = {t.scenario: t for t in result.tests}
    assert sorted(tests) == ["Interactive", "Offline", "Server"]
    for t in tests.values():
        assert (t.submitter, t.division, t.benchmark, t.made_by) == ("Vultr", "closed", "llama2-70b-99", "")
        assert t.system_desc["accelerator_model_name"].startswith("AMD Instinct MI325X")
        assert t.system_desc["accelerators_per_node"] == 8 and t.validity == "VALID"
        assert any(f.endswith(f"{t.scenario.lower()}_mi325x.yaml") for f in t.engine_files), t.engine_files
    assert {s: tests[s].target_qps for s in tests} == {"Offline": 114, "Server": 103, "Interactive": 59}
    assert {t.round for t in tests.values()} == {"5.1"}
    assert tests["Server"].round_source.endswith("README.md (the results page)")
    # its LoadGen is a v5.0 wheel's version: said, and the publication's page wins
    assert any("round v5.1 from" in f.what and "v5.0 from LoadGen 5.0.21" in f.what for f in result.findings)
    assert tests["Offline"].performance["tokens_per_second"] == pytest.approx(33762.5)


def test_a_folder_without_a_submitter_folder_is_a_finding(tmp_path):
    result = read_published(tmp_path)
    assert result.tests == [] and "no submitter folder" in result.findings[0].what


@pytest.fixture
def untidy(tmp_path):
    copy = tmp_path / "nm"
    shutil.copytree(NM, copy, symlinks=True)
    for p in copy.rglob("*"):
        if p.is_file() and not p.is_symlink():
            p.chmod(0o644)
    sub = copy / "open" / "NeuralMagic"
    meas = next((sub / "measurements").iterdir()) / "llama2-70b-99" / "server"
    return sub, meas, next((sub / "results").iterdir()) / "llama2-70b-99" / "server"


def test_untidy_copies_give_findings_not_tracebacks(untidy):
    sub, meas, res = untidy
    (meas / "user.conf").write_text("")                                       # empty
    readme = meas / "README.md"
    text = readme.read_text().replace("--model=llama2-70b-99 \\\n", "--model=llama2-70b-99 \\\n\t--scenario=Offline \\\n")
    assert "--scenario=Offline" in text
    readme.write_bytes(text.replace("\n", "\r\n").encode())                  # CRLF, and a disagreeing command
    shutil.copy(res / "performance" / "run_1" / "mlperf_log_detail.txt", res / "accuracy" / "mlperf_log_detail.txt")
    (res / "performance" / "run_1" / "mlperf_log_summary.txt").unlink()
    result = read_published(sub)
    (t,) = result.tests
    what = "\n".join(str(f) for f in result.findings)
    assert "user.conf is empty" in what
    assert "command says --scenario=Offline, the folder holds Server" in what
    assert "the accuracy folder holds a PerformanceOnly run's logs" in what
    assert "the performance summary cannot be read" in what
    assert t.user_conf == {} and t.validity == "VALID" and t.made_by == "cm"      # the CRLF command still read


def test_a_benchmark_folder_outside_the_checkers_list_is_named(untidy):
    sub, _, res = untidy
    res.parent.rename(res.parent.parent / "llama3_1-8b")
    result = read_published(sub)
    assert result.tests[0].benchmark == "llama3_1-8b"
    assert any("benchmark folder 'llama3_1-8b' is not a benchmark this tool knows" in f.what for f in result.findings)
    (sub / "model_mapping.json").write_text('{"llama3_1-8b": "llama3.1-8b"}')
    result = read_published(sub)
    assert result.tests[0].benchmark == "llama3.1-8b"


def test_commands_are_found_with_continuations_prompts_and_crlf():
    doc = ("Run:\r\n```bash\r\n$ cm run script --tags=run-mlperf,inference,_full \\\r\n   --model=llama2-70b-99 "
           "--scenario Server --quiet\r\n```\r\nmlcr run-mlperf,inference --model=llama2-70b-99\n"
           "python3 -m vllm.entrypoints.openai.api_server --model m --port 8000\nvllm serve org/m --tp 2\n")
    found = find_commands(doc)
    assert [c.kind for c in found] == ["cm", "mlc", "vllm", "vllm"]
    assert found[0].options() == {"tags": "run-mlperf,inference,_full", "model": "llama2-70b-99",
                                  "scenario": "Server", "quiet": "yes"}
    assert found[2].model() == "m" and found[3].model() == "org/m"


def _log(path: Path, **values):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f':::MLLOG {{"key": "{k}", "value": {json.dumps(v)}, "time_ms": 0.0}}\n'
                            for k, v in values.items()))


def test_each_tests_size_is_read_from_its_logs(tmp_path):
    # a test run's logs, as this tool's sized run leaves them in a v6.0 tree: the performance test's
    # query count, the samples its accuracy test scored, the answers its TEST06 logged
    test = tmp_path / "open" / "me" / "results" / "sys" / "llama2-70b-99.9" / "Offline"
    _log(test / "performance" / "run_1" / "mlperf_log_detail.txt", effective_scenario="Offline",
         effective_test_mode="PerformanceOnly", requested_min_query_count=12)
    _log(test / "accuracy" / "mlperf_log_detail.txt", effective_test_mode="AccuracyOnly",
         effective_performance_sample_count=9)
    (test / "TEST06" / "accuracy").mkdir(parents=True)
    (test / "TEST06" / "accuracy" / "mlperf_log_accuracy.json").write_text(
        json.dumps([{"seq_id": i, "qsl_idx": i, "data": "00"} for i in range(5)]))
    (t,) = read_published(tmp_path).tests
    assert t.sizes == {"performance": 12, "accuracy": 9, "TEST06": 5}
