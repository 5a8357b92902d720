"""A run without --submitter: an open test run is built under a placeholder name that every place
it appears says is one; a closed or valid one is refused before anything is built."""
import json
import os

import pytest

from submission_fixtures import FIX
from mlperf_llm.submission.cmenv import metadata_from_env
from mlperf_llm.submission.errors import SubmissionError
from mlperf_llm.submission.inputs import PLACEHOLDER_SUBMITTER
from mlperf_llm.submission.tarball import pack
from mlperf_llm.submission.tree import BuildRequest, build_submission
from mlperf_llm.sysinfo.sut import DEFAULT_SUBMITTER

SYS = "cpu_2c-reference-cpu-vllm"


def env_without_submitter(**kw):
    env = {"CM_MLPERF_SUBMISSION_METADATA": os.path.join(FIX, "metadata.json"), "CM_MLPERF_INFERENCE_VERSION": "v5.1",
           "CM_MLPERF_SUBMISSION_DIVISION": "open", "CM_MLPERF_EXECUTION_MODE": "test", **kw}
    metadata = json.load(open(env["CM_MLPERF_SUBMISSION_METADATA"]))
    del metadata["submitter"]
    return env, metadata


def test_an_open_test_run_is_named_and_marked_as_a_placeholder_everywhere(tmp_path):
    env, data = env_without_submitter()
    (tmp_path / "meta.json").write_text(json.dumps(data))
    meta = metadata_from_env({**env, "CM_MLPERF_SUBMISSION_METADATA": str(tmp_path / "meta.json")})
    assert meta.submitter == PLACEHOLDER_SUBMITTER
    system = json.load(open(os.path.join(FIX, "system.json")))     # as the description step writes it without one
    (tmp_path / "system.json").write_text(json.dumps({**system, "submitter": DEFAULT_SUBMITTER}))
    report = build_submission(BuildRequest(os.path.join(FIX, "results-v5.1"), str(tmp_path / "system.json"),
                                           meta, str(tmp_path / "mlperf_submission")))
    sub = os.path.join(report.submission_dir, "open", PLACEHOLDER_SUBMITTER)
    marker = f"{PLACEHOLDER_SUBMITTER} is a placeholder, not a submitter"
    assert json.load(open(os.path.join(sub, "systems", f"{SYS}.json")))["submitter"] == PLACEHOLDER_SUBMITTER
    assert marker in open(os.path.join(report.submission_dir, "README.md")).read()
    page = open(os.path.join(sub, "results", SYS, "summary.html")).read()
    assert f'id="placeholder"><strong>Placeholder: submitter not given: {marker}' in page
    assert any(marker in w for w in report.warnings)
    assert not any("replaced by" in w and "submitter" in w for w in report.warnings)   # said once, as above
    tarball = pack(report.submission_dir, meta.submitter)
    assert os.path.basename(tarball.path) == f"mlperf_submission_{PLACEHOLDER_SUBMITTER}.tar.gz"


def test_a_submitter_given_only_in_the_systems_json_is_named_where_the_placeholder_replaces_it(tmp_path):
    """--sut_json with {"submitter": "Acme"} and no --submitter: the tree is the placeholder's (its
    folder must match the systems JSON), and the run says whose word was replaced and how to keep it."""
    env, data = env_without_submitter()
    (tmp_path / "meta.json").write_text(json.dumps(data))
    system = json.load(open(os.path.join(FIX, "system.json")))
    (tmp_path / "system.json").write_text(json.dumps({**system, "submitter": "Acme"}))
    meta = metadata_from_env({**env, "CM_MLPERF_SUBMISSION_METADATA": str(tmp_path / "meta.json")})
    report = build_submission(BuildRequest(os.path.join(FIX, "results-v5.1"), str(tmp_path / "system.json"),
                                           meta, str(tmp_path / "mlperf_submission")))
    sub = os.path.join(report.submission_dir, "open", PLACEHOLDER_SUBMITTER)
    assert json.load(open(os.path.join(sub, "systems", f"{SYS}.json")))["submitter"] == PLACEHOLDER_SUBMITTER
    said = [w for w in report.warnings if "submitter='Acme'" in w]
    assert len(said) == 1 and "pass --submitter=Acme" in said[0] and PLACEHOLDER_SUBMITTER in said[0]


@pytest.mark.parametrize("division,mode", [("closed", "test"), ("open", "valid"), ("closed", "valid")])
def test_a_closed_or_valid_run_is_refused(tmp_path, division, mode):
    env, data = env_without_submitter(CM_MLPERF_SUBMISSION_DIVISION=division, CM_MLPERF_EXECUTION_MODE=mode)
    (tmp_path / "meta.json").write_text(json.dumps(data))
    with pytest.raises(SubmissionError) as e:
        metadata_from_env({**env, "CM_MLPERF_SUBMISSION_METADATA": str(tmp_path / "meta.json")})
    assert str(e.value).startswith(f"--submitter: is not given; a {mode}-mode run in the {division} division is a "
                                   "submission")
    assert "fix: pass --submitter=ORG" in str(e.value)
    assert not (tmp_path / "mlperf_submission").exists()
