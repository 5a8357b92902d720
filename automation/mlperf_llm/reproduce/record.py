"""The reproduction record: one JSON file that says exactly how a submission was made.

It sits in every measurement folder of a submission (measurements/<system>/<model>/<Scenario>/ up
to v5.1, results/<system>/<model>/<Scenario>/ from v6.0), the folder whose README.md and user.conf
the official checkers require; they accept other files there. Its name starts with no system name,
so the checkers' search for `<system>*.json` never picks it. The submission layer owns that name
(submission/spec.py: RECORD_NAME), since a submission carries the record; this package builds on
the submission, never the reverse.

Sections (all plain JSON values):
    format        RECORD_FORMAT
    project       name, version, git commit (+ dirty) when run from a checkout, files_sha256 of
                  automation/, script/ and cmr.yaml (equal for a checkout and a wheel of one revision)
    command       argv as typed (absolute paths kept: the record is for reading, not pasting),
                  and the portable command the README shows
    request       tags, variations of the top step, inputs, --env.*, --adr.* (secrets: present/absent)
    steps         per step: script, variations, cache key, cached, the env that entered its key
    model         name, path (informative), content sha256 of the checkpoint folder, dtype
    dataset       path (informative), content sha256, rows, split
    versions      Python, vLLM, torch, transformers, LoadGen, mlcommons/inference; the server's
                  environment and this run's own (the harness's and the scoring's): every
                  distribution's version and archive sha256 where known, one digest of each
    loadgen       version and seeds (qsl_rng_seed, sample_index_rng_seed, schedule_rng_seed)
    server        the vLLM command, its env, its flags, or the URLs of servers that were given
    user_conf     per test folder: the user.conf lines
    targets       per scenario: the target and where it came from (targets.json of the run)
    sizes         per test of a test run, "Scenario/kind": its size (harness/testsizes.py): what a
                  replay runs each test at, so that its accuracy tests score the same samples
    system        the host facts detection found (CM_HOST_*, CM_GPU_*), device
    secrets       names of secret inputs: "present" | "absent" (never a value)
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields

from ..files import write_json_atomic
from ..harness.hostlimit import LOAD_SCENARIOS
from ..harness.userconf import TARGET_INPUTS
from ..submission.spec import IMAGE_FACTS_NAME, RECORD_NAME

RECORD_FORMAT = 1
RESULTS_RECORD = RECORD_NAME          # the copy the run keeps in its results folder


class RecordError(Exception):
    """A record that is missing or unreadable: names the file, the reason and the fix."""

    def __init__(self, where: str, reason: str, fix: str):
        super().__init__(f"{where}: {reason}. {fix}")
        self.where, self.reason, self.fix = where, reason, fix


@dataclass
class Record:
    format: int = RECORD_FORMAT
    project: dict = field(default_factory=dict)
    command: dict = field(default_factory=dict)
    request: dict = field(default_factory=dict)
    steps: list = field(default_factory=list)
    model: dict = field(default_factory=dict)
    dataset: dict = field(default_factory=dict)
    versions: dict = field(default_factory=dict)
    loadgen: dict = field(default_factory=dict)
    server: dict = field(default_factory=dict)
    user_conf: dict = field(default_factory=dict)
    targets: dict = field(default_factory=dict)
    sizes: dict = field(default_factory=dict)
    system: dict = field(default_factory=dict)
    secrets: dict = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True) + "\n"


def chosen_targets(rec: Record) -> dict:
    """The targets the recorded run chose itself (derived from its Offline test, found, lowered to
    meet the latency bounds), as {input name: (target, where it came from)}; a target its command
    gave is an input already and is left out. The target is what its accuracy tests ran at; where
    its performance test ran at another load, that is performance_loads'."""
    inputs = rec.request.get("inputs") or {}
    out = {}
    for scenario, entry in sorted((rec.targets or {}).items()):
        name = TARGET_INPUTS.get(scenario)
        target = entry.get("target_qps") if isinstance(entry, dict) else None
        source = (entry.get("source") if isinstance(entry, dict) else "") or "source not recorded"
        if name and name not in inputs and isinstance(target, (int, float)) and target > 0:
            out[name] = (target, source)
    return out


def performance_loads(rec: Record) -> dict:
    """{scenario: (load, why)} for each recorded performance test that ran at a load other than its
    scenario's target: the lowest load, where the run found the latency bounds out of its host's
    reach (harness/hostlimit.py), or a load given to it. A replay gives both, so that its
    performance test and its accuracy tests each run where the original's did."""
    out = {}
    for scenario, entry in sorted((rec.targets or {}).items()):
        if not isinstance(entry, dict) or scenario not in LOAD_SCENARIOS:     # a record is untrusted
            continue
        limit = entry.get("host_limit") if isinstance(entry.get("host_limit"), dict) else {}
        load = entry.get("performance_target_qps", limit.get("performance_target_qps"))
        if isinstance(load, (int, float)) and not isinstance(load, bool) and 0 < load < float("inf"):
            why = (f"the lowest load: {limit.get('sentence', '')}" if limit.get("performance_target_qps") is not None
                   else "a load given to it")
            out[scenario] = (float(load), why)
    return out


def recorded_sizes(rec: Record) -> tuple[dict[str, int], str]:
    """The size each test of the recorded test run ran at ({"Offline/accuracy": 9, ...}) and where it
    was read: the record's sizes section; for a record without one (an earlier version), its
    user.conf lines: a performance test's min_query_count, an accuracy test's sample count
    (TEST06's count is its audit.config's, which user.conf does not hold). ({}, "") for a valid run
    or a record that says none."""
    from ..harness.testsizes import TestSizesError, from_mapping, key
    if rec.sizes:
        try:
            return from_mapping(rec.sizes, "the record's sizes"), "the record's sizes"
        except TestSizesError as e:
            raise RecordError("the record", f"its sizes section is not a list of test sizes ({e})",
                              "use the record the run wrote, unedited") from None
    out = {}
    for folder, lines in sorted((rec.user_conf or {}).items()):
        parts = str(folder).split("/")
        if parts[-1] == "accuracy" and len(parts) >= 2:
            name, wanted = key(parts[-2], "accuracy"), ".performance_sample_count_override"
        elif len(parts) >= 3 and parts[-2] == "performance":
            name, wanted = key(parts[-3], "performance"), ".min_query_count"
        else:
            continue
        values = [ln.split("=", 1)[1].strip() for ln in lines if isinstance(ln, str) and "=" in ln
                  and ln.split("=", 1)[0].strip().endswith(wanted)]
        if values and values[0].isdigit() and int(values[0]) > 0 and \
                any(ln.split("=", 1)[0].strip().endswith(".min_query_count") for ln in lines if "=" in str(ln)):
            out[name] = int(values[0])      # min_query_count is written in test mode only
    return out, "the record's user.conf lines (it has no sizes section)" if out else ""


def write(record: Record, path: str) -> str:
    write_json_atomic(path, asdict(record), indent=1, sort_keys=True)
    return path


def image_tag(env: dict) -> str:
    """The image this run's server ran in (--docker, CM_VLLM_IMAGE), or its whole chain (--docker=chain,
    in the image: CM_MLPERF_CHAIN_IMAGE); "" for neither."""
    from ..containers.chain import CHAIN_IMAGE_ENV, in_image
    if env.get("CM_VLLM_IMAGE"):
        return env["CM_VLLM_IMAGE"]
    return env.get(CHAIN_IMAGE_ENV, "") if in_image(env) else ""


def keep_image_facts(env: dict, results_dir: str) -> str | None:
    """--docker: the facts of the image the server (or the chain) ran in (build-mlperf-image's file), copied beside
    the record (the submission step copies both into every measurement folder); its path, or None."""
    import shutil
    from ..containers.image import FACTS_ENV
    facts = env.get(FACTS_ENV, "")
    if not image_tag(env) or not os.path.isfile(facts):
        return None
    dest = os.path.join(results_dir, IMAGE_FACTS_NAME)
    if os.path.abspath(facts) != os.path.abspath(dest):
        shutil.copyfile(facts, dest)
    return dest


def from_dict(data: dict, where: str = "record") -> Record:
    if not isinstance(data, dict):
        raise RecordError(where, f"holds a {type(data).__name__}, not a JSON object",
                          "use the record the run wrote, unedited")
    fmt = data.get("format")
    if fmt != RECORD_FORMAT:
        raise RecordError(where, f"is record format {fmt!r}; this cm4mlperf-llm reads format {RECORD_FORMAT}",
                          "replay it with the cm4mlperf-llm revision named in its 'project' section")
    known = {f.name for f in fields(Record)}
    values = {k: v for k, v in data.items() if k in known}
    for f in fields(Record):
        want = list if f.name == "steps" else int if f.name == "format" else dict
        if f.name in values and not isinstance(values[f.name], want):
            raise RecordError(where, f"section {f.name!r} is a {type(values[f.name]).__name__}, "
                              f"not a {want.__name__}", "use the record the run wrote, unedited")
    return Record(**values)


def read(path: str) -> Record:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise RecordError(path, f"cannot be read ({e.strerror})", "check the path") from None
    except json.JSONDecodeError as e:
        raise RecordError(path, f"is not valid JSON ({e.msg} at line {e.lineno})",
                          "use the record the run wrote, unedited") from None
    return from_dict(data, path)


def find(tree: str) -> list[str]:
    """Every record in a submission tree, sorted (one per measurement folder)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames.sort()
        if RECORD_NAME in filenames:
            out.append(os.path.join(dirpath, RECORD_NAME))
    return sorted(out)
