"""One LoadGen test in this process: python -m mlperf_llm.harness.run --config=harness_config.json

The test's settings are one `TestConfig` (testconfig.py): the driver writes it as JSON and passes
`--config`; by hand, each setting can also be given (or a --config file's value overridden) as a flag
named after its field (`--scenario=Offline --dataset-path=... --api-servers=URL1,URL2`; `--help` lists
them). Checks everything it can before LoadGen starts (data set, servers, model name, tokenizer),
runs the test with its cwd in the output dir (so no stray audit.config is picked up), and writes
harness_status.json there. Exit: 0 done, 2 refused before LoadGen, 3 the run failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import threading
import time
from dataclasses import MISSING, fields
from pathlib import Path
from typing import get_args, get_origin

from cmcontract.yesno import is_yes

from .progress import Progress, Stats
from .qsl import Dataset, DatasetError, check_tokenizer, load_dataset
from .responder import Responder
from .results import TIMINGS_FILE, HarnessStatus
from .rounds import RoundError, installed_loadgen_version, loadgen_check, loadgen_model_and_dirs
from .serverwatch import ServerWatch
from .testconfig import CONFIG_FILE, PERFORMANCE_MODES, ConfigError, TestConfig, field_types
from ..benchmarks import get_benchmark
from ..files import write_atomic
from ..rounds import round_for
from ..sysinfo.loadgen_conf import conf_beside_loadgen

EXIT_REFUSED, EXIT_FAILED = 2, 3


def _flag_parser() -> argparse.ArgumentParser:
    """--config, and one flag per TestConfig field (a list of strings as a comma list; a list of
    records, managed_servers, only in --config)."""
    p = argparse.ArgumentParser(prog="python -m mlperf_llm.harness.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                argument_default=argparse.SUPPRESS)
    p.add_argument("--config", help="the test's settings as JSON (TestConfig); flags override its values")
    kinds = field_types(TestConfig)
    for f in fields(TestConfig):
        flag, kind = "--" + f.name.replace("_", "-"), kinds[f.name]
        shown = f.default not in (MISSING, "", (), None)
        help = " ".join(filter(None, [f.metadata.get("help", ""), f"(default: {f.default})" if shown else ""]))
        if kind is bool:
            p.add_argument(flag, action=argparse.BooleanOptionalAction, help=help)
        elif get_origin(kind) is tuple and get_args(kind)[0] is str:
            p.add_argument(flag, type=lambda v: [u.strip() for u in v.split(",") if u.strip()], help=help)
        elif get_origin(kind) is not tuple:
            p.add_argument(flag, type=kind, choices=f.metadata.get("choices"), help=help)
    return p


def parse_args(argv: list[str] | None = None) -> TestConfig:
    given = vars(_flag_parser().parse_args(argv))
    path = given.pop("config", None)
    if not path:
        return TestConfig.from_dict(given, "the command line (a key k_k is the flag --k-k)")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"--config {path}: cannot read it ({e.strerror}); fix: pass the "
                          f"{CONFIG_FILE} the driver wrote in the test's folder") from None
    return TestConfig.from_json(text, path, overrides=given)


class Refused(Exception):
    """The test cannot start; the message names the input, the reason and the fix."""


def _make_client_factory(cfg: TestConfig, api_key: str | None = None):
    """(a maker of the workers' clients, the one Balancer they share: balance.py)."""
    # imported here: the transformers backend needs no HTTP client (a GPU node may lack aiohttp)
    from .balance import Balancer
    from .client import ApiClient, GenerationParams
    sampling = cfg.sampling()
    params = GenerationParams(max_tokens=cfg.max_new_tokens, token_ids_via=cfg.token_ids_via,
                              temperature=float(sampling.get("temperature", 0.0)),
                              top_p=float(sampling.get("top_p", 1.0)), seed=sampling.get("seed"),
                              keep_special_tokens=get_benchmark(cfg.model).keep_special_tokens)
    per_endpoint = max(1, cfg.max_inflight)
    urls = [u.rstrip("/") for u in cfg.api_servers]
    balancer = Balancer(urls, cfg.balance, cfg.endpoint_window) if urls else None

    def make() -> ApiClient:
        return ApiClient(urls, cfg.api_model_name, params, per_endpoint, cfg.request_timeout_s, balancer=balancer,
                         api_key=api_key)
    return make, balancer


def _preflight_api(cfg: TestConfig, ds: Dataset, make_client, watch: ServerWatch) -> None:
    from .apierrors import ApiError, PreflightError
    if not cfg.api_servers:
        raise Refused("api_server is empty; fix: pass --api_server=http://HOST:PORT (several: URL1,URL2)")
    if not cfg.api_model_name:
        raise Refused("api_model_name is empty; fix: pass --api_model_name=<the name the server serves>")

    async def go() -> None:
        async with make_client() as c:
            lens = await c.preflight()
            for url, max_len in lens.items():
                if max_len and ds.max_input_len + 1 > max_len:
                    raise Refused(f"api_server {url} serves at most {max_len} tokens but the longest prompt has "
                                  f"{ds.max_input_len}; fix: start vLLM with a larger --max-model-len")
                if max_len and ds.max_input_len + cfg.max_new_tokens > max_len:
                    # vLLM answers 400 to a request whose prompt and max_tokens exceed its context
                    raise Refused(f"api_server {url} serves at most {max_len} tokens, but the longest prompt "
                                  f"({ds.max_input_len}) with the {cfg.max_new_tokens} new tokens a {cfg.mode} "
                                  f"test allows needs {ds.max_input_len + cfg.max_new_tokens}; fix: start vLLM "
                                  f"with --max_model_len={ds.max_input_len + cfg.max_new_tokens} or more, or "
                                  "lower the cap with --max_tokens (a test run)")
            if not cfg.skip_tokenizer_check and ds.inputs:     # a set of token ids alone has no text to check
                cache: dict[tuple[str, bool], list[int]] = {}
                for i in sorted({min(ds.count - 1, k * max(1, ds.count // 8)) for k in range(8)}):
                    for special in (False, True):
                        cache[(ds.inputs[i], special)] = await c.tokenize(ds.inputs[i], special)
                check_tokenizer(ds, lambda text, special: cache[(text, special)])
    try:
        asyncio.run(go())
    except PreflightError as e:
        raise Refused(watch.ended("before") or str(e)) from None
    except ApiError as e:
        raise Refused(f"checking the data set against the server's tokenizer failed ({e}); fix: serve with vLLM "
                      "(it has POST /tokenize) or set CM_MLPERF_SKIP_TOKENIZER_CHECK=yes") from None


def _preflight_hf(cfg: TestConfig, ds: Dataset) -> None:
    if not cfg.model_path or not os.path.isdir(cfg.model_path):
        raise Refused(f"model_path {cfg.model_path!r} is not a folder; fix: pass --model_path=<HF model folder>")
    if not cfg.skip_tokenizer_check:
        from .sut_hf import load_tokenizer
        tok = load_tokenizer(cfg.model_path)
        check_tokenizer(ds, lambda text, special: list(tok(text, add_special_tokens=special)["input_ids"]),
                        bos_id=tok.bos_token_id, vocab_size=len(tok))


def _settings(lg, cfg: TestConfig, lg_model: str, lg_scenario: str, mlperf_conf: str = ""):
    s = lg.TestSettings()
    s.scenario = getattr(lg.TestScenario, lg_scenario)
    if not os.path.isfile(cfg.user_conf):
        raise Refused(f"user_conf {cfg.user_conf!r} does not exist")
    if mlperf_conf:      # a LoadGen built from source has none inside (mlperf_llm.sysinfo.loadgen_conf)
        s.FromConfig(mlperf_conf, lg_model, lg_scenario)
    s.FromConfig(os.path.abspath(cfg.user_conf), lg_model, lg_scenario)
    s.mode = lg.TestMode.PerformanceOnly if cfg.mode in PERFORMANCE_MODES else lg.TestMode.AccuracyOnly
    return s


def run(cfg: TestConfig, api_key: str | None = None) -> int:
    """The test; api_key: the servers' key (a secret: never in cfg, which is kept as a file)."""
    out = Path(cfg.output_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    status = HarnessStatus(False, cfg.scenario, cfg.mode, cfg.round, installed_loadgen_version())
    try:
        rnd = round_for(cfg.round, cfg.model)
        status.round = rnd.name
        lg_model, lg_scenario, _, _ = loadgen_model_and_dirs(cfg.model, cfg.scenario, rnd)
        source_conf = conf_beside_loadgen()     # "" for a wheel; a source build reads it before user.conf
        problem = loadgen_check(rnd, status.loadgen_version, built_from_source=bool(source_conf))
        if problem and cfg.execution_mode == "valid":
            raise Refused(problem)
        if problem:
            print(f"WARNING: {problem} (execution_mode=test goes on)", file=sys.stderr)
        ds = load_dataset(cfg.dataset_for(cfg.mode), cfg.total_sample_count)
        # LoadGen measures the first token in every scenario but Offline (loadgen.cc: needs_first_token):
        # Server and Interactive, and SingleStream, which issues one query after the other
        streaming = lg_scenario != "Offline"
        watch = ServerWatch(cfg.managed_servers, f"{cfg.scenario} {cfg.mode}")
        if cfg.backend == "vllm":
            make_client, balancer = _make_client_factory(cfg, api_key)
            _preflight_api(cfg, ds, make_client, watch)
        else:
            _preflight_hf(cfg, ds)
        import mlperf_loadgen as lg
        settings = _settings(lg, cfg, lg_model, lg_scenario, source_conf)
    except (Refused, DatasetError, RoundError, ValueError) as e:
        status.errors = [str(e)]
        status.write(out)
        print(f"ERROR: {e}", file=sys.stderr)
        return EXIT_REFUSED

    audit = out / "audit.config"
    if cfg.audit_conf:
        shutil.copyfile(cfg.audit_conf, audit)
    elif audit.exists():
        audit.unlink()       # only a compliance test may run with an audit.config
    stats = Stats()
    responder = Responder(lg, stats)
    if cfg.backend == "vllm":
        from .sut_api import ApiSUT, ApiSutConfig
        sut = ApiSUT(ds, ApiSutConfig(streaming, cfg.num_workers, cfg.max_inflight), make_client, responder, watch,
                     balancer)
    else:
        from .sut_hf import HfSUT, HfSutConfig
        sut = HfSUT(ds, HfSutConfig(cfg.model_path, streaming, cfg.batch_size, cfg.dtype, cfg.max_new_tokens,
                                           cfg.device), responder)

    def write_status(extra: list[str]) -> None:
        status.ok = not responder.failed.is_set() and not extra
        status.completed, status.generated_tokens, status.failed_samples = stats.completed, stats.tokens, stats.failed
        status.errors = responder.errors + extra
        status.endpoints = sut.served_per_endpoint()
        status.duration_s = round(time.perf_counter() - t0, 3)
        status.write(out)

    done = threading.Event()

    def watchdog() -> None:
        responder.failed.wait()
        if not done.wait(cfg.abort_grace_s):
            write_status([f"aborted: LoadGen had not finished {cfg.abort_grace_s:g} s after the first failure"])
            print(f"ERROR: {responder.errors[:1]}; aborting", file=sys.stderr, flush=True)
            os._exit(EXIT_FAILED)
    threading.Thread(target=watchdog, name="abort-watchdog", daemon=True).start()

    cwd = os.getcwd()
    os.chdir(out)
    try:
        sut.start()
        lg_sut = lg.ConstructSUT(sut.issue_queries, sut.flush_queries)
        qsl = lg.ConstructQSL(ds.count, ds.count, ds.load_samples, ds.unload_samples)
        log_out = lg.LogOutputSettings()
        log_out.outdir = str(out)
        log_out.copy_summary_to_stdout = False
        log_settings = lg.LogSettings()
        log_settings.log_output = log_out
        log_settings.enable_trace = cfg.enable_log_trace
        label = f"{cfg.scenario} {cfg.mode}"
        # the driver pipes our output; it says when its own stderr is a terminal
        tty = True if is_yes(os.environ.get("CM_MLPERF_PROGRESS_TTY")) else None
        with Progress(stats, label, enabled=cfg.progress, tty=tty):
            lg.StartTestWithLogSettings(lg_sut, qsl, settings, log_settings, str(audit))
        done.set()
        sut.stop()
        lg.DestroyQSL(qsl)
        lg.DestroySUT(lg_sut)
    finally:
        os.chdir(cwd)
    write_status([])
    write_atomic(str(out / TIMINGS_FILE), json.dumps({"columns": ["issued_s", "first_token_s", "completed_s", "tokens"],
                                                      "queries": responder.timings()}))
    if not status.ok:
        print("ERROR: the run failed:\n" + "\n".join(status.errors[:3]), file=sys.stderr)
        return EXIT_FAILED
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        cfg = parse_args(argv)
    except ConfigError as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return EXIT_REFUSED
    from ..vllm.inputs import API_KEY_ENV
    return run(cfg, os.environ.get(API_KEY_ENV) or None)     # the parent puts it there (testrun.run_logged)


if __name__ == "__main__":
    sys.exit(main())
