"""Seed 003's command, as the submitter typed it, with `_embedded` added, against a vLLM server that
was started beforehand (as in the seed) and serves the embedded model under the seed's name: the
session's server (tests/e2e/conftest.py), kept running by `cm run script --tags=run,vllm-server
--keep_server=yes` and stopped with `_stop` at the session's end.

Three changes from the seed: the server's port is a free one instead of 8000 and
`--execution_mode=test` replaces `valid` (a valid Offline run issues 24,576 samples: about an hour
here), both forced by this machine; and the suite's smallest size (tests/e2e/chain.py: SMALL, 2
queries per test, TEST06's too) instead of the seed's `--test_query_count=600`, whose only effect
is time (600 queries per test, 211 accuracy samples each: about a third of the whole suite on a
slow host): what is tested here is the command line, not the load. Everything else is the seed's: its targets,
`--max_test_duration=500`, `--num_workers=12`, `--scenario=Server` beside `_all-scenarios`, and the
`--adr.mlperf-implementation.tags=_repo...,_branch.vllm` override (offline here: the run must say
that the repository cannot be cloned and go on with ours). With `_r4.1` the run uses v4.1's LoadGen
wheel, which cannot log TEST06's sampled accuracy; TEST06 runs with LoadGen built from the v4.1 source
given (`--inference_src`), and is verified."""
import json

import pytest

import chain

pytestmark = pytest.mark.e2e

NAME = "neuralmagic/Llama-2-7b-chat-hf-FP8"
assert NAME == chain.SERVED_NAME      # the name the session's server serves the embedded model under


def seed_command(url, results, submission):
    return ["run", "script", "--tags=run-mlperf,inference,_full,_r4.1,_all-scenarios,_embedded",
            "--model=llama2-70b-99", "--implementation=reference", "--division=open",
            "--category=datacenter", "--device=cpu", "--quiet", f"--api_server={url}",
            "--adr.mlperf-implementation.tags=_repo.https://github.com/gateoverflow/inference_temp,_branch.vllm",
            f"--vllm_model_name={NAME}", "--server_target_qps=9.2", *chain.SMALL,
            "--max_test_duration=500", "--execution_mode=test", "--scenario=Server", "--num_workers=12",
            "--offline_target_qps=10", f"--results_dir={results}", f"--submission_dir={submission}"]


WHO = "test_seed003_command"


def cm(args, env, log, pace, queries=0, results=None, server_starts=1):
    return chain.run_cm(args, env, log, WHO, pace, queries, results_dir=results, server_starts=server_starts)


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
def server(tmp_path_factory, cm_env, readme_run, session_server):
    """(env, URL, work folder): the session's server, after the session's full run (readme_run)."""
    assert session_server["CM_VLLM_SERVER_MODEL_NAME"] == NAME
    return cm_env, session_server["CM_VLLM_SERVER_URL"], tmp_path_factory.mktemp("seed003")


def inference_source_v41():
    """The v4.1 mlcommons/inference source (its mlperf.conf goes into the tree), from ../shared."""
    from inference_sources import inference_source
    return inference_source("4.1")


V41_SRC = inference_source_v41()


def test_seed003_command_runs_to_the_end_against_the_running_server(server, pace):
    env, url, base = server
    results, submission = base / "results", base / "submission"
    r = cm(seed_command(url, results, submission) + [f"--inference_src={V41_SRC}"], env, base / "seed003.log",
           pace, chain.SMALL_RUN_QUERIES, results)
    out = r.output
    assert r.returncode == 0, f"seed 003's command failed:\n{r.tail(10000)}"
    assert "vLLM server ready" not in out                    # it used the running server, started none
    assert "inference_temp" in out and "continuing without it" in out   # the override, said plainly
    model = results / "llama2-70b-99"
    assert "llama2-70b.Offline.target_qps = 10" in (model / "Offline" / "performance" / "run_1" / "user.conf").read_text()
    assert "llama2-70b.Server.target_qps = 9.2" in (model / "Server" / "performance" / "run_1" / "user.conf").read_text()
    server = json.loads((results / "targets.json").read_text())["Server"]
    # (a host too slow for llama2-70b's bounds adds its host_limit beside them: not asserted here)
    assert (server["target_qps"], server["source"]) == (9.2, "given")
    for scenario in ("Offline", "Server"):
        # v4.1's wheel pads equal issue whatever user.conf says: the test loads SMALL's samples, so it issues as many
        perf = model / scenario / "performance" / "run_1"
        assert f'"key": "effective_performance_sample_count", "value": {chain.SMALL_QUERIES}' in (perf / "mlperf_log_detail.txt").read_text()
        assert json.loads((perf / "harness_status.json").read_text())["completed"] == chain.SMALL_QUERIES, scenario
        assert (model / scenario / "accuracy" / "accuracy.txt").is_file()
        assert (model / scenario / "TEST06" / "mlperf_log_detail.txt").is_file()
    # v4.1's PyPI LoadGen wheels ignore the audit's accuracy logging: TEST06's LoadGen is built from the
    # v4.1 source the run holds, and TEST06 is verified, not skipped, and passes: greedy answers streamed
    # by the real vLLM start with the token the final answer starts with, end at EOS or the length cap,
    # and are as long as reported (Offline has no first token to check)
    for scenario in ("Offline", "Server"):
        detail = (model / scenario / "TEST06" / "mlperf_log_detail.txt").read_text()
        assert '"key": "loadgen_version", "value": "4.1 @' in detail     # built from source, not the 4.1.30 wheel
        lines = (model / scenario / "TEST06" / "verify_accuracy.txt").read_text().splitlines()
        first = "Skipped" if scenario == "Offline" else "True"
        assert lines == [f"First token check pass: {first}", "EOS check pass: True", "Sample length check pass: True",
                         "TEST06 verification complete"], (scenario, lines)
    assert list(submission.glob("open/*/results/*/llama2-70b-99/Server/performance/run_1"))
    readme = next(submission.glob("open/*/measurements/*/llama2-70b-99/Server/README.md")).read_text()
    given = next(a for a in seed_command(url, results, submission) if a.startswith("--server_target_qps"))
    assert "_r4.1" in readme and given in readme     # the command is recorded
