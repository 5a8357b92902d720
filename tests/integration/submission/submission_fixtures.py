import json
import os

from mlperf_llm.submission.inputs import Metadata
from mlperf_llm.submission.tree import BuildRequest, build_submission

FIX = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "submission"))
ROUNDS = ("v4.1", "v5.0", "v5.1")
SHARED = os.path.abspath(os.path.join(FIX, "..", "..", "..", "..", "shared", "mlcommons-inference"))
SHARED_FOLDERS = {"v4.1": ("v4.1",), "v5.0": ("v5.0", "v5.1.1"), "v5.1": ("v5.1.1",)}


def inference_source(version: str):
    """(path, None) of an mlcommons/inference source whose checker knows `version`, or (None, why not).

    Looked for in $CM_MLPERF_INFERENCE_SOURCE (a checkout, or a folder of checkouts named v4.1, v5.0,
    v5.1), then in ../shared/mlcommons-inference beside the clone (v4.1, v5.0, v5.1.1: its README)."""
    candidates = []
    env = os.environ.get("CM_MLPERF_INFERENCE_SOURCE")
    if env:
        candidates += [os.path.join(env, version), env]
    candidates += [os.path.join(SHARED, folder) for folder in SHARED_FOLDERS.get(version, ())]
    for c in candidates:
        checker = os.path.join(c, "tools", "submission", "submission_checker.py")
        if os.path.isfile(checker) and f'"{version}": {{' in open(checker, encoding="utf-8").read():
            return c, None
    return None, (f"no mlcommons/inference source with a {version} checker: set CM_MLPERF_INFERENCE_SOURCE "
                  f"to a checkout at tag {version} (looked in {', '.join(candidates)})")


def metadata(version: str, division: str, **kw) -> Metadata:
    d = json.load(open(os.path.join(FIX, "metadata.json")))
    d.update(round=version, division=division, **kw)
    return Metadata.from_dict(d)


def build(tmp_path, version: str, division: str, **kw):
    req = BuildRequest(os.path.join(FIX, f"results-{version}"), os.path.join(FIX, "system.json"),
                       metadata(version, division, **kw), str(tmp_path / "mlperf_submission"))
    return build_submission(req)
