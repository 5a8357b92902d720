import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "datasets"
sys.path.insert(0, str(FIXTURES))
