"""A test's settings as one document: every field crosses the process boundary (JSON, --config) and
reaches the child's config; the driver hands each test every shared setting; bad documents are named."""
import json
from dataclasses import MISSING, fields, replace
from typing import get_args, get_origin

import pytest

from mlperf_llm.harness import run, testrun
from mlperf_llm.harness.driver import HarnessRequest
from mlperf_llm.harness.testconfig import (CONFIG_FILE, ConfigError, ManagedServer, TestConfig, TestSettings,
                                           field_types)

VALID = {"model": "llama2-70b-99.9", "round": "5.1"}     # values other code checks (the round table)


def not_default(cls) -> dict:
    """A value for each field of cls that is not its default, made from the field's type alone: a field
    added later gets one too, so the round trips below cover it without an edit."""
    out = {}
    kinds = field_types(cls)
    for i, f in enumerate(fields(cls)):
        kind, default = kinds[f.name], None if f.default is MISSING else f.default
        choices = f.metadata.get("choices")
        if f.name in VALID:
            value = VALID[f.name]
        elif choices:
            value = choices[-1] if default == choices[0] else choices[0]
        elif kind is bool:
            value = not default
        elif kind is int:
            value = 100 + i
        elif kind is float:
            value = 0.5 + i
        elif kind is str:
            value = f"{f.name}-value"
        elif get_origin(kind) is tuple and get_args(kind)[0] is ManagedServer:
            value = (ManagedServer("http://127.0.0.1:8123", 4321, 99, "/logs/vllm-server-8123.log"),)
        elif get_origin(kind) is tuple:
            value = (f"http://{f.name}-1", f"http://{f.name}-2")
        else:
            raise AssertionError(f"no test value for {f.name}: {kind}; teach not_default this type")
        assert value != default, f.name
        out[f.name] = value
    return out


def test_every_field_round_trips_through_the_json_and_reaches_the_childs_config(tmp_path):
    cfg = TestConfig(**not_default(TestConfig))
    assert TestConfig.from_json(cfg.to_json()) == cfg
    path = tmp_path / CONFIG_FILE
    path.write_text(cfg.to_json())
    assert run.parse_args([f"--config={path}"]) == cfg


def test_the_driver_hands_each_test_every_shared_setting(tmp_path):
    values = not_default(TestSettings)
    req = HarnessRequest(results_dir=str(tmp_path), **values)
    cmd = testrun.command(req, "Server", "TEST06", tmp_path, tmp_path / "user.conf")
    assert cmd == [req.python, "-m", "mlperf_llm.harness.run", f"--config={tmp_path / CONFIG_FILE}"]
    child = run.parse_args(cmd[3:])
    for name, value in values.items():
        assert getattr(child, name) == value, name
    assert (child.scenario, child.mode, child.output_dir) == ("Server", "TEST06", str(tmp_path))
    # only the compliance test gets the audit.config; a request without a round: the one it settled
    newest = replace(req, round="")
    other = run.parse_args(testrun.command(newest, "Server", "accuracy", tmp_path, tmp_path / "user.conf")[3:])
    assert other.audit_conf == "" and other.round == newest.rnd.name != ""


def test_flags_alone_make_a_config_and_override_a_config_file(tmp_path):
    base = ["--model=llama2-70b-99", "--scenario=Offline", "--mode=accuracy", "--dataset-path=ds.pkl", "--output-dir=out",
            "--user-conf=user.conf"]
    cfg = run.parse_args(base + ["--api-servers=http://a:1, http://b:2", "--no-progress", "--max-tokens=7",
                                 "--abort-grace-s=2"])
    assert cfg.api_servers == ("http://a:1", "http://b:2") and cfg.progress is False
    assert (cfg.max_tokens, cfg.abort_grace_s, cfg.backend) == (7, 2.0, "vllm")
    path = tmp_path / CONFIG_FILE
    path.write_text(cfg.to_json())
    over = run.parse_args([f"--config={path}", "--scenario=Server", "--progress"])
    assert over == replace(cfg, scenario="Server", progress=True)


@pytest.mark.parametrize("change, words", [
    ({"max_tokens_typo": 1}, "unknown key 'max_tokens_typo'"),
    ({"max_tokens": "many"}, "max_tokens='many' is not an integer; fix: give an integer"),
    ({"progress": "yes"}, "progress='yes' is not true or false"),
    ({"abort_grace_s": None}, "abort_grace_s=None is not a number"),
    ({"backend": "tensorrt"}, "backend='tensorrt'; fix: choose from vllm, transformers"),
    ({"api_servers": "http://a"}, "api_servers='http://a' is not a list"),
    ({"managed_servers": [{"url": "http://a", "pid": "1", "start_ticks": None, "log_path": "l"}]},
     "managed_servers[0]: pid='1' is not an integer"),
])
def test_a_bad_document_is_named_with_the_key_and_the_fix(change, words):
    good = TestConfig(model="llama2-70b-99", scenario="Offline", mode="performance", dataset_path="d", output_dir="o", user_conf="u")
    data = {**json.loads(good.to_json()), **change}
    with pytest.raises(ConfigError) as e:
        TestConfig.from_dict(data, "f.json")
    assert str(e.value).startswith("f.json: ") and words in str(e.value)


def test_a_missing_setting_or_an_unreadable_file_refuses_the_test(tmp_path, capsys):
    with pytest.raises(ConfigError, match="the key 'user_conf' is missing"):
        TestConfig.from_dict({"model": "llama2-70b-99", "scenario": "Offline", "dataset_path": "d", "output_dir": "o"})
    with pytest.raises(ConfigError, match="the key 'model' is missing"):
        TestConfig.from_dict({"scenario": "Offline", "dataset_path": "d", "output_dir": "o", "user_conf": "u"})
    with pytest.raises(ConfigError, match="not valid JSON"):
        TestConfig.from_json("{", "f.json")
    assert run.main([f"--config={tmp_path / 'missing.json'}"]) == run.EXIT_REFUSED
    assert f"--config {tmp_path / 'missing.json'}: cannot read it" in capsys.readouterr().err


def test_gpt_oss_tests_read_their_own_set_cap_and_sampling_per_mode():
    base = dict(dataset_path="acc.parquet", model="gpt-oss-120b", output_dir="o", user_conf="u")
    perf = TestConfig(**base, scenario="Offline", mode="performance", performance_dataset_path="perf.parquet")
    acc = replace(perf, mode="accuracy")
    assert (perf.dataset_for(perf.mode), acc.dataset_for(acc.mode)) == ("perf.parquet", "acc.parquet")
    assert (perf.max_new_tokens, acc.max_new_tokens) == (10240, 32768)
    assert replace(perf, max_tokens=128).max_new_tokens == 128
    assert perf.sampling() == {"temperature": 1.0, "top_p": 1.0, "seed": 0}
    assert replace(perf, sampling_seed=5).sampling()["seed"] == 5
    assert replace(perf, greedy=True).sampling() == {}
    llama = TestConfig(dataset_path="d.pkl", model="llama2-70b-99", output_dir="o", user_conf="u", scenario="Offline")
    assert llama.sampling() == {} and llama.dataset_for("performance") == "d.pkl" and llama.max_new_tokens == 1024


def test_gpt_oss_compliance_tests_read_their_sets_and_audit_files_and_are_performance_runs():
    base = dict(dataset_path="acc.parquet", model="gpt-oss-120b", output_dir="o", user_conf="u", scenario="Offline",
                performance_dataset_path="perf.parquet", compliance_dataset_path="gpqa.parquet", audit_dir="/a")
    t07, t09 = TestConfig(**base, mode="TEST07"), TestConfig(**base, mode="TEST09")
    assert (t07.dataset_for("TEST07"), t09.dataset_for("TEST09")) == ("gpqa.parquet", "perf.parquet")
    assert (t07.max_new_tokens, t09.max_new_tokens) == (10240, 10240)
    assert (t07.audit_config("TEST07"), t07.audit_config("TEST09")) == ("/a/TEST07/audit.config", "/a/TEST09/audit.config")
    assert t07.audit_config("accuracy") == "" and replace(t07, audit_conf="/t6").audit_config("TEST06") == "/t6"


def test_the_run_says_where_it_lowers_a_cap_or_does_not_sample():
    from mlperf_llm.harness.driver import generation_notes
    req = HarnessRequest(results_dir="r", dataset_path="a.parquet", model="gpt-oss-120b",
                         modes=("performance", "accuracy", "TEST07"), max_tokens=128, greedy=True)
    notes = generation_notes(req)
    assert notes[0].startswith("note: performance answers are capped at 128 new tokens") and "allow 10240" in notes[0]
    assert "accuracy runs allow 32768" in notes[1] and len(notes) == 3 and "greedy answers" in notes[2]
    assert generation_notes(replace(req, max_tokens=None, greedy=False)) == [
        "sampling: temperature 1, top_p 1, seed 0 + the sample's index (recorded in each test's harness_config.json)"]
    assert generation_notes(HarnessRequest(results_dir="r", dataset_path="d.pkl", model="llama2-70b-99")) == []
