import json
import os

import pytest

from mlperf_llm.submission.cmenv import metadata_from_env, reproducing_command
from mlperf_llm.submission.errors import SubmissionError
from mlperf_llm.submission.inputs import Metadata, check_system, discover_results

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "submission")


def meta_dict(**kw):
    d = json.load(open(os.path.join(FIX, "metadata.json")))
    d.update(kw)
    return d


@pytest.mark.parametrize("key,value,match", [
    ("division", "network", "division='network'"),
    ("execution_mode", "fast", "execution_mode"),
    ("quantization", {"scheme": "fp4"}, "quantization.scheme"),
    ("submitter", "My Org", "cannot be a folder name"),
    ("system_name", ".hidden", "cannot be a folder name"),
    ("colour", "red", "unknown keys"),
    ("quantization", {"bits": 4}, "quantization has unknown keys"),
])
def test_bad_metadata_is_refused_with_the_reason(key, value, match):
    with pytest.raises(SubmissionError, match=match):
        Metadata.from_dict(meta_dict(**{key: value}))


def test_metadata_without_submitter():
    d = meta_dict()
    del d["submitter"]
    with pytest.raises(SubmissionError, match="--submitter"):
        Metadata.from_dict(d)


def test_system_checks_name_every_gap():
    system = json.load(open(os.path.join(FIX, "system.json")))
    assert check_system(system, "s") == []
    del system["cooling"]
    system["host_memory_capacity"] = ""
    system["status"] = "soon"
    problems = check_system(system, "s")
    assert "field 'cooling' is missing" in problems
    assert "field 'host_memory_capacity' is empty" in problems
    assert any("status 'soon'" in p for p in problems)


def test_results_discovery(tmp_path):
    runs = discover_results(os.path.join(FIX, "results-v5.1"))
    assert [(r.model, r.scenario) for r in runs] == [("llama2-70b-99", "Offline"), ("llama2-70b-99", "Server"),
                                                     ("llama2-70b-99", "Interactive")]
    assert all(r.performance and r.accuracy and r.test06 and r.user_conf for r in runs)
    with pytest.raises(SubmissionError, match="does not exist"):
        discover_results(str(tmp_path / "nope"))
    with pytest.raises(SubmissionError, match="holds no <model>/<Scenario>"):
        discover_results(str(tmp_path))


def test_results_discovery_skips_the_harness_side_folders(tmp_path):
    import shutil
    results = tmp_path / "results"
    shutil.copytree(os.path.join(FIX, "results-v5.1"), results)
    # a Server run that missed the latency bounds, set aside by the harness, and a find-performance run
    shutil.copytree(results / "llama2-70b-99" / "Server" / "performance" / "run_1",
                    results / "latency_search" / "Server" / "performance" / "run_1")
    shutil.copytree(results / "llama2-70b-99" / "Offline", results / "find_performance" / "Offline")
    assert [(r.model, r.scenario) for r in discover_results(str(results))] == \
        [("llama2-70b-99", "Offline"), ("llama2-70b-99", "Server"), ("llama2-70b-99", "Interactive")]


def test_metadata_from_env_precedence_and_system_folder(tmp_path):
    f = tmp_path / "meta.json"
    f.write_text(json.dumps({"submitter": "FromFile", "division": "closed", "quantization": "fp8"}))
    env = {"CM_MLPERF_SUBMISSION_METADATA": str(f), "CM_MLPERF_SUBMITTER": "FromInput", "CM_HW_NAME": "gpu_8x",
           "CM_MLPERF_DEVICE": "cuda", "CM_MLPERF_QUANTIZATION_NUM_SAMPLES": "16", "CM_VLLM_VERSION": "0.5.2",
           "CM_MLPERF_RUN_COMMAND": "cm run script --tags=run-mlperf,inference"}
    m = metadata_from_env(env)
    assert (m.submitter, m.division) == ("FromInput", "closed")
    assert m.system_name == "gpu_8x-reference-cuda-vllm"
    assert (m.quantization.scheme, m.quantization.num_calibration_samples) == ("fp8", 16)
    assert m.component_versions["vLLM"] == "0.5.2" and m.command.startswith("cm run script")
    assert "Python version" in m.host_platform


def test_reproducing_command_is_the_users_line():
    assert reproducing_command(["/venv/bin/cm", "run", "script", "--tags=a,b", "--x=has space"]) == \
        "cm run script --tags=a,b '--x=has space'"


def test_the_recorded_server_command_carries_the_variables_it_started_with():
    base = {"CM_MLPERF_SUBMITTER": "Org", "CM_HW_NAME": "cpu_2c"}
    env = {**base, "CM_VLLM_SERVER_COMMAND": "python -m vllm.entrypoints.openai.api_server --model=m",
           "CM_VLLM_SERVER_ENV_VLLM_ENABLE_V1_MULTIPROCESSING": "0",
           "CM_VLLM_SERVER_ENV_VLLM_CPU_KVCACHE_SPACE": "2"}
    m = metadata_from_env(env)
    assert m.vllm_serve_command == ("VLLM_CPU_KVCACHE_SPACE=2 VLLM_ENABLE_V1_MULTIPROCESSING=0 "
                                    "python -m vllm.entrypoints.openai.api_server --model=m")
    assert metadata_from_env({**base, "CM_VLLM_SERVER_COMMAND": "vllm serve m"}).vllm_serve_command == "vllm serve m"
