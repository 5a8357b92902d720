"""accuracy.txt of a llama3.1-8b accuracy test, read the way each round's checker reads it: its own
ACC_PATTERN (from its source), line by line, each value against its own targets."""
import json
import re

import pytest

from mlperf_llm.accuracy.report import sha256_file, write_accuracy_txt, write_result_json
from mlperf_llm.accuracy.summarization import SummaryScores
from mlperf_llm.accuracy.targets import judge, mlperf_targets

from inference_sources import checker_tables

HASH = r"^hash=([\w\d]+)$"   # the checker's hash pattern (a literal in its check_accuracy_dir)


def scores(**changes):
    values = dict(rouge1=38.8001, rouge2=15.9451, rougeL=24.5198, rougeLsum=35.8487, gen_len=8164530,
                  gen_num=13368, sentence_splitter="nltk-packaged-model: test")
    return SummaryScores(**dict(values, **changes))


def read_as_checker(path, round_name, model):
    """What the checker's loop finds in accuracy.txt: {metric: text}, hash, and its pass/fail."""
    tables = checker_tables(round_name)
    config = tables["MODEL_CONFIG"][f"v{round_name}"]
    lower, upper = config["accuracy-target"][model], config["accuracy-upper-limit"][model]
    found, hashes, passed = {}, [], True
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        for metric, target in zip(lower[::2], lower[1::2]):
            m = re.match(tables["ACC_PATTERN"][metric], line)
            if m:
                found[metric] = m.group(1)
                passed &= float(m.group(1)) >= target
        for metric, limit in zip(upper[::2], upper[1::2]):
            m = re.match(tables["ACC_PATTERN"][metric], line)
            if m:
                passed &= float(m.group(1)) <= limit
        m = re.match(HASH, line)
        if m:
            hashes.append(m.group(1))
    return found, hashes, passed and set(found) == set(lower[::2])


@pytest.mark.parametrize("round_name", ["5.1", "6.1"])
@pytest.mark.parametrize("result,passes", [(scores(), True), (scores(gen_len=9000000), False),
                                           (scores(rougeLsum=35.2), False)])
def test_the_checker_reads_every_metric_and_agrees_with_the_verdict(tmp_path, round_name, result, passes):
    log = tmp_path / "mlperf_log_accuracy.json"
    log.write_text("[]\n")
    write_accuracy_txt(str(tmp_path / "accuracy.txt"), result, str(log))
    found, hashes, checker_passed = read_as_checker(tmp_path / "accuracy.txt", round_name, "llama3.1-8b")
    assert {m: float(v) for m, v in found.items()} == result.checker_values()
    assert found["GEN_LEN"] == str(result.gen_len)                      # an integer, as the reference prints it
    assert hashes == [sha256_file(str(log))]
    assert checker_passed == judge(result.checker_values(), mlperf_targets("llama3.1-8b")).passed == passes


def test_the_reference_line_under_numpy2_is_what_the_checker_misses():
    pattern = checker_tables("6.1")["ACC_PATTERN"]["GEN_LEN"]
    assert re.match(pattern, "{'rouge1': '38.8001', 'gen_len': np.int64(8164530), 'gen_num': 13368}") is None
    assert re.match(pattern, "{'rouge1': '38.8001', 'gen_len': 8164530, 'gen_num': 13368}").group(1) == "8164530"


def test_accuracy_json_carries_the_scores_and_the_scaled_verdict(tmp_path):
    result = scores(gen_len=60000, gen_num=100)
    verdict = judge(result.checker_values(), mlperf_targets("llama3.1-8b", rows_scored=result.gen_num))
    doc = write_result_json(str(tmp_path / "accuracy.json"), result, [verdict], "abc")
    assert json.loads((tmp_path / "accuracy.json").read_text()) == doc
    assert doc["result"]["gen_len"] == 60000 and doc["verdicts"][0]["passed"]
    assert "this test scored 100" in doc["verdicts"][0]["lines"][-1]
