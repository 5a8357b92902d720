"""llama3.1-8b (datacenter) and llama3.1-8b-edge (edge) trees from the fixture results (a toy SUT on
each round's real LoadGen, make_results.py) through the round's official checker: v5.1.1's script,
master's package for v6.0 and v6.1."""
import json
import os
import re
import shutil
from html.parser import HTMLParser

import pytest

from submission_fixtures import FIX, build, inference_source, metadata, set_p99
from mlperf_llm.submission.checker import format_report, run_checker
from mlperf_llm.submission.errors import SubmissionError
from mlperf_llm.submission.logs import read_detail_log
from mlperf_llm.submission.rules import find_violations
from mlperf_llm.submission.tree import BuildRequest, build_submission

SYS = "cpu_2c-reference-cpu-vllm"
ROUNDS = ("v5.1", "v6.0", "v6.1")
CATEGORY = {"llama3.1-8b": "datacenter", "llama3.1-8b-edge": "edge"}
SCENARIOS = {"llama3.1-8b": {"Offline", "Server", "Interactive"}, "llama3.1-8b-edge": {"Offline", "SingleStream"}}
# what a 16-row test run cannot pass, by checker: v5.1.1 also says "... has issues" (result_valid)
FULL_LENGTH = {"accuracy_covers_dataset", "length_sum", "min_duration", "offline_samples_per_query",
               "performance_sample_count"}


def build31(tmp_path, version, model, division="closed", **kw):
    """As the chain builds it with --category=<the benchmark's>: metadata and system description agree."""
    return build(tmp_path, version, division, results=model, category=CATEGORY[model],
                 system_type=CATEGORY[model], **kw)


def check(report, version, tmp_path):
    return run_checker(report.submission_dir, version, "cm4mlperf", inference_source(version)[0],
                       workdir=str(tmp_path / "chk"))


def files_of(folder):
    return {os.path.relpath(os.path.join(d, f), folder) for d, _, fs in os.walk(folder) for f in fs}


@pytest.mark.parametrize("version", ROUNDS)
@pytest.mark.parametrize("model", sorted(CATEGORY))
def test_tree_passes_the_rounds_checker_but_the_full_length_checks(tmp_path, version, model):
    report = build31(tmp_path, version, model)
    sub = report.submitter_dir
    v6 = version.startswith("v6")
    assert set(os.listdir(os.path.join(sub, "results", SYS, model))) == SCENARIOS[model]
    system = json.load(open(os.path.join(sub, "systems", f"{SYS}.json")))
    assert system["system_type"] == CATEGORY[model]
    test06 = sorted(p for p in files_of(sub) if "TEST06" in p.split(os.sep))
    if model == "llama3.1-8b":              # datacenter: TEST06 for every scenario, where the layout keeps it
        where = (lambda s: f"results/{SYS}/{model}/{s}/TEST06/") if v6 else (
            lambda s: f"compliance/{SYS}/{model}/{s}/TEST06/")
        assert test06 == sorted(where(s) + f for s in SCENARIOS[model]
                                for f in ("accuracy/mlperf_log_accuracy.json", "verify_accuracy.txt"))
    else:                                   # edge: no compliance test at all
        assert test06 == [] and not os.path.exists(os.path.join(sub, "compliance"))
    assert find_violations(report.submission_dir) == []
    assert not [w for w in report.warnings if "category" in w or "system_type" in w]

    r = check(report, version, tmp_path)
    text = format_report(r)
    assert r.errors == [] and r.precheck == [], text
    expected = FULL_LENGTH | ({"early_stopping"} if model == "llama3.1-8b" else set()) | (
        {"result_valid"} if version == "v5.1" else set())
    assert set(r.full_length_checks) == expected, text
    assert r.passed and "Verdict: PASS except" in text
    assert "llama3.1-8b-edge 5000" in text and "GEN_LEN of llama3.1-8b" in text    # the reasons, from the table


def test_summary_and_readmes_show_the_benchmarks_metrics(tmp_path):
    report = build31(tmp_path, "v6.1", "llama3.1-8b-edge")
    rows = _results_table(report.summary_html)
    assert rows[0][2:] == ["Offline", "SingleStream"]
    assert rows[1] == ["Accuracy", "Metric", "Performance"] * 2
    model, target, *cells = rows[2]
    assert model == "llama3.1-8b-edge"
    assert target == ("ROUGE1: 38.6694, ROUGE2: 15.9536, ROUGEL: 24.3911, ROUGELSUM: 35.7628, "
                      "GEN_LEN: 2746001.7..3356224.3")
    accuracy = "ROUGE1: 88.4513  ROUGE2: 77.5655  ROUGEL: 88.1769  ROUGELSUM: 88.4513  GEN_LEN: 9772"
    assert cells[0] == cells[3] == accuracy
    assert cells[1] == "Tokens/s" and cells[4] == "Latency (ms)"
    p90 = read_detail_log(os.path.join(FIX, "results-v6.1-llama3.1-8b-edge", "llama3.1-8b-edge", "SingleStream",
                                       "performance", "run_1", "mlperf_log_detail.txt"))
    assert float(cells[5]) == pytest.approx(p90.get("result_90.00_percentile_latency_ns") / 1e6, rel=1e-5)
    page = open(report.summary_html).read()
    assert ">Edge<" in page
    assert ("llama3.1-8b-edge SingleStream: GEN_LEN reference 3051113 is for all 5000 rows; this test scored 16: "
            "x 16/5000 = 9763.5616") in page
    readme = open(os.path.join(report.submitter_dir, "results", SYS, "llama3.1-8b-edge", "SingleStream",
                               "README.md")).read()
    assert "`ROUGELSUM`: `88.4513`, Required accuracy for closed division `>= 35.76276`" in readme
    assert re.search(r"`GEN_LEN`: `9772`, Required accuracy for closed division \(GEN_LEN reference 3051113 is "
                     r"for all 5000 rows; this test scored 16: [^)]*\) `>= 8787.20544 and <= 10739.91776`\n", readme)
    assert "`90th percentile latency (ms)`: `" in readme and "`Mean latency (ms)`" in readme
    weights = json.load(open(os.path.join(report.submitter_dir, "results", SYS, "llama3.1-8b-edge", "Offline",
                                          "measurements.json")))["starting_weights_filename"]
    assert weights == "toy SUT of the test fixture (no weights)"       # the metadata's, when given
    code = open(os.path.join(report.submitter_dir, "src", "llama3.1-8b-edge", "reference", "README.md")).read()
    assert "5000 rows, step `get,dataset,cnndm,_edge`" in code and "summarize the following news article" in code
    assert "ROUGELSUM, GEN_LEN" in code and "TEST06" not in code and "SingleStream: each answer is streamed" in code


def test_starting_weights_default_to_the_benchmarks_checkpoint(tmp_path):
    report = build31(tmp_path, "v6.1", "llama3.1-8b", starting_weights_filename="")
    doc = json.load(open(os.path.join(report.submitter_dir, "results", SYS, "llama3.1-8b", "Server",
                                      "measurements.json")))
    assert doc["starting_weights_filename"] == "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct"


def _with_accuracy(report, model, edit):
    """Rewrite accuracy.txt of every scenario of the built tree (its hash line kept)."""
    folder = os.path.join(report.submitter_dir, "results", SYS, model)
    for scenario in os.listdir(folder):
        path = os.path.join(folder, scenario, "accuracy", "accuracy.txt")
        text = open(path).read()
        open(path, "w").write(edit(text))


@pytest.mark.parametrize("version", ["v5.1", "v6.1"])
def test_gen_len_outside_the_range_scaled_to_the_rows_scored_is_an_error_in_a_closed_tree(tmp_path, version):
    report = build31(tmp_path, version, "llama3.1-8b-edge", "closed")
    _with_accuracy(report, "llama3.1-8b-edge", lambda t: t.replace("'gen_len': 9772", "'gen_len': 4000"))
    r = check(report, version, tmp_path)
    assert not r.passed and "length_sum" not in r.full_length_checks
    assert sorted(re.sub(r"^.*/llama3.1-8b-edge/(\w+)/.*$", r"\1", f.message) for f in r.errors) == [
        "Offline", "SingleStream"], format_report(r)      # v5.1.1's "accuracy not valid": explained by them
    assert all(f.message.endswith("(GEN_LEN is a sum over the data set: 4000 for 16 of 5000 rows, against "
                                  "8787.21..10739.9 scaled to them)") for f in r.errors)


def test_gen_len_outside_its_scaled_range_is_a_warning_in_an_open_tree(tmp_path):
    """An open run (the embedded stand-in's answers are shorter than Llama-3.1's) takes any accuracy:
    the accuracy step judged it by its own targets."""
    report = build31(tmp_path, "v6.1", "llama3.1-8b-edge", "open")
    _with_accuracy(report, "llama3.1-8b-edge", lambda t: t.replace("'gen_len': 9772", "'gen_len': 4000"))
    r = check(report, "v6.1", tmp_path)
    assert not r.errors, format_report(r)
    assert [f for f in r.findings if f.kind == "warning" and "GEN_LEN is a sum over the data set: 4000" in f.message]


@pytest.mark.parametrize("division", ["closed", "open"])
def test_a_missed_rouge_target_fails_a_closed_tree_only(tmp_path, division):
    """The master checker logs it as a WARNING beside a full-length line: not hidden in a closed tree."""
    report = build31(tmp_path, "v6.1", "llama3.1-8b", division)
    _with_accuracy(report, "llama3.1-8b", lambda t: t.replace("'rougeLsum': '88.4513'", "'rougeLsum': '10.0'"))
    r = check(report, "v6.1", tmp_path)
    missed = [f for f in r.findings if "accuracy not met: expected=35.435070" in f.message]
    assert len(missed) == 3
    if division == "closed":
        assert not r.passed and {f.kind for f in missed} == {"error"}
        assert missed[0].message.endswith("(closed division: the accuracy target is missed)")
    else:
        assert r.passed and {f.kind for f in missed} == {"warning"}


def test_precheck_applies_llama31s_interactive_limits(tmp_path):
    report = build31(tmp_path, "v6.1", "llama3.1-8b")
    log = os.path.join(report.submitter_dir, "results", SYS, "llama3.1-8b", "Interactive", "performance",
                       "run_1", "mlperf_log_detail.txt")
    set_p99(log, 700, 20)           # TTFT over Interactive's 500 ms, under Server's 2000
    r = check(report, "v6.1", tmp_path)
    assert r.errors == [], format_report(r)
    assert [f.message for f in r.precheck] == [
        "Interactive p99 TTFT 700.0 ms is over the limit of 500 ms (the checker measures Interactive against "
        "Server's limits): lower --interactive_target_qps"]
    assert not r.passed


def test_an_edge_tree_without_singlestream_fails(tmp_path):
    report = build31(tmp_path, "v6.1", "llama3.1-8b-edge")
    shutil.rmtree(os.path.join(report.submitter_dir, "results", SYS, "llama3.1-8b-edge", "SingleStream"))
    r = check(report, "v6.1", tmp_path)
    assert [f.message.split(" (")[0] for f in r.precheck] == ["closed division of v6.1 needs SingleStream"]
    assert not r.passed


def test_category_follows_the_benchmarks(tmp_path):
    """An edge benchmark described as datacenter (the defaults): the tree says edge, with warnings."""
    report = build(tmp_path, "v6.1", "closed", results="llama3.1-8b-edge")        # metadata/system: datacenter
    system = json.load(open(os.path.join(report.submitter_dir, "systems", f"{SYS}.json")))
    assert system["system_type"] == "edge"
    assert ">Edge<" in open(report.summary_html).read()
    assert [w.split(":")[0] for w in report.warnings if "replaced by 'edge'" in w] == [
        "category 'datacenter' replaced by 'edge'", "systems JSON system_type='datacenter' replaced by 'edge', the "
        "category of llama3.1-8b-edge (describe the system with --category=edge)"]


def test_one_tree_one_category(tmp_path):
    res = tmp_path / "results"
    for model in CATEGORY:
        shutil.copytree(os.path.join(FIX, f"results-v6.1-{model}", model), res / model)
    req = BuildRequest(str(res), os.path.join(FIX, "system.json"), metadata("v6.1", "open"), str(tmp_path / "out"))
    with pytest.raises(SubmissionError, match=r"more than one category \(datacenter: llama3.1-8b; edge: "
                                              r"llama3.1-8b-edge\).*build one tree per category"):
        build_submission(req)
    assert not os.path.exists(tmp_path / "out")


def test_test06_of_an_edge_run_is_left_out(tmp_path):
    res = tmp_path / "results"
    shutil.copytree(os.path.join(FIX, "results-v6.1-llama3.1-8b-edge"), res)
    shutil.copytree(os.path.join(FIX, "results-v6.1-llama3.1-8b", "llama3.1-8b", "Offline", "TEST06"),
                    res / "llama3.1-8b-edge" / "Offline" / "TEST06")
    report = build_submission(BuildRequest(str(res), os.path.join(FIX, "system.json"),
                                           metadata("v6.1", "closed", category="edge"), str(tmp_path / "out")))
    assert "llama3.1-8b-edge/Offline: TEST06 left out of the tree (llama3.1-8b-edge has no TEST06 among its " \
           "compliance tests)" in report.warnings
    assert not [p for p in files_of(report.submission_dir) if "TEST06" in p]


def test_a_closed_datacenter_tree_needs_test06(tmp_path):
    res = tmp_path / "results"
    shutil.copytree(os.path.join(FIX, "results-v5.1-llama3.1-8b"), res)
    shutil.rmtree(res / "llama3.1-8b" / "Server" / "TEST06")
    req = BuildRequest(str(res), os.path.join(FIX, "system.json"), metadata("v5.1", "closed"), str(tmp_path / "o"))
    with pytest.raises(SubmissionError, match="llama3.1-8b/Server: TEST06/verify_accuracy.txt is missing"):
        build_submission(req)


class _Table(HTMLParser):
    """The rows of summary.html's results table, each a list of its cells' text."""

    def __init__(self):
        super().__init__()
        self.rows, self.inside, self.cell = [], False, None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.inside = dict(attrs).get("id") == "results"
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag in ("td", "th"):
            self.cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append(self.cell.strip())
            self.cell = None
        elif tag == "table":
            self.inside = False

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def _results_table(path):
    parser = _Table()
    parser.feed(open(path, encoding="utf-8").read())
    return parser.rows
