import os
import re
from pathlib import Path

import pytest

from mlperf_llm.submission import logs, spec
from mlperf_llm.submission.errors import SubmissionError

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "submission")
RUN = os.path.join(FIX, "results-v5.1", "llama2-70b-99")
CHECKER_CONSTANTS = (Path(__file__).resolve().parents[4] / "shared" / "mlcommons-inference" / "master-b66003e" / "tools"
                     / "submission" / "submission_checker" / "constants.py")


def test_targets_are_the_checkers_and_print_as_seed_003():
    t = {x.metric: x for x in spec.accuracy_targets("llama2-70b-99")}
    assert t["ROUGE1"].describe() == ">= 43.98689"          # seed 003's line
    assert t["ROUGE2"].describe() == ">= 21.81485"
    assert t["ROUGEL"].describe() == ">= 28.33004"
    assert t["TOKENS_PER_SAMPLE"].describe() == ">= 265.005 and <= 323.895"
    t999 = {x.metric: x for x in spec.accuracy_targets("llama2-70b-interactive-99.9")}
    assert t999["ROUGE1"].minimum == pytest.approx(44.3868, abs=1e-4)   # seed 001's 99.9 target
    assert not t["TOKENS_PER_SAMPLE"].passes(330.0) and t["TOKENS_PER_SAMPLE"].passes(294.1)


def test_detail_log_reads_values_and_the_validity_conditions():
    log = logs.read_detail_log(os.path.join(RUN, "Server", "performance", "run_1", "mlperf_log_detail.txt"))
    assert log.get("effective_scenario") == "Server"
    assert log.get("effective_qsl_rng_seed") == 1780908523862526354     # the v5.1 seed of LoadGen 5.1.2
    assert log.valid is False and log.failed_conditions() == ["early stopping"]
    assert log.errors == []


def test_detail_log_that_is_not_one_is_refused(tmp_path):
    p = tmp_path / "mlperf_log_detail.txt"
    p.write_text("hello\n")
    with pytest.raises(SubmissionError, match="no :::MLLOG"):
        logs.read_detail_log(str(p))
    with pytest.raises(SubmissionError, match="cannot be read"):
        logs.read_detail_log(str(tmp_path / "missing.txt"))


def test_detail_log_keeps_loadgen_errors(tmp_path):
    p = tmp_path / "d.txt"
    p.write_text(':::MLLOG {"key": "error_invalid_config", "value": "Multiple conf files are used.", '
                 '"metadata": {"is_error": true, "is_warning": false}}\n')
    assert logs.read_detail_log(str(p)).errors == ["Multiple conf files are used."]


def test_accuracy_txt_with_the_checkers_patterns(tmp_path):
    acc = logs.read_accuracy_txt(os.path.join(RUN, "Offline", "accuracy", "accuracy.txt"))
    # the fixture prints what evaluate-accuracy.py prints: rougeLsum and gen_len too
    assert set(acc.values) == {"ROUGE1", "ROUGE2", "ROUGEL", "ROUGELSUM", "GEN_LEN", "TOKENS_PER_SAMPLE"}
    assert acc.values["TOKENS_PER_SAMPLE"] == 294.1 and acc.hash is None
    p = tmp_path / "accuracy.txt"
    p.write_text("{'rouge1': 44.1, 'rouge2': 22.0, 'rougeL': 28.5, 'tokens_per_sample': 293.0}\n"
                 "hash=abc123\n")
    acc = logs.read_accuracy_txt(str(p))
    assert acc.values == {"ROUGE1": 44.1, "ROUGE2": 22.0, "ROUGEL": 28.5, "TOKENS_PER_SAMPLE": 293.0}
    assert acc.hash == "abc123"
    # llama3.1-8b: the lines accuracy.report writes (ROUGE as strings, gen_len an int)
    p.write_text("\nResults\n\n{'rouge1': '38.9', 'rouge2': '16.0', 'rougeL': '24.5', 'rougeLsum': '35.9', "
                 "'gen_len': 8167000, 'gen_num': 13368}\n\nhash=ff00\n")
    assert logs.read_accuracy_txt(str(p)).values == {"ROUGE1": 38.9, "ROUGE2": 16.0, "ROUGEL": 24.5,
                                                     "ROUGELSUM": 35.9, "GEN_LEN": 8167000.0}
    # gpt-oss-120b: what reasoning_eval's result prints, the checker's 'exact_match' among it
    p.write_text("\nResults\n\n{'exact_match': 12.183, 'tokens_per_sample': 71.2, 'gen_num': 8}\n\nhash=ab12\n")
    assert logs.read_accuracy_txt(str(p)).values == {"exact_match": 12.183, "TOKENS_PER_SAMPLE": 71.2}
    checker = (CHECKER_CONSTANTS.read_text())
    assert re.search(r'"exact_match": r"' + re.escape(logs.ACCURACY_PATTERNS["exact_match"]) + '"', checker)
    p.write_text("nothing\n")
    with pytest.raises(SubmissionError, match="process-mlperf-accuracy"):
        logs.read_accuracy_txt(str(p))


def test_verify_accuracy_lines(tmp_path):
    server = logs.read_verify_accuracy(os.path.join(RUN, "Server", "TEST06", "verify_accuracy.txt"))
    offline = logs.read_verify_accuracy(os.path.join(RUN, "Offline", "TEST06", "verify_accuracy.txt"))
    assert server == {"first_token": "True", "eos": "True", "length": "True"} and logs.verification_passes(server)
    assert offline["first_token"] == "Skipped" and logs.verification_passes(offline)
    p = tmp_path / "verify_accuracy.txt"
    p.write_text("First token check pass: True\nEOS check pass: False\nSample length check pass: True\n")
    assert not logs.verification_passes(logs.read_verify_accuracy(str(p)))


def test_accuracy_entries_counted(tmp_path):
    assert logs.count_accuracy_entries(os.path.join(RUN, "Server", "TEST06", "accuracy",
                                                    "mlperf_log_accuracy.json")) == 100
    empty = tmp_path / "e.json"
    empty.write_text("[\n]")
    assert logs.count_accuracy_entries(str(empty)) == 0
    bad = tmp_path / "b.json"
    bad.write_text("[{\"seq_id\": 0,\n\n...\n\n")
    with pytest.raises(SubmissionError, match="not a truncated copy"):
        logs.count_accuracy_entries(str(bad))
