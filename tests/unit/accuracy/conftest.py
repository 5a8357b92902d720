import json
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "accuracy"
GOLDEN = FIXTURES / "golden"
sys.path.insert(0, str(FIXTURES))       # reference_runner.py


@pytest.fixture
def golden(tmp_path):
    """Paths of the golden fixture, with the data set as the pandas pickle the pipeline reads."""
    import pandas as pd
    targets = json.loads((GOLDEN / "dataset.json").read_text(encoding="utf-8"))["output"]
    dataset = tmp_path / "dataset.pkl"
    pd.DataFrame({"output": targets}).to_pickle(dataset)
    return {"log": str(GOLDEN / "mlperf_log_accuracy.json"), "dataset": str(dataset),
            "tokenizer": str(GOLDEN / "tokenizer"), "targets": targets,
            "expected": json.loads((GOLDEN / "expected.json").read_text())}
