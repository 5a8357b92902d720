"""The table of rounds (mlperf_llm.rounds): the parser, the default round, and parity with each round's
own checker and mlperf.conf (the offline copies in ../shared/mlcommons-inference/)."""
import os
import re
import runpy
import sys

import pytest

from mlperf_llm import rounds
from mlperf_llm.benchmarks import BENCHMARKS, get_benchmark
from mlperf_llm.rounds import ROUNDS, RoundError, check_model, default_round, get_round, round_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SHARED = os.path.join(ROOT, "..", "shared", "mlcommons-inference")


@pytest.mark.parametrize("text,name", [("r6.1", "6.1"), ("_r6.0", "6.0"), ("v6.1", "6.1"), ("6.1", "6.1"),
                                       ("6.1.2", "6.1"), ("v5.1.1", "5.1"), ("R4.1", "4.1"), (" 5.0 ", "5.0")])
def test_parser_accepts_every_spelling(text, name):
    assert get_round(text) is ROUNDS[name]


@pytest.mark.parametrize("text", ["7.0", "r6.2", "six", "6", "v", "5.1x"])
def test_unknown_round_names_the_input_and_the_choices(text):
    with pytest.raises(RoundError) as e:
        get_round(text)
    msg = str(e.value)
    assert repr(text.strip()) in msg and "_r4.1, _r5.0, _r5.1, _r6.0, _r6.1" in msg and "fix" in msg


def test_names_versions_and_tags():
    assert [r.name for r in ROUNDS.values()] == ["4.1", "5.0", "5.1", "6.0", "6.1"]
    r = ROUNDS["6.1"]
    assert (r.version, r.tag) == ("v6.1", "_r6.1") and rounds.NEWEST is r


def test_default_round_is_the_newest_having_the_model():
    rnd, why = default_round("llama2-70b-99.9")
    assert rnd.name == "6.1" and "newest round that has llama2-70b-99.9" in why
    rnd, why = default_round("llama2-70b-99")
    assert rnd.name == "6.0" and "v6.1 has llama2-70b-99.9, llama3.1-8b, llama3.1-8b-edge" in why
    assert default_round("llama3.1-8b")[0] is rounds.NEWEST
    assert default_round("")[0] is rounds.NEWEST
    with pytest.raises(RoundError, match="'gpt-j' is not a benchmark this tool knows; benchmarks: llama2-70b-99, "):
        default_round("gpt-j")


def test_a_model_the_round_lacks_names_the_alternatives():
    with pytest.raises(RoundError) as e:
        check_model(ROUNDS["6.1"], "llama2-70b-99")
    msg = str(e.value)
    assert ("v6.1 has no llama2-70b-99 (its benchmarks: llama2-70b-99.9, llama3.1-8b, llama3.1-8b-edge, gpt-oss-120b, deepseek-r1); "
            "fix: choose one of llama2-70b-99.9, llama3.1-8b, llama3.1-8b-edge, gpt-oss-120b, deepseek-r1 with _r6.1") in msg
    assert "_r6.0" in msg
    with pytest.raises(RoundError, match="round v5.0 has no llama3.1-8b"):
        check_model(ROUNDS["5.0"], "llama3.1-8b")
    with pytest.raises(RoundError, match=r"llama3.1-8b has one accuracy level: use --model=llama3.1-8b\)"):
        check_model(ROUNDS["6.1"], "llama3.1-8b-99.9")
    check_model(ROUNDS["6.1"], "llama2-70b-interactive-99.9")     # same benchmark, interactive folder
    assert round_for("", "llama2-70b-99").name == "6.0" and round_for("5.1", "llama2-70b-99").name == "5.1"
    with pytest.raises(RoundError, match="v6.1 has no llama2-70b-99"):
        round_for("r6.1", "llama2-70b-99")


def test_scenario_requirements():
    l2, l3, edge = (get_benchmark(n) for n in ("llama2-70b-99.9", "llama3.1-8b", "llama3.1-8b-edge"))
    assert ROUNDS["4.1"].missing_scenarios(l2, {"Offline"}) == ["Server"]
    assert ROUNDS["4.1"].missing_scenarios(l2, {"Offline", "Interactive"}) == ["Server"]
    assert ROUNDS["6.1"].missing_scenarios(l2, {"Offline"}) == ["Server or Interactive"]
    assert ROUNDS["6.0"].missing_scenarios(l2, {"Offline", "Interactive"}) == []
    assert ROUNDS["6.0"].missing_scenarios(l2, {"Server"}) == ["Offline"]
    assert ROUNDS["6.1"].describe_scenarios(l2) == "Offline + Server or Interactive"
    assert ROUNDS["6.1"].describe_scenarios(l3) == "Offline + Server or Interactive"
    assert ROUNDS["6.1"].missing_scenarios(edge, {"Offline"}) == ["SingleStream"]


def test_loadgen_ranges_and_pins():
    for r in ROUNDS.values():
        assert r.loadgen_in_range(r.loadgen_pin), r
    assert ROUNDS["6.0"].loadgen_in_range("6.0.5") and not ROUNDS["6.0"].loadgen_in_range("6.0.4")
    assert not ROUNDS["6.0"].loadgen_in_range("6.0.16") and ROUNDS["6.1"].loadgen_in_range("6.0.16")
    assert ROUNDS["5.1"].loadgen_in_range("5.1.2") and not ROUNDS["5.1"].loadgen_in_range("")
    # no wheel belongs to two rounds
    names = list(ROUNDS)
    for a, b in zip(names, names[1:]):
        assert not ROUNDS[b].loadgen_in_range(ROUNDS[a].loadgen_max), (a, b)


def test_source_and_checker_of_each_round():
    assert ROUNDS["5.1"].src_ref == "v5.1" and not ROUNDS["5.1"].src_is_commit
    assert ROUNDS["6.0"].src_ref.startswith("b66003e") and ROUNDS["6.1"].src_is_commit
    assert {r.checker for r in ROUNDS.values() if r.layout == "v6"} == {"package"}
    assert {r.checker for r in ROUNDS.values() if r.layout == "v4"} == {"script"}
    for r in ROUNDS.values():
        assert os.path.isdir(os.path.join(SHARED, r.shared_copy)), r.shared_copy


def _checker_constants(rnd):
    """MODEL_CONFIG and LLM_LATENCY_LIMITS of the round's own checker (plain Python assignments)."""
    folder = os.path.join(SHARED, rnd.shared_copy, "tools", "submission")
    if rnd.checker == "package":
        return runpy.run_path(os.path.join(folder, "submission_checker", "constants.py"), run_name="constants")
    sys.path.insert(0, folder)           # the script imports its sibling log_parser
    try:
        sys.modules.pop("log_parser", None)
        return runpy.run_path(os.path.join(folder, "submission_checker.py"), run_name="checker")
    finally:
        sys.path.remove(folder)
        sys.modules.pop("log_parser", None)


@pytest.mark.parametrize("name", list(ROUNDS))
def test_table_matches_the_rounds_own_checker(name):
    rnd = ROUNDS[name]
    g = _checker_constants(rnd)
    cfg = g["MODEL_CONFIG"][rnd.version]
    assert {m for m in cfg["models"] if m in BENCHMARKS} == set(rnd.benchmarks)
    seeds = cfg["seeds"]
    assert (seeds["qsl_rng_seed"], seeds["sample_index_rng_seed"], seeds["schedule_rng_seed"]) == (
        rnd.seeds.qsl_rng_seed, rnd.seeds.sample_index_rng_seed, rnd.seeds.schedule_rng_seed)
    for model in rnd.benchmarks:
        bench = get_benchmark(model)
        required = cfg[f"required-scenarios-{bench.category}"][model]
        optional = (cfg.get(f"optional-scenarios-{bench.category}") or {}).get(model, [])
        ours = [set(alt) for alt in rnd.required(bench)]
        assert [{s} for s in sorted(required)] + ([set(optional)] if optional else []) == \
            sorted([a for a in ours if len(a) == 1], key=min) + [a for a in ours if len(a) > 1], model
        if "dataset-size" in cfg:           # from v5.1: the performance set's rows (gpt-oss-120b: a set of its own)
            assert cfg["dataset-size"][model] == (bench.performance_rows or bench.dataset_rows)
        if model in cfg.get("accuracy-sample-count", {}):    # the accuracy set's, where it differs
            assert cfg["accuracy-sample-count"][model] == bench.dataset_rows
        assert cfg["performance-sample-count"][model] == bench.performance_sample_count
        if not bench.latency_limits_ms:
            assert model not in g["LLM_LATENCY_LIMITS"], model
            continue
        limits = g["LLM_LATENCY_LIMITS"][model]
        if "Server" in limits:               # v5.1 on: per scenario, in ns
            for scenario, (ttft, tpot) in bench.latency_limits_ms.items():
                if scenario == "Interactive" and rnd.interactive_of(bench) == "none":
                    assert scenario not in limits, model        # deepseek-r1 in v5.1: no Interactive
                    continue
                assert (limits[scenario]["ttft"], limits[scenario]["tpot"]) == (ttft * 10**6, tpot * 10**6)
        else:                                # v4.1, v5.0: one "conversational" bound, the Server one
            assert (limits["conversational"]["ttft"], limits["conversational"]["tpot"]) == tuple(
                x * 10**6 for x in bench.latency_limits_ms["Server"])


@pytest.mark.parametrize("name", [r for r in ROUNDS if r >= "5.1"])
def test_accuracy_targets_are_the_checkers(name):
    """Each benchmark's metrics, references x scale (quality) and x low / x high (length)."""
    rnd = ROUNDS[name]
    cfg = _checker_constants(rnd)["MODEL_CONFIG"][rnd.version]
    for model in rnd.benchmarks:
        acc = get_benchmark(model).accuracy
        theirs = cfg["accuracy-target"][model]
        pairs = dict(zip(theirs[::2], theirs[1::2]))
        assert list(pairs) == list(acc.metrics), model
        for metric, ref in acc.quality:
            assert pairs[metric] == pytest.approx(ref * acc.scale), (model, metric)
        if not acc.length_metric:
            # gpt-oss-120b: the checker bounds tokens_per_sample above only where accuracy.txt prints
            # it, and the reference's accuracy.txt (like ours) does not: its length is TEST09's
            assert model not in cfg["accuracy-upper-limit"] or cfg["accuracy-upper-limit"][model][0] not in pairs
            continue
        low, high = acc.length_range
        assert pairs[acc.length_metric] == pytest.approx(acc.length_reference * low), model
        assert cfg["accuracy-upper-limit"][model] == (acc.length_metric, pytest.approx(acc.length_reference * high))


def _conf_seeds(path):
    with open(path, encoding="utf-8") as f:
        found = dict(re.findall(r"^\*\.\*\.(\w+_rng_seed)\s*=\s*(\d+)", f.read(), re.M))
    return Seeds(*(int(found[k]) for k in ("qsl_rng_seed", "sample_index_rng_seed", "schedule_rng_seed")))


Seeds = rounds.Seeds


@pytest.mark.parametrize("name", ["4.1", "5.0", "5.1", "6.1"])
def test_seeds_are_the_rounds_mlperf_conf(name):
    """v6.0's seeds are only in the master checker (master's mlperf.conf already has v6.1's)."""
    rnd = ROUNDS[name]
    folder = os.path.join(SHARED, rnd.shared_copy)
    conf = next(p for p in (os.path.join(folder, "loadgen", "mlperf.conf"), os.path.join(folder, "mlperf.conf"))
                if os.path.isfile(p))
    assert _conf_seeds(conf) == rnd.seeds


def test_the_table_is_frozen():
    with pytest.raises(Exception):
        ROUNDS["6.1"].name = "6.2"


ROUND_STEPS = ("run-mlperf-inference-app", "app-mlperf-inference", "get-mlperf-inference-loadgen",
               "get-mlperf-inference-src", "generate-mlperf-inference-submission",
               "run-mlperf-inference-submission-checker")


@pytest.mark.parametrize("step", ROUND_STEPS)
def test_every_round_step_has_a_variation_per_round_and_no_default(step):
    """Adding a round: its entry in ROUNDS, then `r<name>` in these manifests (this test names them)."""
    import yaml
    with open(os.path.join(ROOT, "script", step, "_cm.yaml"), encoding="utf-8") as f:
        m = yaml.safe_load(f)
    variations = m["variations"]
    for rnd in ROUNDS.values():
        v = variations.get(rnd.tag[1:])
        assert v and v["group"] == "round" and v["env"] == {"CM_MLPERF_INFERENCE_VERSION": rnd.name}, (step, rnd)
        assert not v.get("default"), (step, rnd)       # no round given: validate settles it
    rounds_there = {k for k, v in variations.items() if v.get("group") == "round" and not k.endswith(".#")}
    assert rounds_there == {r.tag[1:] for r in ROUNDS.values()}, step
    assert "CM_MLPERF_INFERENCE_VERSION" not in (m.get("default_env") or {}), step


def test_all_scenarios_follow_the_round_and_the_benchmark():
    assert rounds.expand_scenarios("all", ROUNDS["4.1"], "llama2-70b-99") == ["Offline", "Server"]
    assert rounds.expand_scenarios("all", ROUNDS["5.1"], "llama2-70b-99") == ["Offline", "Server"]     # as before v6
    assert rounds.expand_scenarios("ALL", ROUNDS["6.1"], "llama2-70b-99.9") == ["Offline", "Server", "Interactive"]
    assert rounds.expand_scenarios("all", ROUNDS["6.1"], "llama3.1-8b-edge") == ["Offline", "SingleStream"]
    assert rounds.expand_scenarios("Offline, Server", ROUNDS["6.1"], "llama2-70b-99.9") == ["Offline", "Server"]


def test_validate_result_settles_refuses_or_keeps():
    r = rounds.validate_hook_result({"CM_MLPERF_MODEL": "llama2-70b-99"})
    assert r["variations"] == ["r6.0"] and "no round given" in r["note"] and "v6.1 has llama2-70b-99.9" in r["note"]
    r = rounds.validate_hook_result({"CM_MLPERF_MODEL": "llama2-70b-99", "CM_MLPERF_INFERENCE_VERSION": "6.1"})
    assert r["return"] == 1 and "llama2-70b-99.9" in r["error"] and "_r6.0" in r["error"]
    assert rounds.validate_hook_result({"CM_MLPERF_INFERENCE_VERSION": "5.1"}) == {"return": 0}
    assert rounds.validate_hook_result({"CM_MLPERF_INFERENCE_VERSION": "9.9"})["return"] == 1


def test_a_step_that_runs_a_benchmark_settles_one_and_says_why():
    r = rounds.validate_hook_result({}, benchmark=True)
    assert r["variations"] == ["r6.1", "model.llama2-70b-99.9"]
    assert "benchmark llama2-70b-99.9: no --model given" in r["note"] and "no round given" in r["note"]
    r = rounds.validate_hook_result({"CM_MLPERF_INFERENCE_VERSION": "5.0"}, benchmark=True)
    assert r["variations"] == ["model.llama2-70b-99"] and "round v5.0's benchmarks" in r["note"]
    assert rounds.validate_hook_result({"CM_MLPERF_MODEL": "llama2-70b-99.9"}, benchmark=True)["variations"] == ["r6.1"]


def test_a_benchmark_the_chain_cannot_run_yet_is_refused_before_anything_runs(monkeypatch):
    """A table entry can come before its steps (runnable says why): such a benchmark is refused,
    and a run without --model takes the round's first that runs."""
    import dataclasses
    not_yet = dataclasses.replace(BENCHMARKS["llama2-70b-99.9"], runnable="its steps are being built")
    monkeypatch.setitem(BENCHMARKS, "llama2-70b-99.9", not_yet)
    r = rounds.validate_hook_result({"CM_MLPERF_MODEL": "llama2-70b-99.9", "CM_MLPERF_INFERENCE_VERSION": "6.1"},
                                    benchmark=True)
    assert r["return"] == 1 and "--model=llama2-70b-99.9: this tool cannot run it yet: its steps are being built" \
        in r["error"] and "fix: choose one of llama3.1-8b, llama3.1-8b-edge" in r["error"]
    r = rounds.validate_hook_result({"CM_MLPERF_INFERENCE_VERSION": "6.1"}, benchmark=True)
    assert r["variations"] == ["model.llama3.1-8b"]


def test_docs_table_says_what_the_table_says():
    with open(os.path.join(ROOT, "docs", "rounds.md"), encoding="utf-8") as f:
        rows = {line.split("|")[1].strip().split()[0]: line for line in f if line.startswith("| v")}
    assert list(rows) == [r.version for r in ROUNDS.values()]
    for r in ROUNDS.values():
        row = rows[r.version]
        if r.loadgen_max.endswith(".999"):
            assert f"{r.loadgen_min} .. {r.loadgen_max.rsplit('.', 1)[0]}.x ({r.loadgen_pin})" in row, row
        else:
            assert f"{r.loadgen_min} .. {r.loadgen_max} ({r.loadgen_pin})" in row, row
        for b in r.benchmarks:
            assert b in row, (b, row)
        assert (r.src_ref[:7] if r.src_is_commit else f"tag {r.src_ref}") in row, row
