"""What the builder reads: the metadata of the run, the SUT description, and the harness's results folder.

Results folder layout (as the harness and the accuracy/compliance steps write it):
    <results>/<model>/<Scenario>/performance/run_1/{mlperf_log_summary.txt, mlperf_log_detail.txt, user.conf}
    <results>/<model>/<Scenario>/accuracy/{accuracy.txt, mlperf_log_accuracy.json, mlperf_log_summary.txt,
                                           mlperf_log_detail.txt}
    <results>/<model>/<Scenario>/TEST06/{verify_accuracy.txt, accuracy/mlperf_log_accuracy.json}
user.conf may also sit in the scenario folder; mlperf.conf (v4.1) in run_1/, the scenario folder or
<results>/ itself.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields

# the checker's rules for system_desc.json, kept in one place
from ..sysinfo.sut import MEANINGFUL_FIELDS, REQUIRED_FIELDS, VALID_STATUS, VALID_SYSTEM_TYPES
from .errors import SubmissionError
from ..accuracy.compliance_verify import VERIFY_FILES
from .spec import MODELS, SCENARIO_ORDER

PLACEHOLDER_SUBMITTER = "SUBMITTER-NOT-GIVEN"   # the name of a tree whose submitter was not given


def resolve_submitter(given: str | None, division: str, execution_mode: str) -> str:
    """The submitter a tree is named after. Not given: refused for a closed-division or valid-mode
    run (a submission names its submitter in its folder, tarball and systems JSON); an open test run
    gets PLACEHOLDER_SUBMITTER, which every document of the tree marks as a placeholder."""
    if given:
        check_folder_name("--submitter", given)
        return given
    if division == "closed" or execution_mode == "valid":
        raise SubmissionError("--submitter", f"is not given; a {execution_mode}-mode run in the {division} division "
                              "is a submission, named after its submitter (its folder, tarball and systems JSON)",
                              "pass --submitter=ORG (letters, digits, _ or -)")
    return PLACEHOLDER_SUBMITTER


def placeholder_note(submitter: str) -> str:
    """What a document of the tree says when the submitter is the placeholder ('' otherwise)."""
    if submitter != PLACEHOLDER_SUBMITTER:
        return ""
    return (f"submitter not given: {PLACEHOLDER_SUBMITTER} is a placeholder, not a submitter; rerun with "
            "--submitter=ORG to name the tree, its tarball and its systems JSON")


@dataclass
class Quantization:
    scheme: str = "none"            # none | fp8 | gptq-w4a16 | int8-w8a8
    tool: str = ""                  # e.g. "llmcompressor 0.14.0.1"
    calibration_dataset: str = ""   # e.g. "open_orca_gpt4_tokenized_llama.calibration_1000.pkl"
    num_calibration_samples: int = 0
    group_size: int = 128           # GPTQ
    ignore: list = field(default_factory=lambda: ["lm_head"])
    checkpoint: str = ""            # the quantized checkpoint served


@dataclass
class Metadata:
    submitter: str
    division: str = "open"          # closed | open
    category: str = "datacenter"
    round: str = ""                  # "v6.1"; "" = the newest round that has the results' model
    system_name: str = ""           # the folder name under systems/, results/, measurements/
    implementation: str = "reference"
    framework: str = "vllm"
    device: str = "cpu"
    execution_mode: str = "test"    # test | valid
    command: str = ""               # the exact command that reproduces the run
    vllm_serve_command: str = ""
    served_model_name: str = ""
    starting_weights_filename: str = ""   # "": the benchmark's reference checkpoint (its Hugging Face URL)
    weight_data_types: str = "bf16"
    input_data_types: str = "int32"
    retraining: str = "no"
    availability: str = ""          # e.g. "Available as of Nov 2026"
    host_platform: dict = field(default_factory=dict)    # os, cpu, python, engine (versions)
    component_versions: dict = field(default_factory=dict)
    step_cache_keys: dict = field(default_factory=dict)   # step -> cache key of the entry the run used
    accuracy_targets: dict = field(default_factory=dict)  # metric -> [min, max|None]; empty = closed targets
    accuracy_targets_label: str = ""
    quantization: Quantization = field(default_factory=Quantization)
    code_version: str = ""          # git commit of this project

    @classmethod
    def from_dict(cls, data: dict, source: str = "metadata") -> "Metadata":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SubmissionError(source, f"has unknown keys {unknown}", f"use only {sorted(known)}")
        if not data.get("submitter"):
            raise SubmissionError(source, "has no submitter", "give --submitter=ORG (letters, digits, _ or -)")
        values = dict(data)
        q = values.get("quantization") or {}
        if isinstance(q, str):
            q = {"scheme": q}
        qknown = {f.name for f in fields(Quantization)}
        if set(q) - qknown:
            raise SubmissionError(source, f"quantization has unknown keys {sorted(set(q) - qknown)}",
                                  f"use only {sorted(qknown)}")
        values["quantization"] = Quantization(**q)
        meta = cls(**values)
        meta.validate(source)
        return meta

    def validate(self, source: str) -> None:
        for name, value, allowed in (("division", self.division, ("closed", "open")),
                                     ("category", self.category, ("datacenter", "edge")),
                                     ("execution_mode", self.execution_mode, ("test", "valid")),
                                     ("quantization.scheme", self.quantization.scheme,
                                      ("none", "fp8", "gptq-w4a16", "int8-w8a8"))):
            if value not in allowed:
                raise SubmissionError(f"{source} {name}={value!r}", "is not allowed", f"use one of {allowed}")
        for name in ("submitter", "system_name", "implementation"):
            if getattr(self, name):
                check_folder_name(f"{source} {name}", getattr(self, name))


def check_folder_name(what: str, value: str) -> None:
    """A submitter, system or implementation names a folder of the tree (and the tarball): no
    whitespace or control character (a tab separates HTML attributes as a space does), no path
    separator, no leading dot."""
    if value.startswith(".") or any(c.isspace() or ord(c) < 32 or ord(c) == 127 or c in "/\\" for c in value):
        raise SubmissionError(f"{what}={value!r}", "cannot be a folder name in the tree (whitespace, a control "
                              "character, a leading dot, '/' or '\\')", "use letters, digits, '_', '-' and '.'")


def load_json(path: str, what: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise SubmissionError(f"{what} {path}", f"cannot be read ({e.strerror})", "give the path of an existing file") from None
    except json.JSONDecodeError as e:
        raise SubmissionError(f"{what} {path}", f"is not JSON ({e.msg}, line {e.lineno})", "fix the JSON") from None
    if not isinstance(data, dict):
        raise SubmissionError(f"{what} {path}", "is not a JSON object", "give a JSON object of fields")
    return data


def check_system(system: dict, source: str) -> list[str]:
    """Problems with a SUT description; empty when every required field is there and meaningful."""
    problems = [f"field {k!r} is missing" for k in REQUIRED_FIELDS if k not in system]
    problems += [f"field {k!r} is empty" for k in MEANINGFUL_FIELDS
                 if k in system and (system[k] is None or str(system[k]).strip() == "")]
    if str(system.get("status", "")).lower() not in VALID_STATUS:
        problems.append(f"status {system.get('status')!r} is not available, preview or rdi")
    if system.get("system_type") not in VALID_SYSTEM_TYPES:
        problems.append(f"system_type {system.get('system_type')!r} is not datacenter or edge")
    return problems


@dataclass
class ScenarioRun:
    model: str
    scenario: str
    path: str                      # <results>/<model>/<Scenario>
    performance: str | None        # performance/run_1 folder
    accuracy: str | None
    test06: str | None             # TEST06 folder
    user_conf: str | None
    mlperf_conf: str | None
    compliance: dict = field(default_factory=dict)   # TEST07 / TEST09 -> its folder (gpt-oss-120b), when verified


def _first_file(*candidates: str) -> str | None:
    return next((c for c in candidates if os.path.isfile(c)), None)


def _complete(folder: str, names: tuple[str, ...]) -> str | None:
    return folder if all(os.path.isfile(os.path.join(folder, n)) for n in names) else None


def discover_results(results_dir: str) -> list[ScenarioRun]:
    if not os.path.isdir(results_dir):
        raise SubmissionError(f"results folder {results_dir}", "does not exist",
                              "give --results_dir=DIR as the harness wrote it (<model>/<Scenario>/performance/run_1)")
    runs = []
    for model in sorted(os.listdir(results_dir)):
        mdir = os.path.join(results_dir, model)
        if model not in MODELS or not os.path.isdir(mdir):    # find_performance/, latency_search/, ...
            continue
        for scenario in sorted(os.listdir(mdir), key=lambda s: (SCENARIO_ORDER + (s,)).index(s)):
            sdir = os.path.join(mdir, scenario)
            if scenario not in SCENARIO_ORDER or not os.path.isdir(sdir):
                continue
            perf = _complete(os.path.join(sdir, "performance", "run_1"),
                             ("mlperf_log_summary.txt", "mlperf_log_detail.txt"))
            acc = _complete(os.path.join(sdir, "accuracy"), ("accuracy.txt", "mlperf_log_accuracy.json",
                                                             "mlperf_log_summary.txt", "mlperf_log_detail.txt"))
            t06 = _complete(os.path.join(sdir, "TEST06"), ("verify_accuracy.txt",))
            verified = {test: _complete(os.path.join(sdir, test), (name,)) for test, name in VERIFY_FILES.items()}
            run1 = os.path.join(sdir, "performance", "run_1")
            runs.append(ScenarioRun(model, scenario, sdir, perf, acc, t06,
                                    _first_file(os.path.join(run1, "user.conf"), os.path.join(sdir, "user.conf")),
                                    _first_file(os.path.join(run1, "mlperf.conf"), os.path.join(sdir, "mlperf.conf"),
                                                os.path.join(results_dir, "mlperf.conf")),
                                    {t: d for t, d in verified.items() if d}))
    if not runs:
        raise SubmissionError(f"results folder {results_dir}", "holds no <model>/<Scenario> folders",
                              "run the benchmark first, or point at the folder the harness wrote")
    return runs
