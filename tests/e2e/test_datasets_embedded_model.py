"""The embedded data set built with the real converted SmolLM2 tokenizer matches the reference run."""
import pytest

from mlperf_llm.datasets import embedded
from mlperf_llm.datasets.schema import load_processed


@pytest.mark.e2e
def test_build_with_real_tokenizer(tmp_path, embedded_model_path):
    meta = embedded.build_embedded(embedded_model_path, tmp_path)
    df = load_processed(meta["pickle"], expect_rows=len(embedded.load_samples()))
    assert df.iloc[0].input.startswith("<|im_start|>system\n")
    assert df.tok_input_length.max() < 256  # short prompts keep the CPU run fast
    ref = embedded.load_reference(missing_ok=True)
    if ref is None:
        pytest.skip("embedded/reference.json not generated yet")
    assert meta["tokenizer_sha256"] == ref["tokenizer_sha256"], meta.get("warning")
    answers = embedded.REFERENCE_ANSWERS_FILE.read_text().splitlines()
    assert len(answers) == len(df)
