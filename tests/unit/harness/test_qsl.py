
import pandas as pd
import pytest

from mlperf_llm.harness.qsl import DatasetError, _matches, check_tokenizer, load_dataset
from standin import toytok
from standin.dataset import make_rows, write_dataset


def test_loads_token_ids_without_retokenizing(tmp_path):
    path = write_dataset(str(tmp_path / "ds.pkl"), 12)
    ds = load_dataset(path)
    rows = make_rows(12)
    assert ds.count == 12
    assert ds.tok_input[3] == rows[3]["tok_input"]
    assert ds.max_input_len == max(len(r["tok_input"]) for r in rows)
    assert load_dataset(path, total_sample_count=5).count == 5


def test_bad_data_sets_are_refused_with_the_reason(tmp_path):
    with pytest.raises(DatasetError, match="does not exist"):
        load_dataset(str(tmp_path / "missing.pkl"))
    junk = tmp_path / "junk.pkl"
    junk.write_bytes(b"not a pickle")
    with pytest.raises(DatasetError, match="not a readable pandas pickle"):
        load_dataset(str(junk))
    rows = make_rows(3)
    partial = tmp_path / "partial.pkl"
    pd.DataFrame(rows).drop(columns=["tok_input"]).to_pickle(partial)
    with pytest.raises(DatasetError, match=r"lacks columns \['tok_input'\]"):
        load_dataset(str(partial))
    rows[1]["tok_input_length"] += 1
    corrupt = tmp_path / "corrupt.pkl"
    pd.DataFrame(rows).to_pickle(corrupt)
    with pytest.raises(DatasetError, match="row 1 tok_input_length"):
        load_dataset(str(corrupt))
    with pytest.raises(DatasetError, match="at least 1"):
        load_dataset(write_dataset(str(tmp_path / "ok.pkl"), 3), total_sample_count=0)


def _tok(text, special):
    return toytok.encode(text, add_special_tokens=special)


def test_tokenizer_check_accepts_the_matching_tokenizer(tmp_path):
    ds = load_dataset(write_dataset(str(tmp_path / "ds.pkl"), 20))
    check_tokenizer(ds, _tok)


def test_tokenizer_check_refuses_another_tokenizer(tmp_path):
    ds = load_dataset(write_dataset(str(tmp_path / "ds.pkl"), 20, offset=5))
    with pytest.raises(DatasetError, match="does not match the model's tokenizer: 8 of 8"):
        check_tokenizer(ds, _tok)
    with pytest.raises(DatasetError, match="vocabulary has 100 ids"):
        check_tokenizer(ds, _tok, vocab_size=100)


def test_reference_quirks_are_tolerated():
    # processorca tokenizes "<s>..." with special tokens (BOS twice) and appends one token
    assert _matches([1, 1, 10, 11, 29871], [1, 10, 11], bos=1)
    assert _matches([1, 10, 11], [10, 11], bos=1)
    assert not _matches([1, 10, 12], [1, 10, 11], bos=1)
    assert not _matches([1, 10, 11, 5, 6, 7], [1, 10, 11], bos=1)
