"""accuracy.txt is read by the checker's patterns; accuracy.json carries seed 003's lines."""
import importlib.util
import json
import os
import re
import sys


from mlperf_llm.accuracy.cli import main
from mlperf_llm.accuracy.report import sha256_file

# The format the checker reads (v4.1..v5.1): a line matching .*'rouge1':\s+'?([\d.]+) etc., and hash=.
FORMAT = {"ROUGE1": r".*'rouge1':\s+'?([\d.]+)'?.*", "ROUGE2": r".*'rouge2':\s+'?([\d.]+)'?.*",
          "ROUGEL": r".*'rougeL':\s+'?([\d.]+)'?.*", "TOKENS_PER_SAMPLE": r".*'tokens_per_sample':\s([\d.]+).*"}


def checker_patterns():
    """The checker's own ACC_PATTERN (v5.1.1's, from ../shared), checked to be the format above."""
    from inference_sources import inference_source
    path = os.path.join(inference_source("5.1"), "tools", "submission", "submission_checker.py")
    if os.path.isfile(path):
        sys.path.insert(0, os.path.dirname(path))  # the checker imports its sibling log_parser
        try:
            spec = importlib.util.spec_from_file_location("submission_checker", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        finally:
            sys.path.remove(os.path.dirname(path))
        return {k: module.ACC_PATTERN[k] for k in FORMAT}
    return FORMAT


def test_cli_writes_checker_readable_accuracy_txt(golden, tmp_path):
    rc = main(["evaluate", "--model=llama2-70b-99", "--accuracy-log", golden["log"], "--dataset", golden["dataset"],
               "--tokenizer", golden["tokenizer"], "--output-dir", str(tmp_path), "--workers", "1"])
    assert rc == 0
    lines = (tmp_path / "accuracy.txt").read_text().splitlines()
    found = {}
    for line in lines:
        for metric, pattern in checker_patterns().items():
            m = re.match(pattern, line)
            if m:
                found[metric] = float(m.group(1))
    expected = golden["expected"]
    assert found == {"ROUGE1": expected["rouge1"], "ROUGE2": expected["rouge2"],
                     "ROUGEL": expected["rougeL"], "TOKENS_PER_SAMPLE": expected["tokens_per_sample"]}
    hashes = [re.match(r"^hash=([\w\d]+)$", line).group(1) for line in lines if line.startswith("hash=")]
    assert hashes == [sha256_file(golden["log"])]
    doc = json.loads((tmp_path / "accuracy.json").read_text())
    assert [v["model"] for v in doc["verdicts"]] == ["llama2-70b-99", "llama2-70b-99.9"]
    assert doc["verdicts"][0]["lines"][0] == (f"`ROUGE1`: `{expected['rouge1']}`, "
                                              "Required accuracy for closed division `>= 43.98689`")
    assert doc["result"]["sentence_splitter"]


def test_cli_bad_input_exit_code(golden, tmp_path, capsys):
    rc = main(["evaluate", "--model=llama2-70b-99", "--accuracy-log", str(tmp_path / "missing.json"), "--dataset", golden["dataset"],
               "--tokenizer", golden["tokenizer"]])
    assert rc == 2 and "AccuracyOnly" in capsys.readouterr().err
    assert not (tmp_path / "accuracy.txt").exists()


def test_embedded_targets_through_cli(golden, tmp_path, capsys):
    ref = tmp_path / "reference.json"
    ref.write_text(json.dumps({"metrics": {"rouge1": 60.0, "rouge2": 50.0, "rougeL": 60.0,
                                           "tokens_per_sample": 80.0}}))
    rc = main(["evaluate", "--model=llama2-70b-99", "--accuracy-log", golden["log"], "--dataset", golden["dataset"],
               "--tokenizer", golden["tokenizer"], "--output-dir", str(tmp_path), "--workers", "1",
               "--embedded-reference", str(ref)])
    out = capsys.readouterr().out
    assert rc == 0 and "embedded data set reference x0.99" in out
    doc = json.loads((tmp_path / "accuracy.json").read_text())
    # rouge2 of the golden log (46.0) is under 50 x 0.99: the verdict says so
    assert [m["passed"] for m in doc["verdicts"][0]["metrics"]] == [True, False, True, True]
