import os

import pytest

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "sysinfo")


def _read(*parts: str) -> str:
    with open(os.path.join(FIXTURES, *parts)) as f:
        return f.read()


@pytest.fixture
def fixture_text():
    """fixture_text("folder", "file") -> the text of tests/fixtures/sysinfo/folder/file."""
    return _read
