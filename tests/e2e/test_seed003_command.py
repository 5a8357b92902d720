"""Seed 003's command, as the submitter typed it, with `_embedded` added, against a vLLM server that
was started beforehand (as in the seed) and serves the embedded model under the seed's name.

Two changes from the seed, both forced by this machine: the server's port is a free one instead of
8000, and `--execution_mode=test` replaces `valid` (a valid Offline run issues 24,576 samples: about
an hour here). Everything else is the seed's: its targets, `--test_query_count=600`,
`--max_test_duration=500`, `--num_workers=12`, `--scenario=Server` beside `_all-scenarios`, and the
`--adr.mlperf-implementation.tags=_repo...,_branch.vllm` override (offline here: the run must say
that the repository cannot be cloned and go on with ours). With `_r4.1` the run uses v4.1's LoadGen
wheel, which cannot log TEST06's sampled accuracy; TEST06 runs with LoadGen built from the v4.1 source
given (`--inference_src`), and is verified."""
import glob
import json
import os
import socket
import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e

CM = os.path.join(os.path.dirname(sys.executable), "cm")
NAME = "neuralmagic/Llama-2-7b-chat-hf-FP8"


def seed_command(url, results, submission):
    return ["run", "script", "--tags=run-mlperf,inference,_full,_r4.1,_all-scenarios,_embedded",
            "--model=llama2-70b-99", "--implementation=reference", "--division=open",
            "--category=datacenter", "--device=cpu", "--quiet", f"--api_server={url}",
            "--adr.mlperf-implementation.tags=_repo.https://github.com/gateoverflow/inference_temp,_branch.vllm",
            f"--vllm_model_name={NAME}", "--server_target_qps=9.2", "--test_query_count=600",
            "--max_test_duration=500", "--execution_mode=test", "--scenario=Server", "--num_workers=12",
            "--offline_target_qps=10", f"--results_dir={results}", f"--submission_dir={submission}"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cm(args, env, log, timeout=3600):
    r = subprocess.run([CM, *args], env=env, capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    log.write_text(r.stdout + "\n--- stderr ---\n" + r.stderr)
    return r


def loadgen_version():
    from importlib import metadata
    try:
        return metadata.version("mlcommons-loadgen")
    except metadata.PackageNotFoundError:
        return None


@pytest.fixture(scope="module", autouse=True)
def venv_loadgen_untouched():
    """`_r4.1` runs v4.1's LoadGen from its own cache entry: the LoadGen of the venv the run uses
    (this one) must be the same after the run."""
    before = loadgen_version()
    yield
    assert loadgen_version() == before, "the _r4.1 run changed the LoadGen of the run's venv"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("seed003")
    env = dict(os.environ)
    env.setdefault("CM4MLPERF_CACHE_DIR", str(base.parent / "cm-cache"))
    env.setdefault("CM_REPOS", str(base.parent / "CM"))
    port = free_port()
    r = cm(["run", "script", "--tags=run,vllm-server,_embedded", f"--served_model_name={NAME}",
            f"--port={port}", "--keep_server=yes", "--quiet"], env, base / "server.log", timeout=1800)
    assert r.returncode == 0, f"server start failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    records = glob.glob(os.path.join(env["CM4MLPERF_CACHE_DIR"], "runs", "*", "*", f"vllm-server-{port}.json"))
    assert records, "the server step left no record"
    record = max(records, key=os.path.getmtime)
    yield env, f"http://localhost:{port}", base
    stop = cm(["run", "script", "--tags=run,vllm-server,_stop", f"--server_record={record}", "--quiet"],
              env, base / "stop.log", timeout=300)
    assert stop.returncode == 0, stop.stdout[-2000:] + stop.stderr[-2000:]


def inference_source_v41():
    """The v4.1 mlcommons/inference source (its mlperf.conf goes into the tree), from ../shared."""
    from inference_sources import inference_source
    return inference_source("4.1")


V41_SRC = inference_source_v41()


def test_seed003_command_runs_to_the_end_against_the_running_server(server):
    env, url, base = server
    results, submission = base / "results", base / "submission"
    r = cm(seed_command(url, results, submission) + [f"--inference_src={V41_SRC}"], env, base / "seed003.log")
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"seed 003's command failed:\n{r.stdout[-6000:]}\n{r.stderr[-4000:]}"
    assert "vLLM server ready" not in out                    # it used the running server, started none
    assert "inference_temp" in out and "continuing without it" in out   # the override, said plainly
    model = results / "llama2-70b-99"
    assert "llama2-70b.Offline.target_qps = 10" in (model / "Offline" / "performance" / "run_1" / "user.conf").read_text()
    assert "llama2-70b.Server.target_qps = 9.2" in (model / "Server" / "performance" / "run_1" / "user.conf").read_text()
    assert json.loads((results / "targets.json").read_text())["Server"] == {"target_qps": 9.2, "source": "given"}
    for scenario in ("Offline", "Server"):
        assert (model / scenario / "accuracy" / "accuracy.txt").is_file()
        assert (model / scenario / "TEST06" / "mlperf_log_detail.txt").is_file()
    # v4.1's PyPI LoadGen wheels ignore the audit's accuracy logging: TEST06's LoadGen is built from the
    # v4.1 source the run holds, and TEST06 is verified (PASS or FAIL), not skipped
    assert "TEST06 NOT VERIFIED" not in out
    for scenario in ("Offline", "Server"):
        detail = (model / scenario / "TEST06" / "mlperf_log_detail.txt").read_text()
        assert '"key": "loadgen_version", "value": "4.1 @' in detail     # built from source, not the 4.1.30 wheel
        lines = (model / scenario / "TEST06" / "verify_accuracy.txt").read_text().splitlines()
        assert lines[-1] in ("TEST06 verification complete", "TEST06 verification failed"), lines
    assert list(submission.glob("open/*/results/*/llama2-70b-99/Server/performance/run_1"))
    readme = next(submission.glob("open/*/measurements/*/llama2-70b-99/Server/README.md")).read_text()
    assert "_r4.1" in readme and "--server_target_qps=9.2" in readme     # the command is recorded
