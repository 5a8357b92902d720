"""The reproduce-mlperf-inference step through the engine, on fixture submissions.

The replayed chain is a fixture step with the tags of run-mlperf-inference-app that writes what a
real run leaves in its results folder (the LoadGen logs and accuracy.txt of tests/fixtures, real
files) and the record, built by the real capture code from what the engine hands its hook. The
step itself, the engine's sub-run, the tarball, the record and the comparison are all real."""
import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from enginefixtures import Runner, make_repo
from cmengine.registry import Repo
from mlperf_llm.reproduce.record import RECORD_NAME
from mlperf_llm.reproduce.replay import probe_host
from mlperf_llm.submission.inputs import Metadata
from mlperf_llm.submission.tarball import pack
from mlperf_llm.submission.tree import BuildRequest, build_submission

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
FIX = os.path.join(ROOT, "tests", "fixtures", "submission")

APP = ({"tags": ["run-mlperf", "inference", "fixture-app"], "cache": False,
        "input_mapping": {"results_dir": "CM_MLPERF_RESULTS_DIR", "submission_dir": "CM_MLPERF_SUBMISSION_DIR",
                          "model_path": "CM_ML_MODEL_PATH", "model": "CM_MLPERF_MODEL",
                          "device": "CM_MLPERF_DEVICE", "fixture_results": "CM_FIXTURE_RESULTS",
                          "offline_target_qps": "CM_MLPERF_LOADGEN_OFFLINE_TARGET_QPS",
                          "server_target_qps": "CM_MLPERF_LOADGEN_SERVER_TARGET_QPS",
                          "interactive_target_qps": "CM_MLPERF_LOADGEN_INTERACTIVE_TARGET_QPS",
                          "test_sizes": "CM_MLPERF_TEST_SIZES"},
        "default_env": {"CM_MLPERF_DEVICE": "cpu"},
        "deps": [{"tags": "fixture-model"}],
        "variations": {"embedded": {"env": {"CM_MLPERF_EMBEDDED": "yes"}}, "r5.1": {"env": {"CM_MLPERF_ROUND": "5.1"}}}},
       {"customize.py": '''
        import os, shutil
        from mlperf_llm.reproduce import capture, record

        def preprocess(i):
            env = i["env"]
            res = env["CM_MLPERF_RESULTS_DIR"]
            shutil.copytree(env["CM_FIXTURE_RESULTS"], res, dirs_exist_ok=True)
            root = os.path.dirname(os.path.dirname(os.path.dirname(capture.__file__)))
            rec = capture.build(request=i["request"], variations=i["variation_tags"], steps=i["steps"],
                                env=env, results_dir=res, argv=[], project=capture.project_section(
                                    os.path.dirname(root), "fixture"))
            record.write(rec, os.path.join(res, record.RECORD_NAME))
            return {"return": 0}
        '''})
MODEL = {"tags": ["fixture-model"], "cache": True, "new_env_keys": ["CM_ML_MODEL_NAME"],
         "env": {"CM_ML_MODEL_NAME": "fixture-weights"}}


@pytest.fixture
def repo(tmp_path):
    # where the fixture app finds its results and weights: its own defaults, not inputs (a record's
    # inputs outside the benchmark app's are refused by a replay unless trusted: reproduce/trust.py)
    app = ({**APP[0], "default_env": {**APP[0]["default_env"], "CM_FIXTURE_RESULTS": os.path.join(FIX, "results-v5.1"),
                                      "CM_ML_MODEL_PATH": str(tmp_path / "model")}}, APP[1])
    r = make_repo(str(tmp_path / "repos"), {"fixture-app": app, "fixture-model": MODEL})
    shutil.copytree(os.path.join(ROOT, "script", "reproduce-mlperf-inference"),
                    os.path.join(r.path, "script", "reproduce-mlperf-inference"))
    return r


def original_run(tmp_path, repo, with_record=True, device="cpu", readme_command=None):
    """The submitter's side: the chain, then the submission tree and its tarball. Without its record,
    the measurement READMEs hold `readme_command` (the command as the run recorded it, else none)
    and the cache keys of the steps the run used, as the real chain writes them."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "w.safetensors").write_bytes(b"weights")
    runner = Runner([repo], str(tmp_path / "cache-submitter"))
    res = tmp_path / "submitter" / "mlperf_results"
    inputs = dict(model="llama2-70b-99", device=device)
    r = runner.run("run-mlperf,inference,_embedded", results_dir=str(res), **inputs)
    assert r["return"] == 0, r.get("error", "") + runner.output
    meta = json.load(open(os.path.join(FIX, "metadata.json")))
    steps = json.load(open(res / RECORD_NAME))["steps"]
    meta["step_cache_keys"] = {s["script"]: s["key"] for s in steps}
    if readme_command is not None:
        meta["command"] = readme_command(inputs)
    if not with_record:
        os.unlink(res / RECORD_NAME)
    report = build_submission(BuildRequest(str(res), os.path.join(FIX, "system.json"), Metadata.from_dict(meta),
                                           str(tmp_path / "submitter" / "mlperf_submission")))
    return pack(report.submission_dir, "cm4mlperf").path


@pytest.fixture
def replay(tmp_path, repo, capsys):
    def run(source, **kw):
        runner = Runner([repo], str(tmp_path / "cache-replayer"))
        capsys.readouterr()
        r = runner.run("reproduce,mlperf,inference", **{"from": source, "results_dir": str(tmp_path / "rep"), **kw})
        return r, runner.output + capsys.readouterr().out   # what the engine said, and what the hooks printed
    return run


def test_a_tarball_is_replayed_and_every_test_compared(tmp_path, repo, replay):
    tarball = original_run(tmp_path, repo)
    r, out = replay(tarball)
    assert r["return"] == 0, r.get("error", "") + out
    assert "Every recorded input can be had here." in out
    report = json.load(open(tmp_path / "rep" / "reproduction.json"))
    assert report["differing_inputs"] == [] and report["accuracy_expected_exact"] is True
    assert report["accuracy_equal"] is True
    tests = {(t["scenario"], t["mode"]) for t in report["tests"]}
    assert tests == {(s, m) for s in ("Interactive", "Offline", "Server") for m in ("accuracy", "performance")}
    acc = [t for t in report["tests"] if t["mode"] == "accuracy"]
    assert {t["metric"] for t in acc} == {"ROUGE1", "ROUGE2", "ROUGEL", "TOKENS_PER_SAMPLE"}
    assert all(t["recorded"] == t["reproduced"] and t["expected_exact"] for t in acc)
    perf = [t for t in report["tests"] if t["mode"] == "performance" and "tokens_per_second" in t["metric"]]
    assert perf and all(t["ratio"] == 1.0 and not t["expected_exact"] for t in perf)
    assert "ROUGE1" in out and "Offline performance" in out
    # the replay ran the recorded chain (its variation and inputs) into --results_dir
    here = json.load(open(tmp_path / "rep" / "results" / RECORD_NAME))
    assert "embedded" in here["request"]["variations"] and here["request"]["inputs"]["model"] == "llama2-70b-99"
    assert os.path.isdir(tmp_path / "rep" / "results" / "llama2-70b-99" / "Offline")


def test_a_tampered_model_hash_is_reported_as_a_differing_input(tmp_path, repo, replay):
    tarball = original_run(tmp_path, repo)
    tree = tmp_path / "tampered"
    with tarfile.open(tarball) as t:
        t.extractall(tree)
    records = [os.path.join(d, f) for d, _, fs in os.walk(tree) for f in fs if f == RECORD_NAME]
    assert records
    for p in records:
        data = json.load(open(p))
        data["model"]["sha256"] = "0" * 64
        json.dump(data, open(p, "w"))
    r, out = replay(str(tree))
    assert r["return"] == 0, r.get("error", "") + out
    report = json.load(open(tmp_path / "rep" / "reproduction.json"))
    diff = [d for d in report["differing_inputs"] if d["name"] == "model checkpoint (content sha256)"]
    assert diff and diff[0]["recorded"] == "0" * 64 and diff[0]["affects_accuracy"]
    assert report["accuracy_expected_exact"] is False
    assert "model checkpoint (content sha256): 0000" in out


def test_a_submission_without_a_record_or_command_gets_a_message_not_a_traceback(tmp_path, repo, replay):
    tarball = original_run(tmp_path, repo, with_record=False, readme_command=lambda inputs: "")
    r, out = replay(tarball)
    assert r["return"] != 0
    assert "holds no reproduction record" in r["error"] and "llama2-70b-99/Offline" in r["error"]
    assert "older cm4mlperf-llm" in r["error"] and "Traceback" not in r["error"] + out
    assert not os.path.exists(tmp_path / "rep" / "reproduction.json")


def readme_command(inputs):
    """The command as this tool's README records it: the run's tags and inputs, its paths left out."""
    return ("cm run script --tags=run-mlperf,inference,_embedded " +
            " ".join(f"--{k}={v}" for k, v in inputs.items()) +
            " --quiet   # left out (paths of the submitting machine): --results_dir, --submission_dir")


def test_a_submission_of_ours_without_its_record_is_replayed_from_its_readme(tmp_path, repo, replay):
    """Every record removed: the command the measurement READMEs record runs again, the round the
    results page names is pinned, and the steps' cache keys the READMEs list are the inputs compared."""
    tarball = original_run(tmp_path, repo, with_record=False, readme_command=readme_command)
    r, out = replay(tarball)
    assert r["return"] == 0, r.get("error", "") + out
    assert "replayed from the command its measurement READMEs record" in out
    report = json.load(open(tmp_path / "rep" / "reproduction.json"))
    assert report["replayed_from"] == "measurement README" and report["inputs_by"] == "cache keys"
    assert report["inputs_compared"] is True and report["differing_inputs"] == []
    assert report["accuracy_equal"] is True and report["accuracy_expected_exact"] is True
    assert "_r5.1" in report["replay_request"]["tags"]
    acc = [t for t in report["tests"] if t["mode"] == "accuracy"]
    assert {t["metric"] for t in acc} == {"ROUGE1", "ROUGE2", "ROUGEL", "TOKENS_PER_SAMPLE"}
    assert all(t["recorded"] == t["reproduced"] for t in acc)
    assert "Cache keys that differ: none" in out


def test_a_readme_replay_names_the_step_whose_cache_key_differs(tmp_path, repo, replay):
    """The replay runs with another model than the one the README's key was made with: that step's
    key differs, is named, and accuracy is no longer expected to be exact."""
    tarball = original_run(tmp_path, repo, with_record=False, readme_command=readme_command)
    fixture_model = os.path.join(repo.path, "script", "fixture-model", "_cm.yaml")
    text = open(fixture_model).read()
    assert "fixture-weights" in text
    open(fixture_model, "w").write(text.replace("fixture-weights", "other-weights"))
    r, out = replay(tarball)
    assert r["return"] == 0, r.get("error", "") + out
    report = json.load(open(tmp_path / "rep" / "reproduction.json"))
    names = [d["name"] for d in report["differing_inputs"]]
    assert "cache key of fixture-model" in names
    assert report["accuracy_expected_exact"] is (not any(d["affects_accuracy"] for d in report["differing_inputs"]))


def test_a_gpu_result_is_refused_on_a_machine_without_gpu_unless_asked(tmp_path, repo, replay):
    if probe_host().gpu_count:
        pytest.skip("this machine has a GPU: the refusal cannot happen here")
    tarball = original_run(tmp_path, repo, device="cuda")
    r, out = replay(tarball)
    assert r["return"] != 0 and "--allow_device_change=yes" in r["error"] and "no GPU" in r["error"]
    r, out = replay(tarball, allow_device_change="yes")
    assert r["return"] == 0, r.get("error", "") + out
    assert "device cuda -> cpu" in out
    report = json.load(open(tmp_path / "rep" / "reproduction.json"))
    assert any(d["name"] == "input device" for d in report["differing_inputs"])


def test_what_is_not_a_submission_is_named(tmp_path, repo, replay):
    (tmp_path / "junk").mkdir()
    r, _ = replay(str(tmp_path / "junk"))
    assert r["return"] != 0 and "not an MLPerf submission" in r["error"]
    r, _ = replay(str(tmp_path / "nothing.tar.gz"))
    assert r["return"] != 0 and "no such file or folder" in r["error"]
    r, _ = replay("")
    assert r["return"] != 0 and "pass --from=PATH" in r["error"]


PUBLISHED = os.path.join(ROOT, "..", "shared", "published-results")


@pytest.mark.parametrize("folder, words", [
    ("nm-v4.1-fp8", ["round v4.1", "llama2-70b-99 Server", "target 5 QPS", "model nm-testing/Llama-2-70b-chat-hf-FP8",
                     "1 replica(s) of 4 device(s)", "4x NVIDIA H100-SXM-80GB", "missing here: 4x NVIDIA H100"]),
    ("vultr-v5.1-mi325x", ["round v5.1", "Vultr (closed)", "target 114 QPS", "target 103 QPS", "target 59 QPS",
                           "8 replica(s) of 1 device(s)", "quantization=fp8", "offline_mi325x.yaml",
                           "missing here: 8x AMD Instinct MI325X"]),
])
def test_dry_run_on_a_published_folder_prints_its_replay_plan(tmp_path, folder, words):
    """Another submitter's published folder (no record) with --dry-run, through the real step: the
    plan read from its files, after the engine's plan; nothing written beside the folder."""
    runner = Runner([Repo("cm4mlperf-llm", ROOT)], str(tmp_path / "cache"), include_project=True)
    r = runner.plan("reproduce,mlperf,inference", **{"from": os.path.join(PUBLISHED, folder),
                                                     "results_dir": str(tmp_path / "rep")})
    assert r["return"] == 0, r.get("error")
    out = runner.output
    assert out.index("Plan for") < out.index("Published result:")
    for w in words:
        assert w in out, (w, out[-4000:])
    assert not (tmp_path / "rep").exists()


def test_compare_to_sets_a_published_folder_beside_results_one_has(tmp_path, capsys):
    """--compare_to=DIR: the Neural Magic result's published figures against a results folder of this
    tool's layout (here: a copy of the published Server test), test by test; nothing replayed, the
    inputs said to be not compared."""
    runner = Runner([Repo("cm4mlperf-llm", ROOT)], str(tmp_path / "cache"), include_project=True)
    nm = os.path.join(PUBLISHED, "nm-v4.1-fp8")
    published_test = next(p for p in Path(nm).rglob("server") if p.parent.name == "llama2-70b-99"
                          and "results" in p.parts)
    mine = tmp_path / "mine" / "llama2-70b-99" / "Server"
    shutil.copytree(published_test, mine)
    r = runner.run("reproduce,mlperf,inference", **{"from": nm, "results_dir": str(tmp_path / "rep"),
                                                    "compare_to": str(tmp_path / "mine")})
    assert r["return"] == 0, r.get("error")
    report = json.load(open(tmp_path / "rep" / "reproduction.json"))
    assert report["inputs_compared"] is False and report["accuracy_expected_exact"] is False
    rouge = [t for t in report["tests"] if t["metric"] == "ROUGE1"]
    assert rouge and rouge[0]["recorded"] == rouge[0]["reproduced"] == pytest.approx(44.5491)
    ratios = [t["ratio"] for t in report["tests"] if t["mode"] == "performance" and t["ratio"] is not None]
    assert ratios and all(x == pytest.approx(1.0) for x in ratios)
    assert "Inputs: not compared (no reproduction record on both sides)" in capsys.readouterr().out


def test_the_page_beside_the_report_in_a_real_browser(tmp_path, repo, replay):
    """reproduction.html, rendered by Debian's headless Chromium: one table per test with the
    accuracy match and the benchmark's tolerance, and the notes; nothing fetched."""
    import shutil
    import subprocess
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium): the page cannot be opened")
    tarball = original_run(tmp_path, repo)
    r, out = replay(tarball)
    assert r["return"] == 0, r.get("error", "") + out
    page = tmp_path / "rep" / "reproduction.html"
    assert f"page: {page}" in out
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update",
                           f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", f"file://{page}"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert "llama2-70b-99 Offline accuracy" in dom and "llama2-70b-99 Server performance" in dom
    assert "equal to the recorded values" in dom and "expected to match exactly" in dom
    assert dom.count("<table>") == 6 and "Inputs that differ (record): none." in dom
    assert "http://" not in dom and "https://" not in dom          # one folder, opens from disk


def test_a_published_folder_is_refused_before_anything_runs_where_this_machine_lacks_its_system(tmp_path):
    """The Neural Magic folder (no record, made by cm4mlops) replayed on this machine, which has none
    of its 4 H100s: refused with what is missing and the two ways on, nothing written."""
    if probe_host().gpu_count:
        pytest.skip("this host has a GPU: the refusal names other things here")
    runner = Runner([Repo("cm4mlperf-llm", ROOT)], str(tmp_path / "cache"), include_project=True)
    r = runner.run("reproduce,mlperf,inference", **{"from": os.path.join(PUBLISHED, "nm-v4.1-fp8"),
                                                    "results_dir": str(tmp_path / "rep")})
    assert r["return"] != 0
    assert "cannot replay" in r["error"] and "4x NVIDIA H100-SXM-80GB" in r["error"]
    assert "--stand_in=embedded" in r["error"] and "--dry-run" in r["error"] and "Traceback" not in r["error"]
    assert not (tmp_path / "rep").exists()


@pytest.mark.parametrize("folder, want", [
    ("nm-v4.1-fp8", {"tags": "run-mlperf,inference,_full,_r4.1,_all-scenarios", "model": "llama2-70b-99",
                     "scenario": "Server",
                     "server_target_qps": "5", "vllm_model_name": "nm-testing/Llama-2-70b-chat-hf-FP8",
                     "tensor_parallel_size": "4"}),
    ("vultr-v5.1-mi325x", {"tags": "run-mlperf,inference,_full,_r5.1", "model": "llama2-70b-99",
                           "division": "closed", "category": "datacenter", "execution_mode": "valid",
                           "scenario": "Interactive,Offline,Server", "offline_target_qps": "114",
                           "server_target_qps": "103", "interactive_target_qps": "59", "replicas": "8"}),
])
def test_on_a_machine_with_the_published_system_the_plans_command_runs_and_every_figure_is_compared(
        tmp_path, folder, want, capsys):
    """The same folders on a machine with enough GPUs (a Host given to the replay; the chain a stub that
    records what it was asked and copies the published tests as its results): the plan's one command
    (translated from the recorded CM command, or built from the folder's facts), then every
    published figure beside the replay's, in reproduction.json and the page."""
    from mlperf_llm.reproduce.replay import Host, Options, reproduce
    asked = []

    def run_script(request):
        asked.append(request)
        res = Path(request["results_dir"])
        for test in Path(PUBLISHED, folder).rglob("performance"):
            if "results" in test.parts and test.parent.parent.name.startswith("llama2-70b-99"):
                scen = test.parent.name
                dest = res / "llama2-70b-99" / {"offline": "Offline", "server": "Server",
                                                "interactive": "Interactive"}.get(scen.lower(), scen)
                shutil.copytree(test.parent, dest, dirs_exist_ok=True, symlinks=True)
        return {"return": 0}

    # Vultr's GPUs are AMD's: another kind is refused unless asked, and then said
    amd = folder.startswith("vultr")
    opts = Options(source=os.path.join(PUBLISHED, folder), results_dir=str(tmp_path / "rep"), work_dir=str(tmp_path),
                   allow_device_change=amd)
    c = reproduce(opts, run_script, host=Host("x86_64", "cpu", 8))
    (request,) = asked
    assert {k: request.get(k) for k in want} == want
    report = json.load(open(tmp_path / "rep" / "reproduction.json"))
    assert report["replayed_from"] == "published files" and report["inputs_compared"] is False
    perf = [t for t in report["tests"] if t["mode"] == "performance" and t["ratio"] is not None]
    assert perf and all(t["ratio"] == pytest.approx(1.0) for t in perf)
    assert (tmp_path / "rep" / "reproduction.html").is_file()
    assert c.accuracy_expected_exact is False
    assert any("replayed anyway" in n and "MI325X" in n for n in report["notes"]) is amd
