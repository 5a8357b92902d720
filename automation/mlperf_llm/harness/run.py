"""One LoadGen test in this process: python -m mlperf_llm.harness.run --scenario=Offline ...

Checks everything it can before LoadGen starts (data set, servers, model name, tokenizer),
runs the test with its cwd in --output-dir (so no stray audit.config is picked up), and
writes harness_status.json there. Exit: 0 done, 2 refused before LoadGen, 3 the run failed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .client import ApiClient, ApiError, GenerationParams, PreflightError
from .progress import Progress, Stats
from .qsl import Dataset, DatasetError, check_tokenizer, load_dataset
from .responder import Responder
from .results import HarnessStatus
from .rounds import RoundError, installed_loadgen_version, loadgen_check, loadgen_model_and_dirs
from ..rounds import round_for
from ..sysinfo.loadgen_conf import conf_beside_loadgen

EXIT_REFUSED, EXIT_FAILED = 2, 3


@dataclass(frozen=True)
class RunConfig:
    scenario: str
    mode: str                        # performance | accuracy | TEST06 (accuracy with audit.config)
    dataset_path: str
    output_dir: str
    user_conf: str
    backend: str = "vllm"
    api_servers: tuple[str, ...] = ()
    api_model_name: str = ""
    model_path: str = ""
    model: str = "llama2-70b-99"
    round: str = ""                 # "" = the newest round that has the model
    execution_mode: str = "test"
    num_workers: int = 1
    max_inflight: int = 1024
    total_sample_count: int | None = None
    max_tokens: int = 1024
    token_ids_via: str = "return_token_ids"
    batch_size: int = 1
    dtype: str = "float32"
    audit_conf: str = ""
    enable_log_trace: bool = False
    check_tokenizer: bool = True
    progress: bool = True
    abort_grace_s: float = 30.0
    request_timeout_s: float = 3600.0


def parse_args(argv: list[str] | None = None) -> RunConfig:
    p = argparse.ArgumentParser(prog="python -m mlperf_llm.harness.run", description=__doc__)
    a = p.add_argument
    a("--scenario", required=True, choices=["Offline", "Server", "Interactive"])
    a("--mode", default="performance", choices=["performance", "accuracy", "TEST06"])
    a("--dataset-path", required=True)
    a("--output-dir", required=True)
    a("--user-conf", required=True)
    a("--backend", default="vllm", choices=["vllm", "transformers"])
    a("--api-server", default="", help="URL[,URL2,...]")
    a("--api-model-name", default="")
    a("--model-path", default="", help="model (transformers) or tokenizer folder")
    a("--model", default="llama2-70b-99")
    a("--round", default="", help="6.1, 6.0, ... (default: the newest round that has --model)")
    a("--execution-mode", default="test", choices=["test", "valid"])
    a("--num-workers", type=int, default=1)
    a("--max-inflight", type=int, default=1024)
    a("--total-sample-count", type=int, default=None)
    a("--max-tokens", type=int, default=1024)
    a("--token-ids-via", default="return_token_ids", choices=["return_token_ids", "logprobs"])
    a("--batch-size", type=int, default=1)
    a("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    a("--audit-conf", default="", help="audit.config to copy into the output dir (compliance tests)")
    a("--enable-log-trace", action="store_true")
    a("--skip-tokenizer-check", action="store_true")
    a("--no-progress", action="store_true")
    a("--abort-grace-s", type=float, default=30.0)
    a("--request-timeout-s", type=float, default=3600.0)
    n = p.parse_args(argv)
    servers = tuple(u.strip() for u in n.api_server.split(",") if u.strip())
    return RunConfig(n.scenario, n.mode, n.dataset_path, n.output_dir, n.user_conf, n.backend, servers,
                     n.api_model_name, n.model_path, n.model, n.round, n.execution_mode, n.num_workers,
                     n.max_inflight, n.total_sample_count, n.max_tokens, n.token_ids_via, n.batch_size, n.dtype,
                     n.audit_conf, n.enable_log_trace, not n.skip_tokenizer_check, not n.no_progress,
                     n.abort_grace_s, n.request_timeout_s)


class Refused(Exception):
    """The test cannot start; the message names the input, the reason and the fix."""


def _make_client_factory(cfg: RunConfig):
    params = GenerationParams(max_tokens=cfg.max_tokens, token_ids_via=cfg.token_ids_via)
    per_endpoint = max(1, cfg.max_inflight)

    def make() -> ApiClient:
        return ApiClient(list(cfg.api_servers), cfg.api_model_name, params, per_endpoint, cfg.request_timeout_s)
    return make


def _preflight_api(cfg: RunConfig, ds: Dataset, make_client) -> None:
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
            if cfg.check_tokenizer:
                cache: dict[tuple[str, bool], list[int]] = {}
                for i in sorted({min(ds.count - 1, k * max(1, ds.count // 8)) for k in range(8)}):
                    for special in (False, True):
                        cache[(ds.inputs[i], special)] = await c.tokenize(ds.inputs[i], special)
                check_tokenizer(ds, lambda text, special: cache[(text, special)])
    try:
        asyncio.run(go())
    except PreflightError as e:
        raise Refused(str(e)) from None
    except ApiError as e:
        raise Refused(f"checking the data set against the server's tokenizer failed ({e}); fix: serve with vLLM "
                      "(it has POST /tokenize) or set CM_MLPERF_SKIP_TOKENIZER_CHECK=yes") from None


def _preflight_hf(cfg: RunConfig, ds: Dataset) -> None:
    if not cfg.model_path or not os.path.isdir(cfg.model_path):
        raise Refused(f"model_path {cfg.model_path!r} is not a folder; fix: pass --model_path=<HF model folder>")
    if cfg.check_tokenizer:
        from .sut_hf import load_tokenizer
        tok = load_tokenizer(cfg.model_path)
        check_tokenizer(ds, lambda text, special: list(tok(text, add_special_tokens=special)["input_ids"]),
                        bos_id=tok.bos_token_id, vocab_size=len(tok))


def _settings(lg, cfg: RunConfig, lg_model: str, lg_scenario: str, mlperf_conf: str = ""):
    s = lg.TestSettings()
    s.scenario = getattr(lg.TestScenario, lg_scenario)
    if not os.path.isfile(cfg.user_conf):
        raise Refused(f"user_conf {cfg.user_conf!r} does not exist")
    if mlperf_conf:      # a LoadGen built from source has none inside (mlperf_llm.sysinfo.loadgen_conf)
        s.FromConfig(mlperf_conf, lg_model, lg_scenario)
    s.FromConfig(os.path.abspath(cfg.user_conf), lg_model, lg_scenario)
    s.mode = lg.TestMode.PerformanceOnly if cfg.mode == "performance" else lg.TestMode.AccuracyOnly
    return s


def run(cfg: RunConfig) -> int:
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
        ds = load_dataset(cfg.dataset_path, cfg.total_sample_count)
        streaming = lg_scenario == "Server"
        if cfg.backend == "vllm":
            make_client = _make_client_factory(cfg)
            _preflight_api(cfg, ds, make_client)
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
        sut = ApiSUT(ds, ApiSutConfig(streaming, cfg.num_workers, cfg.max_inflight), make_client, responder)
    else:
        from .sut_hf import HfSUT, HfSutConfig
        sut = HfSUT(ds, HfSutConfig(cfg.model_path, streaming, cfg.batch_size, cfg.dtype, cfg.max_tokens), responder)

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
        tty = True if os.environ.get("CM_MLPERF_PROGRESS_TTY") == "yes" else None
        with Progress(stats, label, enabled=cfg.progress, tty=tty):
            lg.StartTestWithLogSettings(lg_sut, qsl, settings, log_settings, str(audit))
        done.set()
        sut.stop()
        lg.DestroyQSL(qsl)
        lg.DestroySUT(lg_sut)
    finally:
        os.chdir(cwd)
    write_status([])
    if not status.ok:
        print(f"ERROR: the run failed: {status.errors[:3]}", file=sys.stderr)
        return EXIT_FAILED
    return 0


def main(argv: list[str] | None = None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
