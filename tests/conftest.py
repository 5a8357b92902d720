import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AUTOMATION = os.path.join(ROOT, "automation")
STANDIN = os.path.join(ROOT, "tests", "fixtures", "vllm")     # the fake vLLM server: `import standin`
for path in (STANDIN, AUTOMATION):
    if path not in sys.path:
        sys.path.insert(0, path)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "e2e: end-to-end test on real components (the cm command, vLLM, models); runs in CI")
