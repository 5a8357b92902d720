import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AUTOMATION = os.path.join(ROOT, "automation")
if AUTOMATION not in sys.path:
    sys.path.insert(0, AUTOMATION)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "e2e: end-to-end test on real components (the cm command, vLLM, models); runs in CI")
