from pathlib import Path

import pytest

from mlperf_llm.harness.cmenv import env_from_outcomes, request_from_env
from mlperf_llm.harness.driver import HarnessInputError, HarnessRequest, RunOutcome
from mlperf_llm.harness.testconfig import ManagedServer
from mlperf_llm.vllm.server import ServerRecord

BASE = {"CM_DATASET_PREPROCESSED_PATH": "/d/ds.pkl", "CM_MLPERF_API_SERVER": "http://a:1, http://b:2",
        "CM_MLPERF_MODEL": "llama2-70b-99"}


def test_defaults_and_mapping():
    r = request_from_env(dict(BASE, CM_MLPERF_LOADGEN_SCENARIO="offline,Server",
                              CM_MLPERF_LOADGEN_SERVER_TARGET_QPS="2.5", CM_MLPERF_NUM_WORKERS="3",
                              CM_MLPERF_FIND_PERFORMANCE="yes", CM_MLPERF_API_MODEL_NAME="m"), cwd="/w")
    assert r.scenarios == ("Offline", "Server")
    assert r.modes == ("performance", "accuracy")
    assert r.api_servers == ("http://a:1", "http://b:2")
    assert (r.server_target_qps, r.num_workers, r.find_performance) == (2.5, 3, True)
    assert r.results_dir == "/w/mlperf_results"
    assert (r.round, r.execution_mode, r.backend, r.model) == ("", "test", "vllm", "llama2-70b-99")
    assert r.rnd.name == "6.0"          # no round given: the newest round that has llama2-70b-99


def test_vllm_helper_names_are_fallbacks():
    r = request_from_env({"CM_MLPERF_MODEL": "llama2-70b-99", "CM_DATASET_PREPROCESSED_PATH": "/d", "CM_VLLM_SERVER_URL": "http://v:8000",
                          "CM_VLLM_SERVER_MODEL_NAME": "smol"})
    assert r.api_servers == ("http://v:8000",) and r.api_model_name == "smol"


def test_the_server_this_run_started_reaches_the_tests_and_a_given_one_does_not(tmp_path):
    record = ServerRecord(pid=4242, pgid=4242, start_ticks=77, url="http://127.0.0.1:8000", model_name="smol",
                          log_path="/w/vllm-server-8000.log")
    record.save(tmp_path / "vllm-server-8000.json")
    started = {"CM_MLPERF_MODEL": "llama2-70b-99", "CM_DATASET_PREPROCESSED_PATH": "/d", "CM_VLLM_SERVER_URL": "http://127.0.0.1:8000",
               "CM_VLLM_SERVER_STARTED": "yes", "CM_VLLM_SERVER_RECORD": str(tmp_path / "vllm-server-8000.json")}
    assert request_from_env(started).managed_servers == (
        ManagedServer(url="http://127.0.0.1:8000", pid=4242, start_ticks=77, log_path="/w/vllm-server-8000.log"),)
    assert request_from_env(dict(started, CM_VLLM_SERVER_STARTED="no")).managed_servers == ()
    # the tests use other servers (--api_server on the benchmark step): the started one is none of theirs
    assert request_from_env(dict(started, CM_MLPERF_API_SERVER="http://b:2")).managed_servers == ()
    with pytest.raises(HarnessInputError, match="CM_VLLM_SERVER_RECORD: cannot read server record"):
        request_from_env(dict(started, CM_VLLM_SERVER_RECORD=str(tmp_path / "gone.json")))


@pytest.mark.parametrize("env, word", [
    ({"CM_MLPERF_LOADGEN_SCENARIO": "MultiStream"}, "unknown scenario 'MultiStream'"),
    ({"CM_MLPERF_MODEL": ""}, "no benchmark: CM_MLPERF_MODEL is empty; fix: pass --model=NAME .benchmarks: llama2-70b-99, "),
    ({"CM_MLPERF_LOADGEN_MODE": "fast"}, "unknown mode 'fast'"),
    ({"CM_MLPERF_LOADGEN_TEST_QUERY_COUNT": "ten"}, "CM_MLPERF_LOADGEN_TEST_QUERY_COUNT='ten'"),
    ({"CM_DATASET_PREPROCESSED_PATH": ""}, "no data set"),
])
def test_bad_env_is_named(env, word):
    with pytest.raises(HarnessInputError, match=word):
        request_from_env(dict(BASE, **env))


def test_request_validation(tmp_path):
    ok = HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path), dataset_path="ds.pkl", api_servers=("http://x",))
    ok.validate()
    with pytest.raises(HarnessInputError, match="api_server is empty"):
        HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path), dataset_path="ds.pkl").validate()
    with pytest.raises(HarnessInputError, match="TEST06 needs its audit.config"):
        HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path), dataset_path="ds.pkl", modes=("TEST06",),
                       api_servers=("http://x",)).validate()
    with pytest.raises(HarnessInputError, match="model_path"):
        HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path), dataset_path="ds.pkl", backend="transformers").validate()


def test_outcome_env_reports_the_worst():
    req = HarnessRequest(model="llama2-70b-99", results_dir="/r", dataset_path="ds.pkl")
    outs = [RunOutcome("Offline", "performance", "VALID", [], "/r/a", 0),
            RunOutcome("Server", "performance", "INVALID", ["x"], "/r/b", 0)]
    assert env_from_outcomes(req, outs)["CM_MLPERF_HARNESS_STATUS"] == "INVALID"
    outs.append(RunOutcome("Server", "accuracy", "FAILED", ["y"], "/r/c", 3))
    assert env_from_outcomes(req, outs)["CM_MLPERF_HARNESS_STATUS"] == "FAILED"


def test_outcome_env_hands_on_derived_targets_only(tmp_path):
    import json
    req = HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path), dataset_path="ds.pkl")
    assert not any("TARGET_QPS" in k for k in env_from_outcomes(req, []))        # no targets.json
    (tmp_path / "targets.json").write_text(json.dumps({
        "Offline": {"target_qps": None, "source": "LoadGen default (mlperf.conf)"},
        "Server": {"target_qps": 9.1, "source": "derived from the Offline performance test of this run (13 samples/s)"},
        "Interactive": {"target_qps": 2.0, "source": "given"}}))
    env = env_from_outcomes(req, [])
    assert env["CM_MLPERF_LOADGEN_SERVER_TARGET_QPS"] == "9.1"
    assert "CM_MLPERF_LOADGEN_INTERACTIVE_TARGET_QPS" not in env and "CM_MLPERF_LOADGEN_OFFLINE_TARGET_QPS" not in env


def test_server_target_comes_from_the_fastest_offline_test(capsys):
    from mlperf_llm.harness.targets import derive_from_offline as _derive_from_offline
    perf = RunOutcome("Offline", "performance", "VALID", [], "/r/a", 0, {"samples_per_second": 5.0}, 4.8)
    acc = RunOutcome("Offline", "accuracy", "VALID", [], "/r/b", 0, {}, 211 / 34.0)
    assert acc.offline_rate() == (211 / 34.0, "Offline accuracy test")
    sources = {}
    req = _derive_from_offline(HarnessRequest(model="llama2-70b-99", results_dir="/r", dataset_path="ds.pkl"), [perf, acc], "Server", sources)
    assert req.server_target_qps == 4.34 and "Offline accuracy test" in sources["Server"]
    assert "Server target_qps 4.34" in capsys.readouterr().out
    given = HarnessRequest(model="llama2-70b-99", results_dir="/r", dataset_path="ds.pkl", server_target_qps=9.2)
    assert _derive_from_offline(given, [perf, acc], "Server", {}).server_target_qps == 9.2
    failed = RunOutcome("Offline", "accuracy", "FAILED", [], "/r/c", 3, {}, 50.0)
    req = HarnessRequest(model="llama2-70b-99", results_dir="/r", dataset_path="ds.pkl")
    assert _derive_from_offline(req, [failed], "Server", {}).server_target_qps is None


def test_accuracy_covers_test_query_count_samples_in_test_mode_only():
    r = request_from_env(dict(BASE, CM_MLPERF_LOADGEN_TEST_QUERY_COUNT="32"))
    assert r.accuracy_sample_count is None and r.accuracy_rows(211) == 32
    assert request_from_env(dict(BASE, CM_MLPERF_LOADGEN_TEST_QUERY_COUNT="32",
                                 CM_MLPERF_ACCURACY_SAMPLE_COUNT="all")).accuracy_rows(211) == 211
    assert request_from_env(dict(BASE, CM_MLPERF_ACCURACY_SAMPLE_COUNT="50")).accuracy_rows(211) == 50
    assert request_from_env(dict(BASE, CM_MLPERF_ACCURACY_SAMPLE_COUNT="500")).accuracy_rows(211) == 211
    assert request_from_env(BASE).accuracy_rows(211) == 211        # no test_query_count: every sample
    valid = request_from_env(dict(BASE, CM_MLPERF_EXECUTION_MODE="valid", CM_MLPERF_LOADGEN_TEST_QUERY_COUNT="32"))
    assert valid.accuracy_rows(24576) == 24576
    with pytest.raises(HarnessInputError, match="covers the whole data set"):
        request_from_env(dict(BASE, CM_MLPERF_EXECUTION_MODE="valid", CM_MLPERF_ACCURACY_SAMPLE_COUNT="10")).validate()
    with pytest.raises(HarnessInputError, match="CM_MLPERF_ACCURACY_SAMPLE_COUNT='some'"):
        request_from_env(dict(BASE, CM_MLPERF_ACCURACY_SAMPLE_COUNT="some"))


def test_all_scenarios_are_the_rounds():
    r = request_from_env(dict(BASE, CM_MLPERF_LOADGEN_SCENARIO="all", CM_MLPERF_INFERENCE_VERSION="4.1"), cwd="/w")
    assert r.scenarios == ("Offline", "Server")
    r = request_from_env(dict(BASE, CM_MLPERF_LOADGEN_SCENARIO="all", CM_MLPERF_MODEL="llama2-70b-99.9"), cwd="/w")
    assert r.scenarios == ("Offline", "Server", "Interactive") and r.rnd.name == "6.1"
    r = request_from_env(dict(BASE, CM_MLPERF_LOADGEN_SCENARIO="all", CM_MLPERF_MODEL="llama3.1-8b-edge"), cwd="/w")
    assert r.scenarios == ("Offline", "SingleStream")


def test_the_harness_steps_all_scenarios_variation_is_the_rounds():
    """app-mlperf-inference's `_all-scenarios` hands `all` on (the round's and the benchmark's), not a
    fixed list that would ask v4.1 for Interactive or the edge benchmark for Server."""
    import yaml
    manifest = yaml.safe_load((Path(__file__).resolve().parents[3] / "script" / "app-mlperf-inference" / "_cm.yaml").read_text())
    assert manifest["variations"]["all-scenarios"]["env"]["CM_MLPERF_LOADGEN_SCENARIO"] == "all"


def test_singlestream_takes_its_target_latency_and_a_valid_run_needs_it():
    env = dict(BASE, CM_MLPERF_MODEL="llama3.1-8b-edge", CM_MLPERF_LOADGEN_SCENARIO="singlestream",
               CM_MLPERF_INFERENCE_VERSION="6.1")
    r = request_from_env(dict(env, CM_MLPERF_LOADGEN_SINGLESTREAM_TARGET_LATENCY="850"))
    assert (r.scenarios, r.singlestream_target_latency, r.target_for("SingleStream")) == (("SingleStream",), 850, 850)
    r.validate()
    request_from_env(env).validate()                       # a test run: LoadGen's 10 ms plans nothing
    with pytest.raises(HarnessInputError, match="--singlestream_target_latency=MS"):
        request_from_env(dict(env, CM_MLPERF_EXECUTION_MODE="valid")).validate()
    request_from_env(dict(env, CM_MLPERF_EXECUTION_MODE="valid", CM_MLPERF_LOADGEN_MODE="accuracy")).validate()
    with pytest.raises(HarnessInputError, match="CM_MLPERF_LOADGEN_SINGLESTREAM_TARGET_LATENCY"):
        request_from_env(dict(env, CM_MLPERF_LOADGEN_SINGLESTREAM_TARGET_LATENCY="fast"))


def test_the_transformers_backend_computes_where_device_says():
    assert request_from_env(dict(BASE)).device == "cpu"
    assert request_from_env(dict(BASE, CM_MLPERF_DEVICE="cuda")).device == "cuda"
    assert request_from_env(dict(BASE, CM_MLPERF_DEVICE="rocm")).device == "cuda"   # torch's name for ROCm GPUs


def test_cuda_asked_for_where_torch_sees_none_is_one_clear_error():
    from mlperf_llm.harness.sut_hf import HfDeviceError, check_device

    class Torch:
        __version__ = "2.13.0+cpu"

        class cuda:
            @staticmethod
            def is_available():
                return False
    check_device(Torch, "cpu")
    with pytest.raises(HfDeviceError, match=r"device cuda: torch 2.13.0\+cpu in .* sees no CUDA device.*--device=cpu"):
        check_device(Torch, "cuda")


def test_a_performance_load_given_in_env_reaches_the_request_and_a_bad_one_is_named():
    r = request_from_env(dict(BASE, CM_MLPERF_PERFORMANCE_LOADS="Server=0.0581"), cwd="/w")
    assert r.performance_loads == {"Server": 0.0581}
    assert request_from_env(dict(BASE), cwd="/w").performance_loads == {}
    with pytest.raises(HarnessInputError, match="CM_MLPERF_PERFORMANCE_LOADS: 'Server=fast' is not SCENARIO=QPS"):
        request_from_env(dict(BASE, CM_MLPERF_PERFORMANCE_LOADS="Server=fast"), cwd="/w")
