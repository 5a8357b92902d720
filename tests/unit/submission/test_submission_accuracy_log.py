import hashlib
import json
import os
import shutil

import pytest

from mlperf_llm.submission.accuracy_log import recorded_hash, sha256_of, truncate_with_hash, truncated_text
from mlperf_llm.submission.errors import SubmissionError

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "submission")
ACC = os.path.join(FIX, "results-v5.1", "llama2-70b-99", "Offline", "accuracy")


@pytest.fixture
def acc_dir(tmp_path):
    d = tmp_path / "accuracy"
    shutil.copytree(ACC, d)
    return str(d)


def test_hash_appended_and_log_cut_to_head_and_tail(acc_dir):
    log = os.path.join(acc_dir, "mlperf_log_accuracy.json")
    original = open(log).read()
    digest = hashlib.sha256(original.encode()).hexdigest()
    assert len(original) > 10 * 1024
    assert truncate_with_hash(acc_dir) == digest
    cut = open(log).read()
    assert cut == original[:4096] + "\n\n...\n\n" + original[-4096:]
    assert os.path.getsize(log) < 10 * 1024
    txt = open(os.path.join(acc_dir, "accuracy.txt")).read()
    assert txt.endswith(f"\nhash={digest}\n") and "'rouge1'" in txt
    assert recorded_hash(os.path.join(acc_dir, "accuracy.txt")) == digest
    assert not [n for n in os.listdir(acc_dir) if n.startswith(".")]      # no temp file left


def test_existing_matching_hash_is_kept_once(acc_dir):
    digest = sha256_of(os.path.join(acc_dir, "mlperf_log_accuracy.json"))
    with open(os.path.join(acc_dir, "accuracy.txt"), "a") as f:
        f.write(f"hash={digest}\n")
    truncate_with_hash(acc_dir)
    assert open(os.path.join(acc_dir, "accuracy.txt")).read().count("hash=") == 1


def test_a_hash_of_another_log_is_refused_and_nothing_changes(acc_dir):
    with open(os.path.join(acc_dir, "accuracy.txt"), "a") as f:
        f.write("hash=" + "0" * 64 + "\n")
    before = open(os.path.join(acc_dir, "mlperf_log_accuracy.json")).read()
    with pytest.raises(SubmissionError, match="score the untruncated log again"):
        truncate_with_hash(acc_dir)
    assert open(os.path.join(acc_dir, "mlperf_log_accuracy.json")).read() == before


def test_short_log_is_kept_whole(tmp_path):
    p = tmp_path / "mlperf_log_accuracy.json"
    p.write_text(json.dumps([{"seq_id": 0, "qsl_idx": 0, "data": "0A000000", "token_count": 1}]))
    assert truncated_text(str(p)) is None
    (tmp_path / "accuracy.txt").write_text("{'rouge1': 1.0}\n")
    truncate_with_hash(str(tmp_path))
    assert json.loads(p.read_text())[0]["data"] == "0A000000"


def test_missing_accuracy_txt_names_the_fix(tmp_path):
    (tmp_path / "mlperf_log_accuracy.json").write_text("[\n]")
    with pytest.raises(SubmissionError, match="process-mlperf-accuracy"):
        truncate_with_hash(str(tmp_path))
