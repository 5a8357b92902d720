"""The pure parts of quantization: group size choice, calibration rows, accuracy logs, the comparison."""
import json

import pandas as pd
import pytest

from mlperf_llm.accuracy.log import first_per_sample
from mlperf_llm.models.errors import ModelError
from mlperf_llm.models.quant_eval import QuantComparison
from mlperf_llm.models.quantize import choose_group_size, linear_in_features, load_calibration, write_accuracy_log

SMOLLM2 = {"hidden_size": 576, "num_attention_heads": 9, "head_dim": 64, "intermediate_size": 1536}
LLAMA2_70B = {"hidden_size": 8192, "num_attention_heads": 64, "intermediate_size": 28672}


def test_group_size_128_fits_llama2_70b():
    assert linear_in_features(LLAMA2_70B) == {"q/k/v/gate/up": 8192, "o_proj": 8192, "down_proj": 28672}
    assert choose_group_size(LLAMA2_70B) == (128, "")


def test_group_size_for_smollm2_is_64_and_says_why():
    size, note = choose_group_size(SMOLLM2, 128)
    assert size == 64
    assert "group size 128 does not divide" in note and "q/k/v/gate/up 576" in note and "using 64" in note
    assert choose_group_size(SMOLLM2, 64) == (64, "")


def test_no_group_size_fits():
    with pytest.raises(ModelError, match="use --scheme=w8a8"):
        choose_group_size({"hidden_size": 100, "num_attention_heads": 4, "intermediate_size": 300})


@pytest.fixture
def pickle_path(tmp_path):
    path = tmp_path / "set.pkl"
    pd.DataFrame({"tok_input": [[1, 2, 3], [4, 5], [6], [7, 8]], "output": ["a", "b", "c", "d"]}).to_pickle(path)
    return str(path)


def test_calibration_rows_are_deterministic(pickle_path):
    assert load_calibration(pickle_path, 2) == [[1, 2, 3], [4, 5]]
    assert load_calibration(pickle_path, 2, offset=2) == [[6], [7, 8]]
    with pytest.raises(ModelError, match="has 4 rows; ask for 1..2"):
        load_calibration(pickle_path, 3, offset=2)
    with pytest.raises(ModelError, match="does not exist"):
        load_calibration(pickle_path + ".nope", 1)


def test_calibration_needs_tok_input(tmp_path):
    path = tmp_path / "x.pkl"
    pd.DataFrame({"input": ["x"]}).to_pickle(path)
    with pytest.raises(ModelError, match="no tok_input column"):
        load_calibration(str(path), 1)


def test_accuracy_log_reads_back_with_the_accuracy_library(tmp_path):
    path = str(tmp_path / "log.json")
    write_accuracy_log(path, [[5, 6, 2], [70000]], offset=3)
    entries = first_per_sample(path)
    assert [e.qsl_idx for e in entries] == [3, 4]
    assert [e.token_ids.tolist() for e in entries] == [[5, 6, 2], [70000]]
    assert json.load(open(path))[0]["token_count"] == 3


def test_comparison_ratios_and_env():
    c = QuantComparison("fp8", 4, {"rouge1": 40.0, "rouge2": 20.0, "rougeL": 30.0, "tokens_per_sample": 50.0},
                        {"rouge1": 39.0, "rouge2": 20.0, "rougeL": 31.5, "tokens_per_sample": 48.0}, 3)
    assert c.ratio("rouge1") == 0.975 and c.ratio("rougeL") == 1.05
    env = c.env()
    assert env["CM_QUANT_ACCURACY_ROUGE1"] == "39.0" and env["CM_QUANT_ACCURACY_ROUGE1_UNQUANTIZED"] == "40.0"
    assert env["CM_QUANT_ACCURACY_IDENTICAL_ANSWERS"] == "3"
    assert "identical answers: 3/4" in c.text() and "0.975" in c.text()
