"""The system description step's edge: CM env (the user's inputs and the versions earlier steps
published) -> typed `SutInputs` and `SoftwareStack` for sut.build_sut_description."""

from __future__ import annotations

from .sut import SoftwareStack, SutInputs


def _opt(env: dict, key: str) -> str | None:
    value = env.get(key, "")
    return value if value != "" else None


def sut_inputs_from_env(env: dict, overrides: dict | None = None) -> SutInputs:
    hw_name = env.get("CM_HW_NAME") or (env.get("CM_HOST_SYSTEM_NAME") or "default").split(".")[0].replace("-", "_")
    return SutInputs(
        hw_name=hw_name,
        submitter=_opt(env, "CM_MLPERF_SUBMITTER"), division=_opt(env, "CM_MLPERF_SUBMISSION_DIVISION"),
        status=_opt(env, "CM_MLPERF_SYSTEM_STATUS"), system_name=_opt(env, "CM_MLPERF_SYSTEM_NAME"),
        system_type=_opt(env, "CM_MLPERF_SYSTEM_TYPE") or _opt(env, "CM_MLPERF_SUBMISSION_CATEGORY"),
        system_type_detail=_opt(env, "CM_MLPERF_SYSTEM_TYPE_DETAIL"),
        cooling=_opt(env, "CM_MLPERF_SYSTEM_COOLING"), hw_notes=_opt(env, "CM_MLPERF_HW_NOTES"),
        sw_notes=_opt(env, "CM_MLPERF_SW_NOTES"), overrides=overrides or {},
    )


# CM_MLPERF_BACKEND -> (framework as submitters write it, env key of its version)
BACKENDS = {"vllm": ("vLLM", "CM_VLLM_VERSION"), "transformers": ("transformers", "CM_TRANSFORMERS_VERSION")}


def software_from_env(env: dict) -> SoftwareStack:
    """Versions the run's steps published (CM_VLLM_VERSION, CM_TORCH_VERSION, CM_LOADGEN_VERSION, ...)."""
    extra = tuple(x.strip() for x in env.get("CM_MLPERF_OTHER_SOFTWARE", "").split(";") if x.strip())
    backend = env.get("CM_MLPERF_BACKEND", "vllm").lower()
    name, version_key = BACKENDS.get(backend, (backend, ""))
    return SoftwareStack(
        framework_name=env.get("CM_MLPERF_FRAMEWORK_NAME") or name,
        framework_version=env.get("CM_MLPERF_FRAMEWORK_VERSION") or env.get(version_key, ""),
        torch_version=env.get("CM_TORCH_VERSION", ""),
        loadgen_version=env.get("CM_LOADGEN_VERSION") or env.get("CM_MLCOMMONS_LOADGEN_VERSION", ""),
        python_version=env.get("CM_PYTHON_VERSION", ""),
        tool_version=env.get("CM_CM4MLPERF_LLM_VERSION", ""),
        extra=extra,
    )
