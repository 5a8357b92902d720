"""The CM env contract of the submission steps: CM_* variables in, a Metadata and a BuildRequest out.

Precedence, low to high: defaults, the metadata JSON file (--metadata=FILE), CM_* env variables (the
inputs of the step and of the steps before it).
"""

from __future__ import annotations

import platform
import shlex
import sys

from .errors import SubmissionError
from .inputs import Metadata, load_json, resolve_submitter

ENV_FIELDS = {
    "CM_MLPERF_SUBMITTER": "submitter",
    "CM_MLPERF_SUBMISSION_DIVISION": "division",
    "CM_MLPERF_SUBMISSION_CATEGORY": "category",
    "CM_MLPERF_INFERENCE_VERSION": "round",
    "CM_MLPERF_SUBMISSION_SYSTEM_FOLDER": "system_name",
    "CM_MLPERF_IMPLEMENTATION": "implementation",
    "CM_MLPERF_BACKEND": "framework",
    "CM_MLPERF_DEVICE": "device",
    "CM_MLPERF_EXECUTION_MODE": "execution_mode",
    "CM_MLPERF_RUN_COMMAND": "command",
    "CM_VLLM_SERVE_COMMAND": "vllm_serve_command",
    "CM_VLLM_SERVER_COMMAND": "vllm_serve_command",     # what run-vllm-server started
    "CM_MLPERF_API_MODEL_NAME": "served_model_name",
    "CM_ML_MODEL_STARTING_WEIGHTS_FILENAME": "starting_weights_filename",
    "CM_ML_MODEL_WEIGHT_DATA_TYPES": "weight_data_types",
    "CM_MLPERF_SUBMISSION_AVAILABILITY": "availability",
    "CM_MLPERF_CODE_VERSION": "code_version",
}
QUANT_ENV = {   # CM_* -> Quantization field
    "CM_MLPERF_QUANTIZATION": "scheme",
    "CM_MLPERF_QUANTIZATION_TOOL": "tool",
    "CM_MLPERF_QUANTIZATION_CALIBRATION_DATASET": "calibration_dataset",
    "CM_MLPERF_QUANTIZATION_NUM_SAMPLES": "num_calibration_samples",
    "CM_MLPERF_QUANTIZATION_GROUP_SIZE": "group_size",
    "CM_MLPERF_QUANTIZED_MODEL_PATH": "checkpoint",
}
VERSION_ENV = {"CM_VLLM_VERSION": "vLLM", "CM_TORCH_VERSION": "torch", "CM_TRANSFORMERS_VERSION": "transformers",
               "CM_MLPERF_LOADGEN_VERSION": "mlcommons-loadgen", "CM_LOADGEN_VERSION": "mlcommons-loadgen",
               "CM_PYTHON_VERSION": "Python", "CM_MLPERF_INFERENCE_SOURCE_TAG": "mlcommons/inference"}


def reproducing_command(argv: list | None = None) -> str:
    """The command line that started this process (`cm run script ...`) as another machine can paste
    it: options whose value is a path of this machine are left out (named in a trailing comment),
    so the defaults or the other machine's own folders apply. The exact argv is in the record."""
    from ..portable import portable_argv
    portable, dropped = portable_argv(list(argv if argv is not None else sys.argv))
    text = " ".join(shlex.quote(a) for a in portable)
    return text + (f"   # left out (paths of the submitting machine): {', '.join(dropped)}" if dropped else "")


def host_platform() -> dict:
    try:
        from importlib import metadata
        version = metadata.version("cm4mlperf-llm")
    except Exception:
        version = "source checkout"
    return {"OS version": platform.platform(), "CPU version": platform.machine() or "unknown",
            "Python version": sys.version.replace("\n", " "), "cm4mlperf-llm version": version}


def metadata_from_env(env: dict) -> Metadata:
    data = load_json(env["CM_MLPERF_SUBMISSION_METADATA"], "metadata") if env.get(
        "CM_MLPERF_SUBMISSION_METADATA") else {}
    for key, name in ENV_FIELDS.items():
        if env.get(key):
            data[name] = env[key]
    q = data.get("quantization") or {}
    q = {"scheme": q} if isinstance(q, str) else dict(q)
    for key, name in QUANT_ENV.items():
        if env.get(key):
            value = env[key]
            q[name] = int(value) if name in ("num_calibration_samples", "group_size") and value.isdigit() else value
    data["quantization"] = q
    server_env = sorted((k[len("CM_VLLM_SERVER_ENV_"):], v) for k, v in env.items()
                        if k.startswith("CM_VLLM_SERVER_ENV_"))
    if data.get("vllm_serve_command"):      # no folder of the submitting machine in what others read
        from ..portable import portable_text
        data["vllm_serve_command"] = portable_text(data["vllm_serve_command"])
    if server_env and data.get("vllm_serve_command") and env.get("CM_VLLM_SERVER_COMMAND"):
        # the variables the server started with (threads, KV cache, one process) belong to its command
        data["vllm_serve_command"] = " ".join(f"{k}={shlex.quote(v)}" for k, v in server_env) \
            + " " + data["vllm_serve_command"]
    data.setdefault("host_platform", host_platform())
    versions = dict(data.get("component_versions") or {})
    versions.update({label: env[k] for k, label in VERSION_ENV.items() if env.get(k)})
    data["component_versions"] = versions
    if not data.get("command"):
        data["command"] = reproducing_command()
    if not data.get("system_name") and env.get("CM_HW_NAME"):
        parts = [env["CM_HW_NAME"], data.get("implementation", "reference"), data.get("device", "cpu"),
                 data.get("framework", "vllm")]
        data["system_name"] = "-".join(p.replace(" ", "_") for p in parts)
    data["submitter"] = resolve_submitter(data.get("submitter"), data.get("division", "open"),
                                          data.get("execution_mode", "test"))
    return Metadata.from_dict(data, "inputs")


def sut_desc_path(env: dict) -> str:
    path = env.get("CM_MLPERF_SUBMISSION_SUT_DESC") or env.get("CM_MLPERF_SUT_DESC_PATH")
    if not path:
        raise SubmissionError("SUT description", "is not given",
                              "pass --sut_desc=<hw_name>.json or let get-mlperf-inference-sut-description write it")
    return path


def submission_outcome(report, meta: Metadata, tarball=None):
    """The typed record of a built submission for `state` (mlperf_llm.outcomes.SubmissionOutcome):
    the tree, summary.html, the tarball, the warnings and each result as written."""
    from ..outcomes import SubmissionOutcome, SubmittedResult
    return SubmissionOutcome(
        directory=report.submission_dir, summary_html=report.summary_html, submitter=meta.submitter,
        round=meta.round, tarball=tarball.path if tarball else "", tarball_sha1=tarball.sha1 if tarball else "",
        warnings=tuple(report.warnings),
        results=tuple(SubmittedResult(r.model, r.scenario, r.value, r.unit, r.valid) for r in report.results))
