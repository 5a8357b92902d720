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


def build(tmp_path, version: str, division: str, results: str = "", system_type: str = "", **kw):
    """The tree of results-<version> (llama2-70b), or of results-<version>-<results> (llama3.1-8b, -edge);
    `system_type`: the fixture's system description with that system_type (as --category writes it)."""
    folder = f"results-{version}" + (f"-{results}" if results else "")
    system = os.path.join(FIX, "system.json")
    if system_type:
        doc = dict(json.load(open(system)), system_type=system_type)
        system = str(tmp_path / "system.json")
        with open(system, "w") as f:
            json.dump(doc, f)
    req = BuildRequest(os.path.join(FIX, folder), system, metadata(version, division, **kw),
                       str(tmp_path / "mlperf_submission"))
    return build_submission(req)


def set_p99(log_path: str, ttft_ms: float, tpot_ms: float) -> None:
    """Rewrite a detail log's p99 TTFT and TPOT (the pre-check's Interactive limits)."""
    import re
    with open(log_path, encoding="utf-8") as f:
        text = f.read()
    for key, ms in (("result_first_token_99.00_percentile_latency_ns", ttft_ms),
                    ("result_time_per_output_token_99.00_percentile_ns", tpot_ms)):
        text = re.sub(rf'("key": "{re.escape(key)}", "value": )[\d.]+', rf"\g<1>{int(ms * 1e6)}", text)
    with open(log_path, "w", encoding="utf-8") as f:
        f.write(text)
