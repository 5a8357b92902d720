"""TEST06 verification: the three checks, the Offline skip, the files the checker reads."""
import json

import pytest

from mlperf_llm.accuracy.log import AccuracyLogError, encode_ids
from mlperf_llm.accuracy.process import Test06Request as Request06, verify_test06
from mlperf_llm.accuracy.test06 import trailing_eos, verify


def entry(ids, first=None, count=None, qsl=0):
    e = {"seq_id": qsl, "qsl_idx": qsl, "data": encode_ids(ids)}
    e["token_data"] = encode_ids(ids[:1] if first is None else first)
    e["token_count"] = len(ids) if count is None else count
    return e


def log(tmp_path, entries):
    path = tmp_path / "mlperf_log_accuracy.json"
    path.write_text(json.dumps(entries))
    return str(path)


def test_all_pass_server(tmp_path):
    r = verify(log(tmp_path, [entry([5, 6, 7, 2], qsl=0), entry([9, 2], qsl=1)]), "Server")
    assert (r.first_token, r.eos, r.sample_length, r.passed) == (True, True, True, True)
    assert r.text() == ("First token check pass: True\nEOS check pass: True\n"
                        "Sample length check pass: True\nTEST06 verification complete\n")


def test_offline_skips_first_token(tmp_path):
    r = verify(log(tmp_path, [entry([5, 6], first=[99])]), "Offline")
    assert r.first_token is None and r.passed
    assert r.text().startswith("First token check pass: Skipped\n")


@pytest.mark.parametrize("bad,field", [
    (entry([5, 6, 2, 2]), "eos"),                   # two EOS at the end: the exploit TEST06 looks for
    (entry([5, 6], first=[7]), "first_token"),      # reported first token is not the output's first
    (entry([5, 6, 7], count=2), "sample_length"),   # n_tokens disagrees with the output
])
def test_each_failure(tmp_path, bad, field):
    r = verify(log(tmp_path, [entry([1, 2], qsl=7), bad]), "Server")
    assert getattr(r, field) is False and not r.passed
    assert r.text().endswith("TEST06 verification failed\n") and r.problems


def test_eos_rule_follows_the_reference_scan():
    assert trailing_eos([2, 2], 2) == 1      # index 0 is never looked at
    assert trailing_eos([5, 2, 2, 2], 2) == 3
    assert trailing_eos([5, 2, 7], 2) == 0


def test_missing_fields_fail_with_reason(tmp_path):
    r = verify(log(tmp_path, [{"qsl_idx": 0, "data": encode_ids([1, 2])}]), "Server")
    assert r.first_token is False and r.sample_length is False
    assert any("token_data" in p for p in r.problems) and any("token_count" in p for p in r.problems)


def test_empty_log_names_audit_config(tmp_path):
    with pytest.raises(AccuracyLogError, match="audit.config"):
        verify(log(tmp_path, []), "Offline")


def test_compliance_layout_written(tmp_path):
    results = tmp_path / "results"
    run = results / "llama2-70b-99" / "Server" / "TEST06"
    run.mkdir(parents=True)
    (run / "mlperf_log_accuracy.json").write_text(json.dumps([entry([4, 2])]))
    [out] = verify_test06(Request06(str(results), "llama2-70b-99", ["Server"]))
    lines = (run / "verify_accuracy.txt").read_text().splitlines()
    # the checker's conditions on verify_accuracy.txt (submission_checker.py, TEST06 branch)
    assert "First token check pass: True" in lines and "EOS check pass: True" in lines
    assert "Sample length check pass: True" in lines
    assert (run / "accuracy" / "mlperf_log_accuracy.json").read_text() == \
        (run / "mlperf_log_accuracy.json").read_text()
    assert out.result.passed and out.test_dir == str(run)
    assert not list(run.rglob(".tmp-*"))


def test_eos_id_from_the_model_folder(tmp_path):
    from mlperf_llm.accuracy.test06 import eos_token_id_of
    (tmp_path / "config.json").write_text(json.dumps({"eos_token_id": [7, 8]}))
    assert eos_token_id_of(str(tmp_path), "llama3.1-8b") == (7, str(tmp_path / "config.json"))
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": 0}))
    assert eos_token_id_of(str(tmp_path), "llama3.1-8b")[0] == 0
    assert eos_token_id_of("", "llama2-70b-99") == (2, "llama2-70b's EOS (the benchmark table)")
    with pytest.raises(ValueError, match="TEST06 of llama3.1-8b needs the EOS id of its tokenizer.*--eos_token_id=N"):
        eos_token_id_of("", "llama3.1-8b")


@pytest.mark.parametrize("rnd,where", [("5.0", ("llama2-70b-interactive-99", "Server")),
                                       ("5.1", ("llama2-70b-99", "Interactive"))])
def test_interactive_follows_the_rounds_layout(tmp_path, rnd, where):
    run = tmp_path.joinpath(*where, "TEST06")
    run.mkdir(parents=True)
    (run / "mlperf_log_accuracy.json").write_text(json.dumps([entry([4, 2])]))
    [out] = verify_test06(Request06(str(tmp_path), "llama2-70b-99", ["Interactive"], round=rnd))
    assert out.test_dir == str(run) and (run / "verify_accuracy.txt").is_file()


def test_accuracy_dirs_include_the_interactive_model_folder(tmp_path):
    from mlperf_llm.accuracy.process import accuracy_dirs
    for model, scenario in (("llama2-70b-99", "Offline"), ("llama2-70b-interactive-99", "Server"),
                            ("llama2-70b-99.9", "Offline")):
        d = tmp_path / model / scenario / "accuracy"
        d.mkdir(parents=True)
        (d / "mlperf_log_accuracy.json").write_text("[]")
    assert accuracy_dirs(str(tmp_path), "llama2-70b-99") == [
        str(tmp_path / "llama2-70b-99" / "Offline" / "accuracy"),
        str(tmp_path / "llama2-70b-interactive-99" / "Server" / "accuracy")]
