import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AUTOMATION = os.path.join(ROOT, "automation")
STANDIN = os.path.join(ROOT, "tests", "fixtures", "vllm")     # the fake vLLM server: `import standin`
for path in (STANDIN, AUTOMATION):
    if path not in sys.path:
        sys.path.insert(0, path)


E2E = os.path.join(ROOT, "tests", "e2e") + os.sep


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "e2e: end-to-end test on real components (the cm command, vLLM, models); runs in CI; "
        "every test under tests/e2e has it, so `-m 'not e2e'` is the quick lane (README)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if str(item.path).startswith(E2E):
            item.add_marker("e2e")
