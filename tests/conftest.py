"""The suite's arrangement: the e2e marker (the quick lane is `-m "not e2e"`), and how pytest-xdist
(pytest.ini: `-n auto`) spreads it. Every module but the e2e ones is a unit of its own (its module
fixtures made once), spread over all workers; the e2e tests share session fixtures (one full run of
the README command, one vLLM server, the host's pace) and run last, in one worker, in their order,
once the other workers are done: alone on the machine, as their limits assume. The e2e worker's ledger of real work comes back here and is printed at the end."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AUTOMATION = os.path.join(ROOT, "automation")
STANDIN = os.path.join(ROOT, "tests", "fixtures", "vllm")     # the fake vLLM server: `import standin`
E2E_DIR = os.path.join(ROOT, "tests", "e2e")                  # its `costs` ledger, printed here
for path in (STANDIN, AUTOMATION, E2E_DIR):
    if path not in sys.path:
        sys.path.insert(0, path)


E2E = E2E_DIR + os.sep
GPU = os.path.join(ROOT, "tests", "gpu") + os.sep
# folders whose modules are one unit, run by one worker in order: they share something costly that
# one module builds and the next takes (the model steps' ml venv, ~40 s: tests/integration/models/
# conftest.py), which a second worker would otherwise wait for, idle, on the cache entry's lock
GROUPED = ("tests/integration/models/",)
# assigned first, in this order: units that leave in the session's cache what an e2e test then takes
# (vLLM's venv, which the README's command installs otherwise, and the server image of it the
# replay with --docker uses: ~8 min on the slow kind of host; the v4.1 LoadGen build seed 003's
# command copies instead of compiling: sysinfo/loadgen_src.build_kept), then the longest (50-170 s each on the slow kind of host, 2026-11-28), so the last
# units both workers run are short ones and neither waits long, idle, for the other before the e2e
# unit starts
FIRST = ("tests/integration/containers/test_server_image.py",
         "tests/integration/sysinfo/test_loadgen_source_build.py",
         "tests/integration/containers/test_image_podman.py",
         "tests/integration/engine/test_cm4mlops_both_engines.py",
         "tests/integration/models/",
         "tests/integration/engine/test_cmind_coexistence.py",
         "tests/integration/harness/test_harness_standin.py")


CACHE_WAS_EMPTY = pytest.StashKey[bool]()


def session_cache_was_empty(config) -> bool:
    """Whether the session's cache (CM4MLPERF_CACHE_DIR; without it the e2e tests make one) held no
    entry when the run began (CI's fresh cache): read once by the controller, before any worker ran a
    test, and handed to the workers (pytest_configure_node)."""
    given = getattr(config, "workerinput", {}).get("session_cache_was_empty")
    if given is not None:
        return given
    folder = os.environ.get("CM4MLPERF_CACHE_DIR", "").strip()
    store = os.path.join(folder, "store") if folder else ""
    return not store or not os.path.isdir(store) or not os.listdir(store)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    node.workerinput["session_cache_was_empty"] = node.config.stash[CACHE_WAS_EMPTY]


@pytest.fixture(scope="session")
def cache_was_empty(request) -> bool:
    """The session's cache held no entry when the run began (session_cache_was_empty)."""
    return request.config.stash[CACHE_WAS_EMPTY]


def pytest_configure(config):
    config.stash[CACHE_WAS_EMPTY] = session_cache_was_empty(config)
    config.addinivalue_line(
        "markers", "e2e: end-to-end test on real components (the cm command, vLLM, models); runs in CI; "
        "every test under tests/e2e has it, so `-m 'not e2e'` is the quick lane (README)")
    config.addinivalue_line(
        "markers", "second_server: the module needs a second vLLM server beside the session's (tests/e2e/conftest.py: "
        "second_server_start starts it together with the session's)")
    config.addinivalue_line(
        "markers", "gpu: needs a CUDA device (tests/gpu; benchmarks/gpu_check.sh runs them on a GPU node); "
        "skipped with the reason where torch sees none")


def no_cuda_reason() -> str:
    """Why the gpu tests cannot run in this interpreter ('' where torch sees a CUDA device)."""
    try:
        import torch
    except ImportError:
        return f"no CUDA device: torch is not installed in {sys.executable}"
    if not torch.cuda.is_available():
        return f"no CUDA device: torch {torch.__version__} sees none"
    return ""


def pytest_collection_modifyitems(config, items):
    skip_gpu = None
    for item in items:
        if str(item.path).startswith(E2E):
            item.add_marker("e2e")
        if str(item.path).startswith(GPU):
            item.add_marker("gpu")
            if skip_gpu is None:
                reason = no_cuda_reason()
                skip_gpu = pytest.mark.skip(reason=reason) if reason else False
            if skip_gpu:
                item.add_marker(skip_gpu)


def work_unit(nodeid: str) -> str:
    """What one pytest-xdist worker runs whole, in order: "e2e" (tests/e2e), a GROUPED folder, else
    the test's module."""
    path = nodeid.split("::", 1)[0]
    if path.startswith("tests/e2e/"):
        return "e2e"
    return next((folder for folder in GROUPED if path.startswith(folder)), path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scope scheduling with the units of work_unit (its `xdist_group` marks are not
    used: pytest 9.2 keeps a node's id where pytest-xdist 3.8 no longer renames it)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByWorkUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

        def _assign_work_unit(self, node) -> None:
            """The e2e unit last, and only once no other worker has tests left: the e2e tests run
            alone, as their limits and the Server targets the runs derive from their own Offline
            tests assume (run beside the integration tests, the README run's derived target fell
            and its Server tests took several times as long)."""
            for unit in reversed(FIRST):
                if unit in self.workqueue:
                    self.workqueue.move_to_end(unit, last=False)
            if "e2e" in self.workqueue:
                self.workqueue.move_to_end("e2e")
                # a worker keeps its last test until more work or the end comes (pytest needs the
                # next item): one pending test is a worker with nothing left to run
                busy = any(self._pending_of(work) >= 2 for other, work in self.assigned_work.items() if other is not node)
                if next(iter(self.workqueue)) == "e2e" and busy:
                    return
            super()._assign_work_unit(node)
    return ByWorkUnit(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """A pytest-xdist worker ended: the e2e work it charged (tests/e2e/conftest.py)."""
    rows = getattr(node, "workeroutput", {}).get("e2e_ledger")
    if rows:
        from costs import LEDGER
        LEDGER.add_json(rows)


def pytest_terminal_summary(terminalreporter):
    from costs import LEDGER
    lines = LEDGER.lines()
    if lines:
        terminalreporter.section("e2e work (what each test or shared fixture really did)")
        for line in lines:
            terminalreporter.write_line(line)
