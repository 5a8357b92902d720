"""A published submitter folder (`<division>/<submitter>/` of an MLCommons results repository, or a
folder above or below it) read into one `PublishedTest` per test: who, which system, benchmark and
scenario, what LoadGen ran (its version, seeds, target, validity) and reported, the accuracy, the
targets of user.conf, the weights the measurement JSON declares, the software, and the commands the
documents record. Two layouts: v4.x to v5.x (`results/`, `measurements/`, `compliance/` side by side)
and v6.x (everything of a test under `results/<system>/<benchmark>/<scenario>/`).

What LoadGen wrote wins: a label, a README or a command that says otherwise is a `Finding`, and so is
any file that is missing, empty, unreadable or cut short. Reading never raises on a folder's content."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..benchmarks import BENCHMARKS, DIVISIONS, scenario_of_folder
from ..harness.results import parse_summary
from ..rounds import ROUNDS
from ..submission.errors import SubmissionError
from ..submission.logs import read_accuracy_txt, read_detail_log
from ..untrusted import MAX_READ_BYTES, UntrustedError, inside, read_capped
from .commands import Command, find_commands

SYSTEM_FIELDS = ("system_name", "system_type", "division", "submitter", "number_of_nodes", "accelerators_per_node",
                 "accelerator_model_name", "accelerator_memory_capacity", "host_processor_model_name",
                 "host_processors_per_node", "framework", "other_software_stack", "operating_system")
SEEDS = ("qsl_rng_seed", "sample_index_rng_seed", "schedule_rng_seed")


@dataclass(frozen=True)
class Finding:
    where: str           # a path relative to the folder read
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


@dataclass
class PublishedTest:
    submitter: str
    division: str
    system: str                                  # the system folder's name (= its systems JSON's name)
    benchmark: str                               # the checker's name (model_mapping.json applied)
    scenario: str
    folder: str                                  # the results folder of the test, relative
    system_desc: dict = field(default_factory=dict)        # SYSTEM_FIELDS of the systems JSON
    loadgen_version: str = ""
    seeds: dict = field(default_factory=dict)
    test_mode: str = ""                          # LoadGen's effective_test_mode of the performance run
    target_qps: float | None = None              # effective_target_qps: what LoadGen ran at
    validity: str = ""                           # VALID | INVALID
    performance: dict = field(default_factory=dict)        # samples_per_second, tokens_per_second, p99s (ns)
    accuracy: dict = field(default_factory=dict)           # metric -> value, from accuracy.txt
    user_conf: dict = field(default_factory=dict)          # 'model.Scenario.key' -> value
    weights: dict = field(default_factory=dict)            # the measurement JSON
    software: dict = field(default_factory=dict)           # distribution -> version (pip_freeze.json)
    commands: list[Command] = field(default_factory=list)  # from the measurement README
    server_commands: list[Command] = field(default_factory=list)   # `vllm serve` lines of the top README
    engine_files: list[str] = field(default_factory=list)  # engine settings in the code folder
    round: str = ""                              # "4.1", ...: the round the result was published in
    round_source: str = ""                       # where that was read
    generator: str = ""                          # the tool the measurement README says made it ('' unsaid)
    cache_keys: dict = field(default_factory=dict)         # step -> cache key, where the README lists them
    sizes: dict = field(default_factory=dict)              # kind -> the size its logs say it ran at (_sizes)

    @property
    def made_with(self) -> Command | None:
        """The CM or MLC command the measurement README records (the first), None when none."""
        return next((c for c in self.commands if c.kind in ("cm", "mlc")), None)

    @property
    def made_by(self) -> str:
        """cm | mlc | '' (neither recorded a command)."""
        return self.made_with.kind if self.made_with else ""


@dataclass
class PublishedResult:
    root: str
    tests: list[PublishedTest] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


class _Reader:
    def __init__(self, root: Path):
        self.root = root
        self.findings: list[Finding] = []

    def rel(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root)) or "."
        except ValueError:
            return str(path)

    def find(self, path: Path, what: str) -> None:
        self.findings.append(Finding(self.rel(path), what))

    def readable(self, path: Path) -> bool:
        """Inside the folder (links resolved) and not larger than one file is read (MAX_READ_BYTES);
        else a finding says why it was not read."""
        if not inside(str(path), os.path.realpath(self.root)):
            self.find(path, f"leads out of {self.root} (a link): not read")
            return False
        size = path.stat().st_size
        if size > MAX_READ_BYTES:
            self.find(path, f"{size:,} bytes, more than the {MAX_READ_BYTES:,} read of one file: not read")
            return False
        return True

    def text(self, path: Path, what: str = "") -> str | None:
        """A text file's content with CRLF made LF; None (and a finding when `what` says it was
        expected) when it is missing, empty or unreadable."""
        try:
            data = read_capped(path, self.root)
        except UntrustedError as e:
            self.find(path, f"{what or 'the file'} not read: {e}")
            return None
        except OSError as e:
            if what:
                self.find(path, f"{what} cannot be read ({e.strerror or e})")
            return None
        if not data.strip():
            self.find(path, f"{what or 'the file'} is empty")
            return None
        return data.decode("utf-8", errors="replace").replace("\r\n", "\n")

    def json(self, path: Path, what: str):
        text = self.text(path, what)
        if text is None:
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            self.find(path, f"{what} is not valid JSON ({e.msg} at line {e.lineno}): cut short or edited")
            return None


def submitter_folders(root: Path) -> list[tuple[str, str, Path]]:
    """(division, submitter, folder) of every submitter folder at or below root, or root itself when
    it is inside one (a folder of `<division>/<submitter>/...`)."""
    root = root.resolve()
    for up in [root, *root.parents]:
        if up.parent.name in DIVISIONS and (up / "results").is_dir():
            return [(up.parent.name, up.name, up)]
    found = []
    for division in DIVISIONS:
        for base in ([root] if root.name == division else [root / division]):
            if base.is_dir():
                found += [(division, s.name, s) for s in sorted(base.iterdir()) if (s / "results").is_dir()]
    return found


def _benchmark_names(reader: _Reader, folder: Path) -> dict[str, str]:
    mapping = reader.json(folder / "model_mapping.json", "model_mapping.json") \
        if (folder / "model_mapping.json").exists() else None
    return mapping if isinstance(mapping, dict) else {}


def _user_conf(text: str | None) -> dict:
    out = {}
    for line in (text or "").splitlines():
        line = line.split("#", 1)[0].strip()
        if "=" in line:
            key, value = (x.strip() for x in line.split("=", 1))
            out[key] = value
    return out


def _pip_freeze(data) -> dict:
    """pip_freeze.json as CM writes it ({"pip_freeze": {name: version}}), a flat dict or `pip freeze` lines."""
    if isinstance(data, dict) and isinstance(data.get("pip_freeze"), dict):
        data = data["pip_freeze"]
    if isinstance(data, dict):
        return {str(k).lower(): str(v) for k, v in data.items()}
    if isinstance(data, list):
        return {str(x).split("==")[0].lower(): str(x).split("==", 1)[1] for x in data if "==" in str(x)}
    return {}


def _read_test(reader: _Reader, division: str, submitter: str, system: str, bench_dir: Path, scenario_dir: Path,
               names: dict, system_desc: dict) -> PublishedTest:
    benchmark = names.get(bench_dir.name, bench_dir.name)
    if benchmark not in BENCHMARKS:
        reader.find(bench_dir, f"benchmark folder {bench_dir.name!r} is not a benchmark this tool knows "
                               f"({', '.join(BENCHMARKS)}); add it to model_mapping.json or read it as another")
    scenario = scenario_of_folder(scenario_dir.name)
    test = PublishedTest(submitter, division, system, benchmark, scenario, reader.rel(scenario_dir),
                         system_desc=system_desc)
    perf_dir = scenario_dir / "performance" / "run_1"
    detail = perf_dir / "mlperf_log_detail.txt"
    if detail.is_file() and reader.readable(detail):
        try:
            log = read_detail_log(str(detail))
            test.loadgen_version = str(log.get("loadgen_version", ""))
            test.seeds = {k: log.get(f"effective_{k}") for k in SEEDS if log.get(f"effective_{k}") is not None}
            test.test_mode = str(log.get("effective_test_mode", ""))
            test.target_qps = log.get("effective_target_qps")
            test.validity = str(log.get("result_validity", ""))
            if isinstance(log.get("requested_min_query_count"), int):
                test.sizes["performance"] = log.get("requested_min_query_count")
            logged = str(log.get("effective_scenario", scenario))
            # LoadGen runs Interactive as a Server test with tighter bounds, and logs it as Server
            if logged != scenario and not (scenario == "Interactive" and logged == "Server"):
                reader.find(detail, f"LoadGen ran scenario {log.get('effective_scenario')} in the {scenario} "
                                    "folder: the log wins")
                test.scenario = str(log.get("effective_scenario"))
        except SubmissionError as e:
            reader.find(detail, str(e))
    else:
        reader.find(perf_dir, "no performance run (mlperf_log_detail.txt)")
    summary_text = reader.text(perf_dir / "mlperf_log_summary.txt", "the performance summary")
    if summary_text:
        s = parse_summary(summary_text)
        test.performance = {k: v for k, v in (("samples_per_second", s.samples_per_second),
                                              ("tokens_per_second", s.tokens_per_second),
                                              ("ttft_p99_ns", s.ttft_p99_ns), ("tpot_p99_ns", s.tpot_p99_ns),
                                              ("latency_p90_ns", s.latency_p90_ns)) if v is not None}
        if test.validity and s.result and s.result != test.validity:
            reader.find(perf_dir / "mlperf_log_summary.txt", f"the summary says {s.result}, the detail log "
                                                             f"{test.validity}: the detail log wins")
    acc_dir = scenario_dir / "accuracy"
    acc_detail = acc_dir / "mlperf_log_detail.txt"
    if acc_detail.is_file() and reader.readable(acc_detail):
        try:
            acc_log = read_detail_log(str(acc_detail))
            mode = acc_log.get("effective_test_mode", "")
            if isinstance(acc_log.get("effective_performance_sample_count"), int):
                test.sizes["accuracy"] = acc_log.get("effective_performance_sample_count")     # the samples scored
            if mode and mode != "AccuracyOnly":
                reader.find(acc_dir, f"the accuracy folder holds a {mode} run's logs, not an accuracy run's")
        except SubmissionError:
            reader.find(acc_detail, "holds no LoadGen log lines")
    if (acc_dir / "accuracy.txt").is_file():
        try:
            test.accuracy = read_accuracy_txt(str(acc_dir / "accuracy.txt")).values
        except (SubmissionError, OSError, UnicodeDecodeError) as e:
            reader.find(acc_dir / "accuracy.txt", f"no accuracy values ({e})")
    else:
        reader.find(acc_dir, "no accuracy.txt")
    test06 = _logged_answers(scenario_dir / "TEST06" / "accuracy" / "mlperf_log_accuracy.json")
    if test06:
        test.sizes["TEST06"] = test06
    log_json = acc_dir / "mlperf_log_accuracy.json"
    if log_json.is_file():
        size = log_json.stat().st_size
        try:        # the repositories keep a few KB of it (head and tail); a whole log is larger than we read
            whole = size <= 16 * 1024 * 1024 and isinstance(json.loads(log_json.read_bytes()), list)
        except (ValueError, OSError):
            whole = False
        if not whole and size <= 16 * 1024 * 1024:
            reader.find(log_json, f"cut short ({size:,} bytes, not valid JSON): the repository keeps a "
                                  "truncated copy; accuracy.txt holds the published values")
    return test


SMALL_LOG = 4 * 1024 * 1024      # a test run's TEST06 log; a submission's is read for its count no further


def _logged_answers(path: Path) -> int:
    """The answers a TEST06 accuracy log holds (its query count: a test run's TEST06 logs every
    answer), 0 where it is missing, large or cut short."""
    try:
        if not path.is_file() or path.stat().st_size > SMALL_LOG:
            return 0
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return 0
    return len(data) if isinstance(data, list) else 0


def _measurement_dir(folder: Path, layout: str, system: str, bench: str, scenario_dir: Path) -> Path:
    if layout == "v6":
        return scenario_dir
    base = folder / "measurements" / system / bench
    for candidate in (base / scenario_dir.name, base / scenario_dir.name.lower(), base / scenario_dir.name.capitalize()):
        if candidate.is_dir():
            return candidate
    return base / scenario_dir.name


def _add_documents(reader: _Reader, test: PublishedTest, meas: Path, system: str, top_readme_cmds: list[Command],
                   code: Path) -> None:
    test.user_conf = _user_conf(reader.text(meas / "user.conf", "user.conf"))
    weights = meas / f"{system}.json" if (meas / f"{system}.json").exists() else meas / "measurements.json"
    test.weights = reader.json(weights, "the measurement JSON") or {}
    if (meas / "pip_freeze.json").exists():
        test.software = _pip_freeze(reader.json(meas / "pip_freeze.json", "pip_freeze.json"))
    readme = reader.text(meas / "README.md", "the measurement README")
    test.commands = find_commands(readme or "")
    test.server_commands = list(top_readme_cmds)
    made_by = GENERATOR.search(readme or "")
    test.generator = made_by.group(1) if made_by else ""
    test.cache_keys = dict(CACHE_KEY.findall(readme or ""))
    for c in test.commands:
        opts = c.options()
        said = opts.get("scenario")
        if c.kind in ("cm", "mlc") and said and said.lower() != test.scenario.lower() and "," not in said:
            reader.find(meas / "README.md", f"its {c.kind} command says --scenario={said}, the folder holds "
                                            f"{test.scenario}: the folder (its logs) wins")
        if c.kind in ("cm", "mlc") and opts.get("model") and opts["model"] != test.benchmark:
            reader.find(meas / "README.md", f"its {c.kind} command says --model={opts['model']}, the folder "
                                            f"holds {test.benchmark}")
    key = test.scenario.lower()
    if code.is_dir():
        test.engine_files = sorted(reader.rel(p) for p in code.rglob("*") if p.is_file() and (
            p.name == "vllm_args.json" or (p.suffix in (".yaml", ".yml") and p.name.lower().startswith(key))))


# what this tool's measurement README says (submission/templates/measurement_readme.md.j2)
GENERATOR = re.compile(r"This experiment is generated using ([\w.-]+)")
CACHE_KEY = re.compile(r"^\* ([a-z0-9][\w.-]*): `([0-9a-f]{64})`\s*$", re.M)
PAGE_ROUND = re.compile(r"MLPerf Inference v(\d+\.\d+)|inference_results_v(\d+\.\d+)")
TAG_ROUND = re.compile(r"^_r(\d+\.\d+)$")


def _settle_round(reader: _Reader, test: PublishedTest, page_round: str, page: Path) -> None:
    """The round of a test: its system's results page (the publication's own words), else the
    round tag of the command that made it, else the round whose LoadGen wheels have the version
    LoadGen logged. Sources that disagree are a finding; the page, then the command, wins."""
    tagged = next((m.group(1) for c in test.commands if c.kind in ("cm", "mlc") for t in c.tags()
                   for m in [TAG_ROUND.match(t)] if m), "")
    version = test.loadgen_version.split("@")[0].strip()
    by_loadgen = next((r.name for r in ROUNDS.values() if r.loadgen_in_range(version)), "")
    for value, source in ((page_round, f"{reader.rel(page)} (the results page)"),
                          (tagged, "the _r tag of its recorded command"),
                          (by_loadgen, f"LoadGen {version} (the round whose wheels have that version)")):
        if value and not test.round:
            test.round, test.round_source = value, source
        elif value and value != test.round:
            reader.find(Path(reader.root, test.folder), f"round v{test.round} from {test.round_source}, but "
                                                        f"v{value} from {source}")
    if not test.round:
        reader.find(Path(reader.root, test.folder), "no round: no results page, no round tag in a command, and "
                                                    f"LoadGen {version or '(no version)'} is no round's")


def read_published(path: str | os.PathLike) -> PublishedResult:
    """Every test of every submitter folder at or below `path` (or of the one `path` is inside)."""
    root = Path(path)
    result = PublishedResult(str(root))
    reader = _Reader(root.resolve())
    folders = submitter_folders(root)
    if not folders:
        result.findings.append(Finding(str(root), "no submitter folder (<division>/<submitter>/results/) here: "
                                                  "point --from at a folder of an MLCommons results repository"))
        return result
    for division, submitter, folder in folders:
        names = _benchmark_names(reader, folder)
        top = reader.text(folder / "README.md") if (folder / "README.md").exists() else None
        top_cmds = [c for c in find_commands(top or "") if c.kind == "vllm"]
        layout = "v4" if (folder / "measurements").is_dir() else "v6"
        for system_dir in sorted(p for p in (folder / "results").iterdir() if p.is_dir()):
            system = system_dir.name
            page = system_dir / "README.md"
            page_text = reader.text(page) if page.is_file() else None
            found = PAGE_ROUND.search(page_text or "")
            page_round = (found.group(1) or found.group(2)) if found else ""
            sys_json = reader.json(folder / "systems" / f"{system}.json", "the systems JSON") or {}
            desc = {k: sys_json[k] for k in SYSTEM_FIELDS if k in sys_json}
            if desc.get("division") and desc["division"] != division:
                reader.find(folder / "systems" / f"{system}.json", f"says division {desc['division']}, the "
                                                                   f"folder is in {division}: the folder wins")
            for bench_dir in sorted(p for p in system_dir.iterdir() if p.is_dir()):
                for scenario_dir in sorted(p for p in bench_dir.iterdir() if p.is_dir()):
                    test = _read_test(reader, division, submitter, system, bench_dir, scenario_dir, names, desc)
                    meas = _measurement_dir(folder, layout, system, bench_dir.name, scenario_dir)
                    _add_documents(reader, test, meas, system, top_cmds, folder / "code" / bench_dir.name)
                    _settle_round(reader, test, page_round, page)
                    result.tests.append(test)
    result.findings += reader.findings
    return result
