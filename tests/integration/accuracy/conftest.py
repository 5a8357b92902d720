import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "accuracy"
GOLDEN = FIXTURES / "golden"
sys.path.insert(0, str(FIXTURES))       # reference_runner.py, golden_fixture.py

from golden_fixture import golden  # noqa: E402,F401  (the shared `golden` fixture)
