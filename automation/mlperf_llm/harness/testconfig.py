"""The settings of a LoadGen test, declared once, as the document that crosses the process boundary.

`TestSettings` holds what every test of a request shares (the driver's `HarnessRequest` is one);
`TestConfig` is one test: those settings and the test's own (scenario, mode, folders). The driver
writes a TestConfig as JSON into the test's folder (`harness_config.json`) and starts
`python -m mlperf_llm.harness.run --config=<that file>`; the child reads it back with `from_json`,
which refuses an unknown key, a missing one and a value of the wrong type, each by name. Defaults
live here only; a new field travels without any other edit (run.py's flags are made from these
fields too).
"""

from __future__ import annotations

import json
import types
from pathlib import Path
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass
from typing import Union, get_args, get_origin, get_type_hints

from ..benchmarks import SCENARIOS, get_benchmark
from .balance import POLICIES

CONFIG_FILE = "harness_config.json"
# the compliance tests: each a LoadGen test with its audit.config (TEST06: accuracy mode; TEST07 and
# TEST09, gpt-oss-120b's: performance mode, TEST07 on the benchmark's compliance set)
COMPLIANCE_MODES = ("TEST06", "TEST07", "TEST09")
MODES = ("performance", "accuracy") + COMPLIANCE_MODES
PERFORMANCE_MODES = ("performance", "TEST07", "TEST09")    # LoadGen's PerformanceOnly; the others AccuracyOnly
BACKENDS = ("vllm", "transformers")
EXECUTION_MODES = ("test", "valid")
TOKEN_IDS_VIA = ("return_token_ids", "logprobs")
DTYPES = ("float32", "bfloat16", "float16")
DEVICES = ("cpu", "cuda")           # where the transformers backend computes (vLLM: the server's own)


class ConfigError(ValueError):
    """A test's settings that cannot be read: names the source, the key, the reason and the fix."""


def _choices(default: str, choices: tuple[str, ...], help: str = ""):
    return field(default=default, metadata={"choices": choices, "help": help})


def _help(default, help: str):
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class ManagedServer:
    """A server this run started (vllm.server.ServerRecord): a test that loses it names its end."""
    url: str
    pid: int
    start_ticks: int | None       # the process's start time: a reused PID is not this server
    log_path: str
    where: str = ''               # a replica on a Ray node: that node (pid: its launcher here)


@dataclass(frozen=True, kw_only=True)
class TestSettings:
    """What every test of a request shares."""
    __test__ = False              # not a pytest class, whatever its name

    dataset_path: str = field(metadata={"help": "the processed data set (.pkl)"})
    model: str = field(metadata={"help": "the benchmark (mlperf_llm.benchmarks): llama2-70b-99.9, llama3.1-8b, ..."})
    round: str = _help("", "6.1, 6.0, ... ('': the newest round that has the model)")
    execution_mode: str = _choices("test", EXECUTION_MODES)
    backend: str = _choices("vllm", BACKENDS)
    api_servers: tuple[str, ...] = _help((), "URL[,URL2,...]")
    api_model_name: str = ""
    model_path: str = _help("", "model (transformers) or tokenizer folder")
    managed_servers: tuple[ManagedServer, ...] = ()   # the api_servers this run started
    num_workers: int = 1
    max_inflight: int = 1024
    balance: str = _choices("least", POLICIES, "how requests are spread over several endpoints (balance.py)")
    endpoint_window: int | None = _help(None, "at most this many requests in flight per endpoint (none: no limit)")
    total_sample_count: int | None = None
    max_tokens: int | None = _help(None, "new tokens at most (none: the benchmark's)")
    token_ids_via: str = _choices("return_token_ids", TOKEN_IDS_VIA)
    batch_size: int = 1
    dtype: str = _choices("float32", DTYPES)
    device: str = _choices("cpu", DEVICES, "the transformers backend's torch device")
    audit_conf: str = _help("", "audit.config to copy into the output dir (compliance tests)")
    skip_tokenizer_check: bool = False
    progress: bool = True
    performance_dataset_path: str = _help("", "the performance set, where the benchmark has one of its own "
                                              "(gpt-oss-120b); '': dataset_path")
    sampling_seed: int = _help(0, "a sampling benchmark's seed: sample i is drawn with seed + i")
    greedy: bool = _help(False, "greedy answers instead of the benchmark's sampling (the embedded stand-in)")
    compliance_dataset_path: str = _help("", "TEST07's set (gpt-oss-120b's GPQA compliance set)")
    audit_dir: str = _help("", "TEST07 and TEST09: the folder holding <TEST>/audit.config")

    def audit_config(self, mode: str) -> str:
        """The audit.config a test of `mode` runs with ('' for the benchmark's own tests)."""
        if mode == "TEST06":
            return self.audit_conf
        if mode in COMPLIANCE_MODES:
            return str(Path(self.audit_dir) / mode / "audit.config") if self.audit_dir else ""
        return ""

    def max_new_tokens_for(self, mode: str) -> int:
        """max_tokens, else the benchmark's for the mode (gpt-oss-120b: 10,240 in performance runs,
        32,768 in accuracy runs; llama2-70b 1024, llama3.1-8b 128)."""
        bench = get_benchmark(self.model)
        if self.max_tokens:
            return self.max_tokens
        if mode in PERFORMANCE_MODES and bench.performance_max_new_tokens:
            return bench.performance_max_new_tokens
        return bench.max_new_tokens

    def dataset_for(self, mode: str) -> str:
        """The data set a test of `mode` reads: TEST07 its compliance set; a performance run (TEST09
        too) the performance set where the benchmark has one; else dataset_path."""
        if mode == "TEST07" and self.compliance_dataset_path:
            return self.compliance_dataset_path
        if mode in PERFORMANCE_MODES and self.performance_dataset_path:
            return self.performance_dataset_path
        return self.dataset_path

    def sampling(self) -> dict:
        """The benchmark's sampling settings for the server ({} for greedy), with the seed."""
        given = dict(get_benchmark(self.model).sampling)
        if self.greedy or not given:
            return {}
        return {**given, "seed": self.sampling_seed}


@dataclass(frozen=True, kw_only=True)
class TestConfig(TestSettings):
    """One LoadGen test, as `python -m mlperf_llm.harness.run` runs it."""
    scenario: str = field(metadata={"choices": SCENARIOS})
    mode: str = _choices("performance", MODES)
    output_dir: str
    user_conf: str
    enable_log_trace: bool = False
    abort_grace_s: float = 30.0
    request_timeout_s: float = 3600.0

    @property
    def max_new_tokens(self) -> int:
        return self.max_new_tokens_for(self.mode)

    @classmethod
    def of(cls, settings: TestSettings, **test) -> TestConfig:
        """The test `test` describes, with every shared setting taken from `settings`."""
        shared = {f.name: getattr(settings, f.name) for f in fields(TestSettings)}
        return cls(**{**shared, **test})

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str = "the harness config", overrides: dict | None = None) -> TestConfig:
        """The config `text` holds, with `overrides` (values as JSON has them) put over its keys."""
        try:
            data = json.loads(text)
        except ValueError as e:
            raise ConfigError(f"{source}: not valid JSON ({e}); fix: write it as the driver does "
                              f"(TestConfig.to_json in mlperf_llm/harness/testconfig.py)") from None
        if overrides and isinstance(data, dict):
            data = {**data, **overrides}
        return cls.from_dict(data, source)

    @classmethod
    def from_dict(cls, data, source: str = "the harness config") -> TestConfig:
        return _build(cls, data, source)


def field_types(cls) -> dict[str, type]:
    """Each field's type, an optional one (`int | None`) as its other type (`int`)."""
    return {name: _optional_of(hint)[0] for name, hint in get_type_hints(cls).items()}


def _optional_of(hint) -> tuple[type, bool]:
    if get_origin(hint) in (Union, types.UnionType):
        args = get_args(hint)
        (other,) = [a for a in args if a is not type(None)]
        return other, type(None) in args
    return hint, False


def _build(cls, data, where: str):
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a JSON object, got {type(data).__name__}")
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}; fix: use the keys of {cls.__name__}: "
                          f"{', '.join(known)}")
    types_of = get_type_hints(cls)
    values = {}
    for name, f in known.items():
        if name not in data:
            if f.default is MISSING and f.default_factory is MISSING:
                raise ConfigError(f"{where}: the key {name!r} is missing; fix: give it (it has no default)")
            continue
        value = _typed(types_of[name], data[name], f"{where}: {name}")
        choices = f.metadata.get("choices")
        if choices and value not in choices:
            raise ConfigError(f"{where}: {name}={value!r}; fix: choose from {', '.join(choices)}")
        values[name] = value
    return cls(**values)


def _typed(hint, raw, where: str):
    """raw (parsed JSON) as a value of type `hint`, or a ConfigError naming where and what was expected."""
    hint, optional = _optional_of(hint)
    if raw is None and optional:
        return None
    if get_origin(hint) is tuple:
        if not isinstance(raw, list):
            raise ConfigError(f"{where}={raw!r} is not a list; fix: give a list (JSON)")
        return tuple(_typed(get_args(hint)[0], x, f"{where}[{i}]") for i, x in enumerate(raw))
    if is_dataclass(hint):
        return _build(hint, raw, where)
    ok = {bool: isinstance(raw, bool), str: isinstance(raw, str),
          int: isinstance(raw, int) and not isinstance(raw, bool),
          float: isinstance(raw, (int, float)) and not isinstance(raw, bool)}[hint]
    if not ok:
        raise ConfigError(f"{where}={raw!r} is not {_KIND[hint]}; fix: give {_KIND[hint]} (JSON)")
    return float(raw) if hint is float else raw


_KIND = {bool: "true or false", str: "a string", int: "an integer", float: "a number"}
