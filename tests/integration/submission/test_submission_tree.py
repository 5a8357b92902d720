"""The submission tree built from the fixture results (real LoadGen logs of a toy SUT), for each round."""
import hashlib
import json
import os

import pytest

from submission_fixtures import FIX, ROUNDS, build, metadata
from mlperf_llm.submission.errors import SubmissionError
from mlperf_llm.submission.rules import find_violations
from mlperf_llm.submission.tree import BuildRequest, build_submission

SYS = "cpu_2c-reference-cpu-vllm"


def digest_tree(root):
    h = hashlib.sha256()
    for dirpath, dirnames, files in sorted(os.walk(root)):
        dirnames.sort()
        for name in sorted(files):
            p = os.path.join(dirpath, name)
            h.update(p.encode() + open(p, "rb").read())
    return h.hexdigest()


@pytest.mark.parametrize("version", ROUNDS)
@pytest.mark.parametrize("division", ["closed", "open"])
def test_tree_layout_per_round(tmp_path, version, division):
    before = digest_tree(os.path.join(FIX, f"results-{version}"))
    report = build(tmp_path, version, division)
    root = report.submission_dir
    sub = os.path.join(root, division, "cm4mlperf")
    files = {os.path.relpath(os.path.join(d, f), sub) for d, _, fs in os.walk(sub) for f in fs}
    v6 = version.startswith("v6")
    model = "llama2-70b-99.9" if version == "v6.1" else "llama2-70b-99"
    expected = {f"systems/{SYS}.json", f"{'src' if v6 else 'code'}/{model}/reference/README.md",
                "documentation/calibration.md", f"results/{SYS}/summary.html"}
    for sc in ("Offline", "Server") + (("Interactive",) if version in ("v5.1", "v6.1") else ()):
        r = f"results/{SYS}/{model}/{sc}/"
        m = r if v6 else f"measurements/{SYS}/{model}/{sc}/"
        c = r + "TEST06/" if v6 else f"compliance/{SYS}/{model}/{sc}/TEST06/"
        expected |= {m + "README.md", m + "user.conf", m + ("measurements.json" if v6 else f"{SYS}_reference_{sc}.json"),
                     r + "performance/run_1/mlperf_log_summary.txt", r + "performance/run_1/mlperf_log_detail.txt",
                     r + "accuracy/accuracy.txt", r + "accuracy/mlperf_log_accuracy.json",
                     r + "accuracy/mlperf_log_summary.txt", r + "accuracy/mlperf_log_detail.txt",
                     c + "verify_accuracy.txt", c + "accuracy/mlperf_log_accuracy.json"}
        if version == "v4.1":
            expected.add(m + "mlperf.conf")
    assert files == expected
    assert os.path.isfile(os.path.join(root, "README.md"))
    assert find_violations(root) == []
    assert digest_tree(os.path.join(FIX, f"results-{version}")) == before        # inputs untouched
    assert not [n for n in os.listdir(tmp_path) if n != "mlperf_submission"]     # no partial folder left
    system = json.load(open(os.path.join(sub, "systems", f"{SYS}.json")))
    assert (system["division"], system["submitter"]) == (division, "cm4mlperf")


def test_accuracy_log_truncated_with_the_hash_of_the_original(tmp_path):
    report = build(tmp_path, "v5.1", "closed")
    acc = os.path.join(report.submitter_dir, "results", SYS, "llama2-70b-99", "Server", "accuracy")
    original = os.path.join(FIX, "results-v5.1", "llama2-70b-99", "Server", "accuracy", "mlperf_log_accuracy.json")
    digest = hashlib.sha256(open(original, "rb").read()).hexdigest()
    assert open(os.path.join(acc, "accuracy.txt")).read().rstrip().endswith(f"hash={digest}")
    assert os.path.getsize(os.path.join(acc, "mlperf_log_accuracy.json")) <= 2 * 4096 + 7


def test_measurements_json_and_readme(tmp_path):
    report = build(tmp_path, "v5.1", "closed", step_cache_keys={"app-mlperf-inference": "0123abcd"},
                   component_versions={"vLLM": "0.32.0"},
                   quantization={"scheme": "gptq-w4a16", "group_size": 64, "tool": "llmcompressor 0.14.0.1"})
    meas = os.path.join(report.submitter_dir, "measurements", SYS, "llama2-70b-99", "Offline")
    j = json.load(open(os.path.join(meas, f"{SYS}_reference_Offline.json")))
    for key in ("input_data_types", "retraining", "starting_weights_filename", "weight_data_types",
                "weight_transformations"):
        assert j[key], key
    assert j["weight_data_types"] == "int4"
    assert j["weight_transformations"].startswith("GPTQ W4A16, group size 64")
    readme = open(os.path.join(meas, "README.md")).read()
    assert "cm run script --tags=run-mlperf,inference,_full,_embedded" in readme
    assert "* app-mlperf-inference: `0123abcd`" in readme and "* vLLM: 0.32.0" in readme
    assert "`ROUGE1`: `89.5667`, Required accuracy for closed division `>= 43.98689`" in readme
    assert "`TOKENS_PER_SAMPLE`: `294.1`, Required accuracy for closed division `>= 265.005 and <= 323.895`" in readme
    assert "`Tokens per second`: `" in readme and "INVALID (min duration not met)" in readme
    calib = open(os.path.join(report.submitter_dir, "documentation", "calibration.md")).read()
    assert "### GPTQ W4A16" in calib and "group size 64" in calib and "llmcompressor 0.14.0.1" in calib


def test_readme_results_table(tmp_path):
    report = build(tmp_path, "v5.0", "open")
    text = open(os.path.join(report.submission_dir, "README.md")).read()
    assert "| llama2-70b-99 | Offline | ROUGE1: 89.5667, ROUGE2: 77.7229, ROUGEL: 88.7172, TOKENS_PER_SAMPLE: 294.1 |" in text
    assert "| llama2-70b-99 | Server |" in text and "| Tokens/s | INVALID |" in text


def test_embedded_targets_from_metadata(tmp_path):
    report = build(tmp_path, "v5.1", "open", accuracy_targets={"ROUGE1": [90.0, None]},
                   accuracy_targets_label="the embedded data set's reference x 0.99")
    readme = open(os.path.join(report.submitter_dir, "measurements", SYS, "llama2-70b-99", "Server",
                               "README.md")).read()
    assert "`ROUGE1`: `89.5667`, Required accuracy (the embedded data set's reference x 0.99) `>= 90` (not met)" in readme


def test_embedded_targets_from_the_accuracy_steps_json(tmp_path):
    import shutil
    res = tmp_path / "results"
    shutil.copytree(os.path.join(FIX, "results-v5.1"), res)
    doc = {"verdicts": [{"model": "llama2-70b-99", "source": "embedded data set reference",
                         "label": "Required accuracy (embedded data set reference x0.99)", "passed": True,
                         "metrics": [{"metric": "ROUGE1", "value": 89.5667, "minimum": 40.5, "maximum": None,
                                      "passed": True},
                                     {"metric": "TOKENS_PER_SAMPLE", "value": 294.1, "minimum": 200.0,
                                      "maximum": 400.0, "passed": True}]}]}
    (res / "llama2-70b-99" / "Server" / "accuracy" / "accuracy.json").write_text(json.dumps(doc))
    report = build_submission(BuildRequest(str(res), os.path.join(FIX, "system.json"), metadata("v5.1", "open"),
                                           str(tmp_path / "out")))
    readme = open(os.path.join(report.submitter_dir, "measurements", SYS, "llama2-70b-99", "Offline",
                               "README.md")).read()
    assert "`ROUGE1`: `89.5667`, Required accuracy (embedded data set reference x0.99) `>= 40.5`\n" in readme
    assert "`TOKENS_PER_SAMPLE`: `294.1`, Required accuracy (embedded data set reference x0.99) `>= 200 and <= 400`" in readme
    assert not os.path.exists(os.path.join(report.submitter_dir, "results", SYS, "llama2-70b-99", "Server",
                                           "accuracy", "accuracy.json"))     # the checker wants 4 files only


def test_empty_test06_log_is_flagged(tmp_path):
    """LoadGen 4.1.x wheels ignore audit.config's accuracy_log_* keys and log `[\n]`: a vacuous pass."""
    import shutil
    res = tmp_path / "results"
    shutil.copytree(os.path.join(FIX, "results-v4.1"), res)
    (res / "llama2-70b-99" / "Server" / "TEST06" / "accuracy" / "mlperf_log_accuracy.json").write_text("[\n]")
    report = build_submission(BuildRequest(str(res), os.path.join(FIX, "system.json"), metadata("v4.1", "closed"),
                                           str(tmp_path / "out")))
    assert [w for w in report.warnings if "passed vacuously" in w][0].startswith("llama2-70b-99/Server TEST06")
    assert "passed vacuously" in open(report.summary_html).read()
    assert not any("passed vacuously" in w for w in build(tmp_path / "ok", "v4.1", "closed").warnings)


def test_rebuild_replaces_our_tree_but_not_a_foreign_folder(tmp_path):
    build(tmp_path, "v5.1", "open")
    build(tmp_path, "v5.1", "closed")                     # our own tree: replaced
    assert os.listdir(tmp_path / "mlperf_submission") == ["closed", "README.md"] or \
        sorted(os.listdir(tmp_path / "mlperf_submission")) == ["README.md", "closed"]
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    req = BuildRequest(os.path.join(FIX, "results-v5.1"), os.path.join(FIX, "system.json"),
                       metadata("v5.1", "open"), str(foreign))
    with pytest.raises(SubmissionError, match="--clean"):
        build_submission(req)
    assert (foreign / "notes.txt").read_text() == "keep me"
    assert sorted(os.listdir(tmp_path)) == ["mine", "mlperf_submission"]


def test_incomplete_results_name_every_missing_part(tmp_path):
    import shutil
    res = tmp_path / "results"
    shutil.copytree(os.path.join(FIX, "results-v5.1"), res)
    shutil.rmtree(res / "llama2-70b-99" / "Server" / "accuracy")
    shutil.rmtree(res / "llama2-70b-99" / "Offline" / "TEST06")
    req = BuildRequest(str(res), os.path.join(FIX, "system.json"), metadata("v5.1", "closed"),
                       str(tmp_path / "out"))
    with pytest.raises(SubmissionError) as e:
        build_submission(req)
    msg = str(e.value)
    assert "llama2-70b-99/Server: accuracy/ lacks" in msg and "llama2-70b-99/Offline: TEST06" in msg
    assert not os.path.exists(tmp_path / "out")


def test_sut_description_gaps_are_refused(tmp_path):
    system = json.load(open(os.path.join(FIX, "system.json")))
    del system["host_processor_model_name"]
    p = tmp_path / "sys.json"
    p.write_text(json.dumps(system))
    req = BuildRequest(os.path.join(FIX, "results-v5.1"), str(p), metadata("v5.1", "open"), str(tmp_path / "out"))
    with pytest.raises(SubmissionError, match="host_processor_model_name"):
        build_submission(req)


def test_bad_user_conf_line_is_refused(tmp_path):
    import shutil
    res = tmp_path / "results"
    shutil.copytree(os.path.join(FIX, "results-v5.1"), res)
    conf = res / "llama2-70b-99" / "Offline" / "performance" / "run_1" / "user.conf"
    conf.write_text(conf.read_text() + "target_qps 10\n")
    req = BuildRequest(str(res), os.path.join(FIX, "system.json"), metadata("v5.1", "open"), str(tmp_path / "o"))
    with pytest.raises(SubmissionError, match="user.conf:9"):
        build_submission(req)


def test_closed_tree_without_server_is_built_with_a_warning(tmp_path):
    import shutil
    res = tmp_path / "results"
    shutil.copytree(os.path.join(FIX, "results-v5.0"), res)
    shutil.rmtree(res / "llama2-70b-99" / "Server")
    report = build_submission(BuildRequest(str(res), os.path.join(FIX, "system.json"), metadata("v5.0", "closed"),
                                           str(tmp_path / "out")))
    assert "llama2-70b-99: closed division of v5.0 needs scenario(s) Server (Offline + Server), not in the results" in report.warnings


def test_v60_layout_keeps_measurements_and_test06_inside_results(tmp_path):
    report = build_submission(BuildRequest(os.path.join(FIX, "results-v5.1"), os.path.join(FIX, "system.json"),
                                           metadata("v6.0", "closed"), str(tmp_path / "out")))
    sub = report.submitter_dir
    top = sorted(os.listdir(sub))
    assert top == ["documentation", "results", "src", "systems"]          # v6: src/, not code/
    scen = os.path.join(sub, "results", SYS, "llama2-70b-99", "Server")
    assert sorted(os.listdir(scen)) == sorted(["README.md", "user.conf", "measurements.json",
                                               "performance", "accuracy", "TEST06"])
    assert os.path.isfile(os.path.join(scen, "TEST06", "verify_accuracy.txt"))
    assert os.path.getsize(os.path.join(scen, "TEST06", "accuracy", "mlperf_log_accuracy.json")) > 10 * 1024
    assert find_violations(report.submission_dir) == []


def test_logs_of_another_rounds_loadgen_are_flagged(tmp_path):
    report = build_submission(BuildRequest(os.path.join(FIX, "results-v5.0"), os.path.join(FIX, "system.json"),
                                           metadata("v5.1", "open"), str(tmp_path / "out")))
    assert any("qsl_rng_seed 6023615788873153749 is not round v5.1's" in w for w in report.warnings)
    assert not any("qsl_rng_seed" in w for w in build(tmp_path / "ok", "v5.1", "open").warnings)


def test_a_tree_built_again_in_its_folder_says_so_and_names_the_earlier_tarball(tmp_path):
    """The step run again into the same --submission_dir (another --submitter, another results folder)
    replaces the tree it made there: it says so, and names the earlier tree's tarball, which no longer
    holds the tree beside it (it is left: a file the user may have uploaded)."""
    from mlperf_llm.submission.tarball import pack
    first = build(tmp_path, "v5.1", "open", submitter="OrgA")
    assert not [w for w in first.warnings if "was replaced" in w]
    old = pack(first.submission_dir, "OrgA")
    second = build(tmp_path, "v5.1", "open", submitter="OrgB")
    said = [w for w in second.warnings if "was replaced" in w or "earlier tree's tarball" in w]
    assert len(said) == 2 and "submitter OrgA" in said[0] and old.path in said[1], second.warnings
    assert os.path.exists(old.path) and os.listdir(os.path.join(second.submission_dir, "open")) == ["OrgB"]
