"""A submission of ours without its record, planned from its measurement READMEs (reproduce/readme.py)."""
import pytest

from mlperf_llm.published.commands import Command
from mlperf_llm.published.reader import PublishedResult, PublishedTest
from mlperf_llm.reproduce.readme import (ReadmeReplayError, cache_key_differences, own_tests,
                                         plan_from_readme)
from mlperf_llm.reproduce.record import Record

CMD = ("cm run script --tags=run-mlperf,inference,_full,_embedded --model=llama2-70b-99.9 --division=open "
       "--quiet --test_query_count=4   # left out (paths of the submitting machine): --results_dir, --submission_dir")
KEYS = {"get-ml-model-smollm2": "a" * 64, "detect-os": "b" * 64}


def published(scenario, command=CMD, generator="cm4mlperf-llm", round_="6.1", conf=None):
    t = PublishedTest("me", "open", "sys", "llama2-70b-99.9", scenario, f"results/sys/{scenario}",
                      commands=[Command("cm", command)] if command else [], round=round_,
                      round_source="the results page", generator=generator, cache_keys=dict(KEYS))
    t.user_conf = conf or {}
    return t


def result(*tests):
    return PublishedResult("/sub", list(tests))


def test_the_command_is_replayed_with_its_round_and_the_targets_the_run_chose():
    plan = plan_from_readme(result(published("Offline"), published("Server", conf={"llama2-70b.Server.target_qps": "2.36"})),
                            inference_src="/src")
    assert plan.request["tags"] == "run-mlperf,inference,_full,_embedded,_r6.1"
    assert plan.request["server_target_qps"] == "2.36" and "offline_target_qps" not in plan.request
    assert plan.request["test_query_count"] == "4" and plan.request["inference_src"] == "/src"
    assert "results_dir" not in plan.request and "results_dir," not in plan.request   # the remark is no option
    assert any("_r6.1" in f for f in plan.fixed) and any("server_target_qps=2.36" in f for f in plan.fixed)
    assert plan.cache_keys == KEYS


def test_a_target_or_round_the_command_gave_is_kept():
    cmd = CMD.replace("_embedded", "_embedded,_r5.1").replace(" --quiet", " --server_target_qps=4 --quiet")
    plan = plan_from_readme(result(published("Server", cmd, conf={"llama2-70b.Server.target_qps": "2"})))
    assert plan.request["tags"].endswith("_r5.1") and plan.request["server_target_qps"] == "4" and not plan.fixed


def test_only_our_readmes_with_a_command_are_ours():
    assert own_tests(result(published("Offline", generator="CM"), published("Server", command=""))) == []
    with pytest.raises(ReadmeReplayError, match="says it was made by cm4mlperf-llm"):
        plan_from_readme(result(published("Offline", generator="")))


def test_different_commands_or_another_script_are_refused_with_the_way_out():
    with pytest.raises(ReadmeReplayError, match="different commands.*by hand"):
        plan_from_readme(result(published("Offline"), published("Server", CMD + " --scenario=Server")))
    with pytest.raises(ReadmeReplayError, match="not this tool's main command"):
        plan_from_readme(result(published("Offline", "cm run script --tags=get,ml-model,smollm2")))


def test_cache_keys_that_differ_are_named_and_those_deciding_answers_marked():
    here = Record(steps=[{"script": "get-ml-model-smollm2", "key": "c" * 64}, {"script": "detect-os", "key": "d" * 64},
                         {"script": "get-generic-python-lib", "key": "e" * 64}])
    found, incomparable = cache_key_differences({**KEYS, "get-generic-python-lib": "e" * 64,
                                                "not-run-here": "f" * 64}, here)
    diffs = {d.name: d for d in found}
    assert incomparable == []
    assert set(diffs) == {"cache key of get-ml-model-smollm2", "cache key of detect-os"}
    assert diffs["cache key of get-ml-model-smollm2"].affects_accuracy
    assert not diffs["cache key of detect-os"].affects_accuracy
    assert diffs["cache key of detect-os"].recorded == "b" * 12
    assert cache_key_differences(KEYS, None) == ([], [])


def test_a_step_keyed_on_the_replays_own_folders_is_not_compared():
    here = Record(steps=[{"script": "app-mlperf-inference", "key": "c" * 64,
                          "env": {"CM_MLPERF_RESULTS_DIR": "/replay/out/results"}}])
    found, incomparable = cache_key_differences({"app-mlperf-inference": "a" * 64}, here, ("/replay/out",))
    assert found == [] and incomparable == ["app-mlperf-inference"]
    found, _ = cache_key_differences({"app-mlperf-inference": "a" * 64}, here, ("/elsewhere",))
    assert [d.name for d in found] == ["cache key of app-mlperf-inference"] and found[0].affects_accuracy


def test_each_tests_size_read_from_its_logs_is_given_so_accuracy_scores_the_same_samples():
    off, srv = published("Offline", CMD.replace(" --test_query_count=4", "")), \
        published("Server", CMD.replace(" --test_query_count=4", ""))
    off.sizes, srv.sizes = {"performance": 12, "accuracy": 9, "TEST06": 5}, {"performance": 3, "accuracy": 3}
    plan = plan_from_readme(result(off, srv))
    assert plan.request["test_sizes"] == ("Offline/performance=12,Offline/accuracy=9,Offline/TEST06=5,"
                                          "Server/performance=3,Server/accuracy=3")
    assert any(f.startswith("--test_sizes=") and "read from its LoadGen logs" in f for f in plan.fixed)
    anew = plan_from_readme(result(off, srv), size_anew=True)
    assert "test_sizes" not in anew.request and anew.sizes == plan.sizes
    assert any("accuracy is not expected to match" in f for f in anew.fixed)
    valid = published("Offline", CMD.replace(" --test_query_count=4", " --execution_mode=valid"))
    valid.sizes = {"performance": 24576, "accuracy": 24576}
    assert "test_sizes" not in plan_from_readme(result(valid)).request
