"""TEST06's audit.config per round: copied from the source at hand, else written with the settings of
the run's round, which are those of the round's own file (../shared/mlcommons-inference)."""
import os

import pytest

from inference_sources import inference_source
from mlperf_llm.accuracy.cli import main as accuracy_cli
from mlperf_llm.accuracy.test06_config import (AuditConfigError, audit_config, find_in_source, settings_of,
                                                short_query_count)
from mlperf_llm.rounds import ROUNDS, get_round


def parse(text):
    """key = value lines of a LoadGen config, comments left out."""
    pairs = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            key, value = (part.strip() for part in line.split("=", 1))
            pairs.append((key, value))
    return tuple(pairs)


@pytest.mark.parametrize("name", list(ROUNDS))
def test_each_rounds_settings_are_those_of_its_own_audit_config(name):
    rnd = ROUNDS[name]
    official = os.path.join(inference_source(name), rnd.test06_dir, "audit.config")
    with open(official, encoding="utf-8") as f:
        assert settings_of(rnd).settings == parse(f.read())


@pytest.mark.parametrize("name,origin", [
    ("4.1", "round v4.1: mlcommons/inference v4.1, compliance/nvidia/TEST06/audit.config"),
    ("5.0", "round v5.0: mlcommons/inference v5.0, compliance/nvidia/TEST06/audit.config"),
    ("5.1", "round v5.1: mlcommons/inference v5.1, compliance/TEST06/audit.config"),
    ("6.0", "round v6.0: mlcommons/inference commit b66003e, compliance/TEST06/audit.config"),
    ("6.1", "round v6.1: mlcommons/inference commit b66003e, compliance/TEST06/audit.config"),
])
def test_without_a_source_the_written_file_names_the_runs_round(tmp_path, name, origin):
    path, said = audit_config("", str(tmp_path), get_round(name))
    text = open(path, encoding="utf-8").read()
    assert said == f"no inference source given: audit.config written with TEST06's settings of {origin}"
    assert origin in text.splitlines()[0]
    assert parse(text) == settings_of(get_round(name)).settings
    assert os.listdir(tmp_path) == ["audit.config"]       # no temporary file left


@pytest.mark.parametrize("name,folder", [("4.1", "nvidia"), ("6.0", "TEST06")])
def test_a_source_is_read_in_the_rounds_folder_first(tmp_path, name, folder):
    for relative, text in (("compliance/nvidia/TEST06", "nvidia"), ("compliance/TEST06", "TEST06")):
        (tmp_path / relative).mkdir(parents=True)
        (tmp_path / relative / "audit.config").write_text(f"*.*.mode = 2  # {text}\n")
    path, said = audit_config(str(tmp_path), str(tmp_path / "run"), get_round(name))
    assert open(path).read() == f"*.*.mode = 2  # {folder}\n"
    assert said.startswith("audit.config from the inference source: ")


def test_a_source_of_the_other_layout_is_found_and_a_non_source_is_named(tmp_path):
    (tmp_path / "compliance" / "TEST06").mkdir(parents=True)
    (tmp_path / "compliance" / "TEST06" / "audit.config").write_text("*.*.mode = 2\n")
    assert find_in_source(str(tmp_path), get_round("4.1")).endswith("compliance/TEST06/audit.config")
    with pytest.raises(AuditConfigError, match="checkout"):
        find_in_source(str(tmp_path / "compliance"), get_round("4.1"))


def test_the_cli_writes_the_settings_of_the_round_asked_for(tmp_path, capsys):
    assert accuracy_cli(["audit-config", "--output-dir", str(tmp_path), "--round", "4.1"]) == 0
    assert "round v4.1" in capsys.readouterr().err
    assert accuracy_cli(["audit-config", "--output-dir", str(tmp_path), "--round", "3.0"]) == 2


def test_a_test_run_can_shorten_test06_and_says_so(tmp_path):
    rnd = get_round("6.1")
    path, origin = audit_config("", str(tmp_path), rnd, short_query_count("4", "test"))
    text = open(path).read()
    assert "*.*.min_query_count = 4" in text and "*.*.accuracy_log_sampling_target = 4" in text
    assert "= 100" not in text and "*.*.accuracy_log_rng_seed = 720381539243781796" in text
    assert "shortened to 4 queries (--test06_query_count, test mode)" in origin
    assert "not for a submission" in text
    assert short_query_count("", "valid") is None


@pytest.mark.parametrize("value,mode,words", [("0", "test", "positive whole number"), ("x", "test", "'x'"),
                                              ("8", "valid", "for test runs only")])
def test_a_bad_or_valid_mode_short_test06_is_refused_by_name(value, mode, words):
    with pytest.raises(AuditConfigError, match=words) as e:
        short_query_count(value, mode)
    assert "--test06_query_count" in str(e.value)
