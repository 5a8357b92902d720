"""The one-command run (`run-mlperf-inference-app`): input checks before anything runs, and the
closing summary. The steps themselves live in their own scripts."""
from __future__ import annotations

import difflib
import os

from cmcontract.yesno import YesNoError, is_yes, parse_yes_no

from . import outcomes
from .benchmarks import BENCHMARKS, CATEGORIES, SCENARIOS, BenchmarkError
from .harness.balance import POLICIES
from .vllm.install import BUILD_NAMES

CHOICES = {
    "CM_MLPERF_IMPLEMENTATION": ("--implementation", ("reference",)),
    "CM_MLPERF_BACKEND": ("--framework", ("vllm", "transformers")),
    "CM_MLPERF_DEVICE": ("--device", tuple(BUILD_NAMES)),        # a vLLM build for each
    "CM_MLPERF_SUBMISSION_DIVISION": ("--division", ("open", "closed")),
    "CM_MLPERF_SUBMISSION_CATEGORY": ("--category", CATEGORIES),
    "CM_MLPERF_EXECUTION_MODE": ("--execution_mode", ("test", "valid")),
}
OPTIONAL_CHOICES = {"CM_MLPERF_BALANCE": ("--balance", POLICIES)}     # checked where given
NUMBERS = {
    "CM_MLPERF_LOADGEN_SERVER_TARGET_QPS": "--server_target_qps",
    "CM_MLPERF_LOADGEN_INTERACTIVE_TARGET_QPS": "--interactive_target_qps",
    "CM_MLPERF_SEARCH_BUDGET": "--search_budget",
    "CM_MLPERF_LOADGEN_SINGLESTREAM_TARGET_LATENCY": "--singlestream_target_latency",
    "CM_MLPERF_LOADGEN_OFFLINE_TARGET_QPS": "--offline_target_qps",
    "CM_MLPERF_LOADGEN_TEST_QUERY_COUNT": "--test_query_count",
    "CM_MLPERF_MAX_DURATION_TEST": "--max_test_duration",
    "CM_MLPERF_NUM_WORKERS": "--num_workers",
    "CM_MLPERF_ENDPOINT_WINDOW": "--endpoint_window",
}


def _closest(value: str, choices) -> str:
    close = difflib.get_close_matches(value, choices, n=1, cutoff=0.5)
    return f" (did you mean {close[0]}?)" if close else ""


def submitter_notice(env: dict) -> str:
    """A line for the start of a run whose submission will carry the placeholder submitter ('' otherwise)."""
    from .submission.errors import SubmissionError
    from .submission.inputs import placeholder_note, resolve_submitter
    if not is_yes(env.get("CM_MLPERF_GENERATE_SUBMISSION")) or env.get("CM_MLPERF_SUBMITTER"):
        return ""
    try:
        name = resolve_submitter("", env.get("CM_MLPERF_SUBMISSION_DIVISION", ""), env.get("CM_MLPERF_EXECUTION_MODE", ""))
    except SubmissionError:
        return ""
    return "note: " + placeholder_note(name)


def settle_for_benchmark(env: dict, inputs: dict) -> dict:
    """The top step's validate result for the round and the benchmark (rounds.settle_benchmark,
    steps_env) and what follows from the benchmark when the user did not say it: its category (an
    edge benchmark is an edge run) and the scenarios it runs by default (the first of each of the
    closed division's requirements: llama2-70b Offline and Server, llama3.1-8b-edge Offline and
    SingleStream). A category that is not the benchmark's is refused. A test run given no
    --test_query_count or --test_sizes is sized to the host (CM_MLPERF_SIZE_TO_HOST, harness/sizing.py)."""
    from .benchmarks import get_benchmark
    from .rounds import RoundError, settle_benchmark, steps_env
    try:
        rnd, bench, variations, notes = settle_benchmark(env)
    except RoundError as e:
        return {"return": 1, "error": str(e)}
    given = inputs.get("category")
    if given and given != bench.category:
        return {"return": 1, "error": f"--category={given}: {bench.name} is a {bench.category} benchmark; fix: "
                f"--category={bench.category}, or a {given} benchmark of round v{rnd.name}: "
                f"{', '.join(b for b in rnd.benchmarks if get_benchmark(b).category == given) or 'none'}"}
    settled = steps_env(bench)
    tests, why_not = compliance_tests(bench, env)
    unrun = [t for t in bench.compliance if t not in COMPLIANCE_RUN]
    if env.get("CM_MLPERF_SUBMISSION_DIVISION") == "closed" and unrun:
        return {"return": 1, "error": f"--division=closed: a closed {bench.name} result needs "
                f"{', '.join(bench.compliance)}, and this tool does not run {', '.join(unrun)} yet; "
                "fix: --division=open"}
    settled["CM_MLPERF_COMPLIANCE_TESTS"] = ",".join(tests)
    settled["CM_MLPERF_COMPLIANCE_NOT_RUN"] = why_not
    if why_not and bench.compliance and is_yes(env.get("CM_MLPERF_RUN_COMPLIANCE")):
        notes.append(why_not)
    if not given:
        settled["CM_MLPERF_SUBMISSION_CATEGORY"] = bench.category
    if env.get("CM_MLPERF_EXECUTION_MODE", "test") == "test" and not inputs.get("test_query_count") \
            and not inputs.get("test_sizes"):
        settled["CM_MLPERF_SIZE_TO_HOST"] = "yes"      # a test run sized to the host (harness/sizing.py)
    if not inputs.get("scenario") and not inputs.get("scenarios"):
        settled["CM_MLPERF_LOADGEN_SCENARIO"] = ",".join(alt[0] for alt in rnd.required(bench))
    for s in [x.strip() for x in str(inputs.get("scenario") or inputs.get("scenarios") or "").split(",")]:
        if s in SCENARIOS:                   # SingleStream of a datacenter benchmark: named before anything runs
            try:
                bench.check_scenario(s)
            except BenchmarkError as e:
                return {"return": 1, "error": f"--{e}"}
            if s == "Interactive" and rnd.interactive_of(bench) == "none":
                return {"return": 1, "error": f"--scenario=Interactive: round {rnd.name} has no Interactive scenario for "
                                              f"{bench.name} (its checker requires Offline and Server); fix: "
                                              "--scenario=Server, or a later round"}
    return {"return": 0, "variations": variations, "note": "; ".join(notes), "env": settled}


# the compliance tests the chain has a step for (run-mlperf-compliance-test06, -test07-test09)
COMPLIANCE_RUN = ("TEST06", "TEST07", "TEST09")


def compliance_tests(bench, env: dict) -> tuple[tuple[str, ...], str]:
    """The compliance tests a run with compliance (_full, _submission) runs, and why none when it runs
    none. The closed division needs the benchmark's (a valid closed run cannot drop them); an
    open-division run skips them unless --compliance=yes, as cm4mlops and MLC do: the official
    checker asks for them in the closed division only. A benchmark without any (llama3.1-8b-edge)
    runs none whatever was asked. Bad --compliance values are check_inputs' to refuse."""
    if not bench.compliance:
        return (), f"{bench.name} has no compliance tests"
    division = env.get("CM_MLPERF_SUBMISSION_DIVISION", "")
    try:
        asked = parse_yes_no("--compliance", env.get("CM_MLPERF_COMPLIANCE"), default=division == "closed")
    except YesNoError:
        asked = division == "closed"
    names = ", ".join(bench.compliance)
    missing = [t for t in bench.compliance if t not in COMPLIANCE_RUN]
    if asked and missing:
        return (), (f"compliance tests ({names}) not run: this tool does not run {', '.join(missing)} yet "
                    f"(it runs {', '.join(COMPLIANCE_RUN)})")
    if asked:
        return bench.compliance, ""
    if division == "open" and not env.get("CM_MLPERF_COMPLIANCE"):
        return (), (f"compliance tests ({names}) not run: an open-division run needs none (the checker asks "
                    "for them in the closed division only); --compliance=yes runs them")
    return (), f"compliance tests ({names}) not run: --compliance=no"


def gpu_preview(env: dict) -> str:
    """--dry-run on a node with GPUs: the vLLM layout the server step would choose there (servers, GPUs
    each, settings, each with its source: vllm/layout.py), from the GPUs nvidia-smi or amd-smi shows
    now; '' where this run starts no vLLM server or runs vLLM's CPU build (--device=cpu)."""
    from .sysinfo.envmap import gpu_env
    from .sysinfo.probe import SystemFacts, detect_accelerators, run_command
    from .vllm.layout import GpuNode
    from .vllm.service import gpu_layout
    device = env.get("CM_MLPERF_DEVICE", "")
    if env.get("CM_MLPERF_BACKEND") != "vllm" or env.get("CM_MLPERF_API_SERVER") or device == "cpu":
        return ""                       # no server here, or a CPU build of vLLM: no GPU layout
    facts = SystemFacts()
    detect_accelerators(run_command, facts)
    seen = {**env, **gpu_env(facts.accelerators), "CM_VLLM_DEVICE": device}
    if GpuNode.from_env(seen) is None:
        return (f"--device={device}: nvidia-smi, amd-smi and rocm-smi show no GPU on this machine; the vLLM "
                "layout (servers, GPUs each, settings) is chosen on the node that runs it")
    chosen = gpu_layout(seen)
    return chosen.describe() if chosen is not None else ""


def allowed_devices() -> tuple:
    return CHOICES["CM_MLPERF_DEVICE"][1]


def check_inputs(env: dict) -> list[str]:
    """Every problem with the run's inputs, each naming the input, the reason and the fix."""
    from .submission.errors import SubmissionError
    from .submission.inputs import resolve_submitter
    from .vllm.install import DEVICES as VLLM_BUILDS
    problems = []
    model = env.get("CM_MLPERF_MODEL", "")
    if model and model not in BENCHMARKS:          # none given: validate settles it and says so
        problems.append(f"--model={model} is not a benchmark this tool knows; benchmarks: {', '.join(BENCHMARKS)}"
                        + _closest(model, BENCHMARKS))
    for key, (flag, allowed) in [*CHOICES.items(), *OPTIONAL_CHOICES.items()]:
        value = env.get(key, "")
        if key in OPTIONAL_CHOICES and not value:
            continue
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
    try:
        drop = not parse_yes_no("--compliance", env.get("CM_MLPERF_COMPLIANCE"), default=True)
    except YesNoError as e:
        problems.append(str(e))
        drop = False
    if drop and env.get("CM_MLPERF_SUBMISSION_DIVISION") == "closed" and env.get("CM_MLPERF_EXECUTION_MODE") == "valid":
        problems.append("--compliance=no: a valid closed-division submission needs its compliance tests "
                        "(the checker refuses it without them); drop --compliance=no, or use "
                        "--execution_mode=test or --division=open")
    from .accuracy.test06_config import AuditConfigError, short_query_count
    try:
        short_query_count(env.get("CM_MLPERF_TEST06_QUERY_COUNT", ""), env.get("CM_MLPERF_EXECUTION_MODE", ""))
    except AuditConfigError as e:
        problems.append(str(e))
    from .harness.testsizes import INPUT as SIZES_INPUT, TestSizesError, parse as parse_sizes
    try:
        if parse_sizes(env.get("CM_MLPERF_TEST_SIZES", "")) and env.get("CM_MLPERF_EXECUTION_MODE") == "valid":
            problems.append(f"{SIZES_INPUT}: a valid run's sizes are the round's; drop {SIZES_INPUT}, or use "
                            "--execution_mode=test")
    except TestSizesError as e:
        problems.append(str(e))
    for url in [u.strip() for u in env.get("CM_MLPERF_API_SERVER", "").split(",") if u.strip()]:
        if not url.startswith(("http://", "https://")):
            problems.append(f"--api_server={url} must be a URL such as http://localhost:8000")
    if is_yes(env.get("CM_MLPERF_EMBEDDED")) and env.get("CM_MLPERF_SUBMISSION_DIVISION") == "closed":
        problems.append("--division=closed cannot be used with _embedded: the embedded model is "
                        "SmolLM2-135M, not the benchmark's model, so the run is an open-division run; "
                        "use --division=open")
    device = env.get("CM_MLPERF_DEVICE", "")
    if (env.get("CM_MLPERF_BACKEND") == "vllm" and device in allowed_devices() and device not in VLLM_BUILDS
            and not env.get("CM_VLLM_PYTHON") and not env.get("CM_MLPERF_API_SERVER")):
        problems.append(f"--device={device}: PyPI has no vLLM build for it (only {', '.join(VLLM_BUILDS)}), "
                        "so this run cannot install one; pass --vllm_python=PATH, the python of a vLLM built for it "
                        "(e.g. the one in the vllm/vllm-openai-rocm image), or --api_server=URL of a vLLM "
                        "server that runs")
    if is_yes(env.get("CM_MLPERF_GENERATE_SUBMISSION")):
        try:
            resolve_submitter(env.get("CM_MLPERF_SUBMITTER", ""), env.get("CM_MLPERF_SUBMISSION_DIVISION", ""),
                              env.get("CM_MLPERF_EXECUTION_MODE", ""))
        except SubmissionError as e:
            problems.append(str(e))
    problems += _docker_problems(env)
    results, submission = env.get("CM_MLPERF_RESULTS_DIR"), env.get("CM_MLPERF_SUBMISSION_DIR")
    if results and submission and results.rstrip("/") == submission.rstrip("/"):
        problems.append("--results_dir and --submission_dir must be different folders")
    found = [output_folder_problem("--results_dir", results or "")]
    if is_yes(env.get("CM_MLPERF_GENERATE_SUBMISSION")):
        found.append(output_folder_problem("--submission_dir", submission or "", beside=True))
    if env.get("CM_MLPERF_INFERENCE_SRC_PATH"):
        from .sysinfo.inference_src import checkout_problem
        found.append(checkout_problem(env["CM_MLPERF_INFERENCE_SRC_PATH"], "--inference_src"))
    return problems + [p for p in found if p]


def output_folder_problem(flag: str, path: str, beside: bool = False) -> str:
    """Why the run could not write the folder `path` (`flag`'s): a file there, or the nearest folder
    that exists not writable (a read-only file system, permissions); "" where it can. beside: the
    folder is made beside itself and renamed into place, so its parent is written too."""
    if not path:
        return ""
    path = os.path.abspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        return f"{flag}={path} is a file, not a folder; give a folder (made where it does not exist)"
    probe = os.path.dirname(path) if beside or not os.path.isdir(path) else path
    while not os.path.isdir(probe) and os.path.dirname(probe) != probe:
        if os.path.exists(probe):
            return f"{flag}={path}: {probe} is a file, not a folder; give a folder (made where it does not exist)"
        probe = os.path.dirname(probe)
    if not os.access(probe, os.W_OK | os.X_OK):
        return (f"{flag}={path}: {probe} cannot be written here (a read-only file system, or its permissions); "
                "give a folder you can write to")
    return ""


def _docker_problems(env: dict) -> list[str]:
    """--docker: yes or no (vLLM served from the run's image), or chain (the whole chain in it); chain
    runs with no network, so not with servers or a Ray cluster outside the container."""
    from .containers.chain import CHAIN, DOCKER_ENV, docker_mode, in_image
    try:
        if docker_mode(env.get(DOCKER_ENV)) != CHAIN:
            return []
    except ValueError as e:
        return [str(e)]
    if in_image(env):
        return ["--docker=chain inside the run's image: the chain there runs as it is, not in another image"]
    clash = [flag for key, flag in (("CM_MLPERF_API_SERVER", "--api_server"), ("CM_VLLM_RAY_ADDRESS", "--ray_address"),
                                    ("CM_RAY_START", "--ray_start")) if env.get(key)]
    if clash or env.get("CM_MLPERF_BACKEND") != "vllm":
        what = ", ".join(clash) or f"--framework={env.get('CM_MLPERF_BACKEND')}"
        return [f"--docker=chain runs vLLM and the benchmark in one container with no network; {what} needs more "
                "than that: leave it out, or use --docker=yes (only vLLM in the image) or no --docker"]
    return []


_METRIC_NAMES = {"ROUGE1": "ROUGE-1", "ROUGE2": "ROUGE-2", "ROUGEL": "ROUGE-L", "ROUGELSUM": "ROUGE-Lsum",
                 "TOKENS_PER_SAMPLE": "tokens/sample", "GEN_LEN": "gen_len (characters)"}
RULE = "=" * 72


def _g(x, digits: int = 4) -> str:
    if x is None:
        return "?"
    return f"{x:,.0f}" if abs(x) >= 10 ** digits else f"{x:.{digits}g}"


def _records(state: dict, key: str):
    """(records, problem): a malformed value is reported on the screen, never a traceback."""
    try:
        return outcomes.from_state(state, key), ""
    except outcomes.OutcomeError as e:
        return ([] if key in (outcomes.HARNESS, outcomes.ACCURACY, outcomes.TEST06, outcomes.COMPLIANCE)
                else None), str(e)


def _test_lines(t: outcomes.TestOutcome) -> list[str]:
    shown = "completed" if t.mode == "accuracy" and t.verdict == "VALID" else t.verdict   # LoadGen rates no accuracy run
    head = f"  {t.scenario:<11} {t.mode:<11} {shown:<7}"
    facts = []
    if t.metric is not None:
        facts.append(f"{_g(t.metric)} {t.unit}")
    source = f" ({t.target_source})" if t.target_source else ""
    if t.target_qps is not None and t.mode == "performance":
        facts.append(f"target {_g(t.target_qps)} QPS{source}")
    if t.target_latency_ms is not None and t.mode == "performance":
        facts.append(f"target latency {_g(t.target_latency_ms)} ms{source}")
    lines = [(head + "  " + ", ".join(facts)).rstrip()]
    latency = []
    for what, value, limit in (("TTFT", t.ttft_p99_ms, t.ttft_limit_ms), ("TPOT", t.tpot_p99_ms, t.tpot_limit_ms)):
        if value is not None and limit is not None:
            latency.append(f"p99 {what} {_g(value)} ms (bound {_g(limit)} ms)")
    if latency and t.mode == "performance":
        lines.append("      " + ", ".join(latency))
    if t.verdict != "VALID":
        why = "; ".join(t.reasons) or "the logs give no reason"
        lines.append(f"      {t.verdict}: {why}")
        lines.append(f"      logs: {t.directory}")
    if t.host_limit:
        lines.append(f"      host limit: {t.host_limit}")
    return lines


def _metric_text(m: outcomes.MetricCheck) -> str:
    name = _METRIC_NAMES.get(m.metric, m.metric)
    if m.maximum is not None:
        return f"{name} {_g(m.value)} {'in' if m.passed else 'not in'} [{_g(m.minimum)}, {_g(m.maximum)}]"
    return f"{name} {_g(m.value)} {'>=' if m.passed else '<'} {_g(m.minimum)}"


def _accuracy_lines(verdicts: list) -> list[str]:
    lines = []
    for v in verdicts:
        own = v.targets[0] if v.targets else None
        if own is None:
            lines.append(f"  {v.scenario:<11} no targets to judge by ({v.directory})")
            continue
        lines.append(f"  {v.scenario:<11} {'PASS' if own.passed else 'FAIL'} against {own.model}'s targets "
                     f"({own.label}), {v.samples} samples")
        lines.append("      " + ", ".join(_metric_text(m) for m in own.metrics))
        if own.note:
            lines.append(f"      ({own.note})")
        for other in v.targets[1:]:
            failed = [_metric_text(m) for m in other.metrics if not m.passed]
            lines.append(f"      against {other.model}'s targets: {'PASS' if other.passed else 'FAIL'}"
                         + (f" ({', '.join(failed)})" if failed else ""))
    return lines


def _test06_lines(verdicts: list) -> list[str]:
    lines = []
    for v in verdicts:
        if v.status == "NOT VERIFIED":
            lines.append(f"  {v.scenario:<11} NOT VERIFIED: {v.reason}")
            continue
        checks = [("first token", v.first_token), ("EOS", v.eos), ("sample length", v.sample_length)]
        done = ", ".join(f"{name} {'ok' if ok else 'FAILED'}" for name, ok in checks if ok is not None)
        skipped = [name for name, ok in checks if ok is None]
        lines.append(f"  {v.scenario:<11} {v.status} ({done}" + (f"; {', '.join(skipped)} not checked for {v.scenario}"
                                                               if skipped else "") + f"; {v.samples} samples)")
        lines += [f"      {p}" for p in v.problems]
    return lines


def _compliance_lines(verdicts: list) -> list[str]:
    lines = []
    for v in verdicts:
        lines.append(f"  {v.scenario:<11} {v.test} {v.status} ({v.directory})")
        lines += [f"      {d}" for d in v.detail]
    return lines


def _checker_lines(c) -> list[str]:
    head = f"Submission checker (official, {c.round})"
    if c.verdict == "NOT RUN":
        return [f"{head}: NOT RUN: {c.reason}"]
    if c.verdict == "PASS":
        lines = [f"{head}: PASS"]
    elif c.verdict == "PASS-TEST-MODE":
        lines = [f"{head}: PASS except the checks only a full-length run can pass ({c.mode} mode): "
                 + ", ".join(c.full_length_checks)]
    elif c.verdict == "FAIL-HOST-LIMIT":
        lines = [f"{head}: FAIL on this host's speed alone, nothing else failed"
                 + (f" but the checks only a full-length run can pass ({c.mode} mode): "
                    + ", ".join(c.full_length_checks) if c.full_length_checks else "")]
        lines += [f"  - {h}" for h in c.host_limits]
    else:
        lines = [f"{head}: FAIL, {c.error_count} error(s)"]
        lines += [f"  - {e}" for e in c.first_errors]
        if c.error_count > len(c.first_errors):
            lines.append(f"  ... and {c.error_count - len(c.first_errors)} more")
    if c.log:
        lines.append(f"  full output: {c.log}")
    return lines


def summary(env: dict, state: dict) -> str:
    """The closing screen, from the typed results the steps left in `state` (mlperf_llm.outcomes):
    each test's verdict and why when it is not VALID, ROUGE and the output length against the
    targets, TEST06, the checker's verdict, and where the results and the submission are."""
    division, mode = env.get("CM_MLPERF_SUBMISSION_DIVISION", ""), env.get("CM_MLPERF_EXECUTION_MODE", "")
    lines = ["", RULE, f"MLPerf Inference v{env.get('CM_MLPERF_INFERENCE_VERSION', '?')} "
             f"{env.get('CM_MLPERF_MODEL', '')} ({division} division, {mode} run)"]
    if is_yes(env.get("CM_MLPERF_EMBEDDED")):
        bench = BENCHMARKS.get(env.get("CM_MLPERF_MODEL", ""))
        lines.append(f"weights: the embedded SmolLM2-135M-Instruct standing in for "
                     f"{bench.hf_model.split('/')[-1] if bench else 'the benchmark model'} (open division)")

    tests, problem = _records(state, outcomes.HARNESS)
    lines += ["", "LoadGen tests:"] + [x for t in tests for x in _test_lines(t)]
    if problem or not tests:
        lines.append(f"  no test results ({problem or 'the benchmark step reported none'})")

    for key, flag, title, render, step in (
            (outcomes.ACCURACY, "CM_MLPERF_RUN_ACCURACY", "Accuracy:",
             _accuracy_lines, "process-mlperf-accuracy"),
            (outcomes.TEST06, "CM_MLPERF_RUN_COMPLIANCE", "Compliance:", _test06_lines,
             "run-mlperf-compliance-test06"),
            (outcomes.COMPLIANCE, "", "Compliance (TEST07, TEST09):", _compliance_lines,
             "run-mlperf-compliance-test07-test09")):
        found, problem = _records(state, key)
        if key == outcomes.TEST06 and not found and not problem and env.get("CM_MLPERF_COMPLIANCE_NOT_RUN"):
            if is_yes(env.get(flag)):
                lines += ["", title, "  " + env["CM_MLPERF_COMPLIANCE_NOT_RUN"]]
            continue
        if key == outcomes.TEST06 and "TEST06" not in env.get("CM_MLPERF_COMPLIANCE_TESTS", "TEST06"):
            continue            # the benchmark's compliance tests are others (gpt-oss-120b: the next entry)
        if found or problem or (flag and is_yes(env.get(flag))):
            lines += ["", title] + render(found)
            if problem or not found:
                lines.append(f"  no verdict ({problem or step + ' reported none'})")

    submission, problem = _records(state, outcomes.SUBMISSION)
    checker, checker_problem = _records(state, outcomes.CHECKER)
    wanted = is_yes(env.get("CM_MLPERF_GENERATE_SUBMISSION"))
    if checker is not None:
        lines += [""] + _checker_lines(checker)
    elif wanted or checker_problem:
        lines += ["", "Submission checker: no verdict (" + (checker_problem or "the step failed before it "
                  "ran the checker; its error is printed above") + ")"]
    if submission is not None:
        lines += ["", f"Submission: {submission.directory} (submitter {submission.submitter}, "
                  f"round {submission.round})"]
        if submission.tarball:
            lines.append(f"  tarball: {submission.tarball} (sha1 {submission.tarball_sha1})")
        lines.append(f"  summary page: {submission.summary_html}")
        lines += [f"  warning: {w}" for w in submission.warnings]
    elif wanted or problem:
        lines += ["", "Submission: no record (" + (problem or "generate-mlperf-inference-submission left none "
                  "in state") + ")"]
    lines += ["", f"Results: {env.get('CM_MLPERF_RESULTS_DIR', '')}", RULE]
    return "\n".join(lines)
