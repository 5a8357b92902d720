import json

import numpy as np
import pytest

from mlperf_llm.accuracy.log import AccuracyLogError, decode_hex, encode_ids, first_per_sample


def write(tmp_path, entries):
    path = tmp_path / "mlperf_log_accuracy.json"
    path.write_text(json.dumps(entries))
    return str(path)


def test_hex_round_trip_int32_and_int64():
    ids = [1, 29871, 2, 32000, -1]
    assert decode_hex(encode_ids(ids)).tolist() == ids
    assert decode_hex(encode_ids(ids, "int64"), "int64").tolist() == ids
    assert decode_hex("01000000FF7F0000").dtype == np.int32


def test_first_entry_per_sample_in_log_order(tmp_path):
    path = write(tmp_path, [
        {"seq_id": 0, "qsl_idx": 3, "data": encode_ids([5, 6])},
        {"seq_id": 1, "qsl_idx": 1, "data": encode_ids([7]), "token_data": encode_ids([7]), "token_count": 1},
        {"seq_id": 2, "qsl_idx": 3, "data": encode_ids([9, 9, 9])},
    ])
    entries = first_per_sample(path)
    assert [e.qsl_idx for e in entries] == [3, 1]
    assert entries[0].token_ids.tolist() == [5, 6] and entries[0].token_count is None
    assert entries[1].first_tokens.tolist() == [7] and entries[1].token_count == 1


def test_wrong_dtype_is_named(tmp_path):
    path = write(tmp_path, [{"qsl_idx": 0, "data": "010000"}])
    with pytest.raises(AccuracyLogError, match="int32"):
        first_per_sample(path)


def test_missing_truncated_and_malformed_logs(tmp_path):
    with pytest.raises(AccuracyLogError, match="AccuracyOnly"):
        first_per_sample(str(tmp_path / "nope.json"))
    truncated = tmp_path / "t.json"
    truncated.write_text('[{"qsl_idx": 0, "data": "01000000"}, \n\n...\n\n')
    with pytest.raises(AccuracyLogError, match="truncated"):
        first_per_sample(str(truncated))
    with pytest.raises(AccuracyLogError, match="missing"):
        first_per_sample(write(tmp_path, [{"data": "01000000"}]))
