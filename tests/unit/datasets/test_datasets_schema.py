import pandas as pd
import pytest

from mlperf_llm.datasets.schema import COLUMNS, DatasetError, check_frame, deterministic_subset, \
    load_processed, save_processed


def frame(n=5):
    return pd.DataFrame([{
        "id": f"flan.{i}", "system_prompt": "", "question": f"q{i}", "output": f"a{i}", "input": f"p{i}",
        "tok_input": [1, 2, i + 3], "tok_output": [4, i], "tok_input_length": 3, "tok_output_length": 2,
        "origin": "flan"} for i in range(n)], columns=list(COLUMNS))


def test_good_frame_passes_and_roundtrips(tmp_path):
    df = frame()
    assert check_frame(df).rows == 5
    path = save_processed(df, tmp_path / "d.pkl")
    assert list(load_processed(path, expect_rows=5)["id"]) == list(df["id"])
    assert [p.name for p in tmp_path.iterdir()] == ["d.pkl"]  # no temp file left


def test_missing_column_is_named():
    with pytest.raises(DatasetError, match=r"missing column\(s\) \['tok_input'\]"):
        check_frame(frame().drop(columns=["tok_input"]))


def test_length_mismatch_and_row_count():
    df = frame()
    df.at[2, "tok_input_length"] = 7
    with pytest.raises(DatasetError, match="row 2 .*token lengths disagree"):
        check_frame(df)
    with pytest.raises(DatasetError, match="has 5 rows, expected 24576"):
        check_frame(frame(), expect_rows=24576)


def test_non_integer_tokens_rejected():
    df = frame()
    df.at[0, "tok_input"] = ["a", "b", "c"]
    with pytest.raises(DatasetError, match="non-integer"):
        check_frame(df)


def test_truncated_pickle_is_refused(tmp_path):
    path = save_processed(frame(50), tmp_path / "d.pkl")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetError, match="cannot be read as a pandas pickle"):
        load_processed(path)
    with pytest.raises(DatasetError, match="does not exist"):
        load_processed(tmp_path / "nope.pkl")


def test_subset_is_deterministic_and_ordered():
    df = frame(40)
    a, b = deterministic_subset(df, 10), deterministic_subset(df, 10)
    assert list(a["id"]) == list(b["id"])
    assert list(a["id"]) == sorted(a["id"], key=lambda s: int(s.split(".")[1]))
    assert len(set(a["id"])) == 10
    with pytest.raises(DatasetError, match="only 40 rows"):
        deterministic_subset(df, 41)
