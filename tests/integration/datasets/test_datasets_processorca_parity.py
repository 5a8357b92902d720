"""Our processing equals the reference processorca.py, run for real on the same tiny parquet."""
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from tiny_tokenizer import make_tokenizer

from mlperf_llm.datasets.openorca import ProcessOptions, process_parquet

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "unit" / "datasets"))
from test_datasets_openorca import BAD_SYS, GOOD_SYS, raw_rows  # noqa: E402

SCRIPT = Path("language/llama2-70b/processorca.py")


def reference_script():
    from inference_sources import inference_source     # v5.1.1's, from ../shared
    src = inference_source("5.1")
    try:
        import transformers  # noqa: F401  (the reference script's tokenizer)
    except ImportError:
        pytest.skip("transformers is not installed; the reference script needs LlamaTokenizerFast")
    return Path(src) / SCRIPT


def test_same_pickles_as_reference(tmp_path):
    script = reference_script()
    raw = pd.DataFrame(raw_rows())
    raw.to_parquet(tmp_path / "tiny.parquet")
    tok = make_tokenizer(tmp_path / "tok", list(raw.question) + list(raw.response) + [GOOD_SYS, BAD_SYS],
                         vocab_size=500, llama_like=True)
    r = subprocess.run([sys.executable, str(script), f"--dataset_pq_path={tmp_path / 'tiny.parquet'}",
                        f"--model_dir={tok}", "--seqlen_limit=200", f"--export_dir={tmp_path / 'ref'}",
                        "--num_total_samples=16", "--calibration_subset_size=4"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    process_parquet(tmp_path / "tiny.parquet", tok, tmp_path / "ours",
                    ProcessOptions(io_token_limit=200, n_samples=16, calibration_size=4))
    for name in ("full", "sampled_16", "calibration_4"):
        ref = pd.read_pickle(tmp_path / "ref" / f"open_orca_gpt4_tokenized_llama.{name}.pkl")
        ours = pd.read_pickle(tmp_path / "ours" / f"open_orca_gpt4_tokenized_llama.{name}.pkl")
        assert len(ref) == len(ours) > 0
        for col in ours.columns:
            assert [list(v) if isinstance(v, list) else v for v in ref[col]] == \
                   [list(v) if isinstance(v, list) else v for v in ours[col]], (name, col)
