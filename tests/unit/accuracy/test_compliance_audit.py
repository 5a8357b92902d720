"""TEST07 and TEST09's audit.config from the round's source (../shared's master b66003e copy): kept as
it is for a valid run, shortened per scenario for a test run, a source without the test named; and
how a test run's counts are chosen."""
from pathlib import Path

import pytest

from mlperf_llm.accuracy import compliance_run
from mlperf_llm.accuracy.compliance_audit import AuditError, write_audits
from mlperf_llm.accuracy.compliance_run import ComplianceRequest, ComplianceRunError, counts
from mlperf_llm.accuracy.test06_config import query_count_of

SRC = Path(__file__).resolve().parents[4] / "shared" / "mlcommons-inference" / "master-b66003e"


def test_a_valid_run_takes_the_rounds_files_as_they_are(tmp_path):
    audits = write_audits(SRC, "gpt-oss-120b", tmp_path)
    assert [a.test for a in audits] == ["TEST07", "TEST09"]
    for a in audits:
        assert a.path == tmp_path / a.test / "audit.config" and a.counts == {}
        assert a.path.read_text() == a.source.read_text()
    assert query_count_of(str(audits[0].path), "Offline") == 990
    assert query_count_of(str(audits[1].path), "Server") == 6396


def test_a_test_run_is_shortened_per_scenario_and_keeps_the_thresholds(tmp_path):
    audits = write_audits(SRC, "gpt-oss-120b", tmp_path,
                          {"TEST07": {"Offline": 5, "Server": 3}, "TEST09": {"Offline": 7}})
    text = audits[0].path.read_text()
    assert "*.*.min_query_count" not in text and "*.*.accuracy_log_sampling_target" not in text
    assert "*.Offline.min_query_count = 5" in text and "*.Server.accuracy_log_sampling_target = 3" in text
    assert "test07_accuracy_threshold = 60.698" in text and "not for a submission" in text
    assert query_count_of(str(audits[0].path), "Server") == 3
    assert "test09_min_output_tokens = 1150.38" in audits[1].path.read_text()
    assert query_count_of(str(audits[1].path), "Offline") == 7


def test_a_source_without_the_test_is_named_with_the_fix(tmp_path):
    with pytest.raises(AuditError, match=r"TEST07 for gpt-oss-120b: .*compliance/TEST07/gpt-oss-120b/audit.config "
                                         r"is missing.*fix: --inference_src=DIR"):
        write_audits(SRC.parent / "v5.1.1", "gpt-oss-120b", tmp_path)


def request(**kw):
    base = dict(results_dir="/nowhere", model="gpt-oss-120b", round="6.1", scenarios=("Offline", "Server"),
                inference_src=str(SRC), rows=(("TEST07", 12), ("TEST09", 24)))
    return ComplianceRequest(**{**base, **kw})


def test_a_test_runs_counts_are_given_or_the_runs_and_never_more_than_the_set():
    assert counts(request(execution_mode="valid")) == (None, "the round's audit.config as it is (a valid run)")
    given, how = counts(request(query_count=20))
    assert given == {"TEST07": {"Offline": 12, "Server": 12}, "TEST09": {"Offline": 20, "Server": 20}}
    assert "--compliance_query_count" in how
    plain, _ = counts(request(test_query_count=4, sized=True))      # sized, but no measurement in results_dir
    assert plain == {"TEST07": {"Offline": 4, "Server": 4}, "TEST09": {"Offline": 4, "Server": 4}}


def test_the_request_refuses_a_bad_count_and_the_step_needs_a_source(tmp_path):
    env = {"CM_MLPERF_MODEL": "gpt-oss-120b", "CM_MLPERF_INFERENCE_VERSION": "6.1", "CM_MLPERF_LOADGEN_SCENARIO": "Offline",
           "CM_MLPERF_COMPLIANCE_QUERY_COUNT": "many"}
    with pytest.raises(ComplianceRunError, match=r"--compliance_query_count='many': give a whole number"):
        ComplianceRequest.from_env(env)
    with pytest.raises(ComplianceRunError, match=r"no inference source .* fix: --inference_src=DIR"):
        compliance_run.prepare(dict(env, CM_MLPERF_COMPLIANCE_QUERY_COUNT="3"), str(tmp_path))
    audit_dir, lines = compliance_run.prepare(dict(env, CM_MLPERF_COMPLIANCE_QUERY_COUNT="3",
                                                   CM_MLPERF_INFERENCE_SOURCE=str(SRC),
                                                   CM_DATASET_COMPLIANCE_ROWS="12"), str(tmp_path))
    assert audit_dir == str(tmp_path / "audit")
    assert lines[0].startswith("TEST07: ") and "shortened: Offline 3 queries" in lines[0]
