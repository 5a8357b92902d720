"""The one-command run (`run-mlperf-inference-app`): input checks before anything runs, and the
closing summary. The steps themselves live in their own scripts."""
from __future__ import annotations

import difflib

MODELS = ("llama2-70b-99", "llama2-70b-99.9")
SCENARIOS = ("Offline", "Server", "Interactive")
CHOICES = {
    "CM_MLPERF_MODEL": ("--model", MODELS),
    "CM_MLPERF_IMPLEMENTATION": ("--implementation", ("reference",)),
    "CM_MLPERF_BACKEND": ("--framework", ("vllm", "transformers")),
    "CM_MLPERF_DEVICE": ("--device", ("cpu", "cuda", "rocm")),
    "CM_MLPERF_SUBMISSION_DIVISION": ("--division", ("open", "closed")),
    "CM_MLPERF_SUBMISSION_CATEGORY": ("--category", ("datacenter", "edge")),
    "CM_MLPERF_EXECUTION_MODE": ("--execution_mode", ("test", "valid")),
}
NUMBERS = {
    "CM_MLPERF_LOADGEN_SERVER_TARGET_QPS": "--server_target_qps",
    "CM_MLPERF_LOADGEN_OFFLINE_TARGET_QPS": "--offline_target_qps",
    "CM_MLPERF_LOADGEN_TEST_QUERY_COUNT": "--test_query_count",
    "CM_MLPERF_MAX_DURATION_TEST": "--max_test_duration",
    "CM_MLPERF_NUM_WORKERS": "--num_workers",
}


def _closest(value: str, choices) -> str:
    close = difflib.get_close_matches(value, choices, n=1, cutoff=0.5)
    return f" (did you mean {close[0]}?)" if close else ""


def check_inputs(env: dict) -> list[str]:
    """Every problem with the run's inputs, each naming the input, the reason and the fix."""
    problems = []
    for key, (flag, allowed) in CHOICES.items():
        value = env.get(key, "")
        if value not in allowed:
            problems.append(f"{flag}={value} is not one of {', '.join(allowed)}"
                            + _closest(value, allowed))
    for s in [x.strip() for x in env.get("CM_MLPERF_LOADGEN_SCENARIOS", "").split(",") if x.strip()]:
        if s not in SCENARIOS and s != "all":
            problems.append(f"--scenario={s} is not a LoadGen scenario; use one of "
                            f"{', '.join(SCENARIOS)}" + _closest(s, SCENARIOS))
    for key, flag in NUMBERS.items():
        value = env.get(key, "")
        if value == "":
            continue
        try:
            ok = float(value) > 0
        except ValueError:
            ok = False
        if not ok:
            problems.append(f"{flag}={value} must be a positive number")
    for url in [u.strip() for u in env.get("CM_MLPERF_API_SERVER", "").split(",") if u.strip()]:
        if not url.startswith(("http://", "https://")):
            problems.append(f"--api_server={url} must be a URL such as http://localhost:8000")
    if env.get("CM_MLPERF_EMBEDDED") == "yes" and env.get("CM_MLPERF_SUBMISSION_DIVISION") == "closed":
        problems.append("--division=closed cannot be used with _embedded: the embedded model is "
                        "SmolLM2-135M, not Llama-2-70B, so the run is an open-division run; "
                        "use --division=open")
    results, submission = env.get("CM_MLPERF_RESULTS_DIR"), env.get("CM_MLPERF_SUBMISSION_DIR")
    if results and submission and results.rstrip("/") == submission.rstrip("/"):
        problems.append("--results_dir and --submission_dir must be different folders")
    return problems


def summary(env: dict, state: dict) -> str:
    """The closing lines: what ran, where the results, the submission and the pages are."""
    lines = ["", "=" * 72, f"MLPerf Inference v{env.get('CM_MLPERF_INFERENCE_VERSION', '?')} "
             f"{env.get('CM_MLPERF_MODEL', '')} ({env.get('CM_MLPERF_SUBMISSION_DIVISION', '')}, "
             f"{env.get('CM_MLPERF_EXECUTION_MODE', '')} run)"]
    if env.get("CM_MLPERF_EMBEDDED") == "yes":
        lines.append("weights: the embedded SmolLM2-135M-Instruct standing in for Llama-2-70B "
                     "(open division)")
    for o in state.get("mlperf_harness") or []:
        if isinstance(o, dict):
            lines.append(f"  {o.get('scenario', '')} {o.get('mode', '')}: {o.get('verdict', '')} "
                         f"{o.get('metric', '')} ({o.get('directory', '')})".rstrip())
    for key, label in (("CM_MLPERF_ACCURACY_SUMMARY", "accuracy"),
                       ("CM_MLPERF_TEST06_SUMMARY", "TEST06"),
                       ("CM_MLPERF_SUBMISSION_DIR", "submission"),
                       ("CM_MLPERF_SUBMISSION_TARBALL", "tarball"),
                       ("CM_MLPERF_SUBMISSION_SUMMARY_HTML", "summary page"),
                       ("CM_MLPERF_SUBMISSION_CHECKER_SUMMARY", "checker")):
        if env.get(key):
            lines.append(f"  {label}: {env[key]}")
    lines.append(f"  results: {env.get('CM_MLPERF_RESULTS_DIR', '')}")
    lines.append("=" * 72)
    return "\n".join(lines)
