import json
import os

from mlperf_llm.submission.inputs import Metadata
from mlperf_llm.submission.tree import BuildRequest, build_submission

FIX = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "submission"))
ROUNDS = ("v4.1", "v5.0", "v5.1", "v6.0", "v6.1")


def inference_source(version: str):
    """(path, None): the round's mlcommons/inference source in ../shared (tests/inference_sources.py)."""
    from inference_sources import inference_source as shared
    return shared(version), None


def metadata(version: str, division: str, **kw) -> Metadata:
    d = json.load(open(os.path.join(FIX, "metadata.json")))
    d.update(round=version, division=division, **kw)
    return Metadata.from_dict(d)


def build(tmp_path, version: str, division: str, **kw):
    req = BuildRequest(os.path.join(FIX, f"results-{version}"), os.path.join(FIX, "system.json"),
                       metadata(version, division, **kw), str(tmp_path / "mlperf_submission"))
    return build_submission(req)
