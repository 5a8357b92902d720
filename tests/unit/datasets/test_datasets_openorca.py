"""processorca-equivalent processing on a tiny raw parquet made here."""
import pandas as pd
import pytest
from tiny_tokenizer import make_tokenizer

from mlperf_llm.datasets.openorca import RESPONSE_INIT_TOKEN, ProcessOptions, is_english, process_parquet
from mlperf_llm.datasets.schema import DatasetError, load_processed
from mlperf_llm.datasets.tokenizer import ModelTokenizer

GOOD_SYS = "You are a helpful assistant, who always provide explanation."
BAD_SYS = "Explain how you used the definition to come up with the answer."


def raw_rows():
    rows = []
    for origin in ("cot", "flan", "niv", "t0"):
        for i in range(8):
            rows.append({"id": f"{origin}.{i}", "system_prompt": GOOD_SYS if i % 2 else "",
                         "question": f"Question {i} from {origin}: what is {i} plus {i}?",
                         "response": f"The answer is {2 * i}, because {i} plus {i} makes {2 * i}."})
    rows += [
        {"id": "flan.90", "system_prompt": "", "question": "Qu'est-ce que c'est ?", "response": "C'est très bien."},
        {"id": "cot.91", "system_prompt": GOOD_SYS, "question": "Pick a letter.", "response": "A"},
        {"id": "niv.92", "system_prompt": BAD_SYS, "question": "Define a cat.", "response": "A cat is an animal."},
        {"id": "flan.93", "system_prompt": BAD_SYS, "question": "Define a dog.", "response": "A dog is an animal."},
        {"id": "t0.94", "system_prompt": "", "question": "long " * 300, "response": "This is long indeed."},
        {"id": "cot.95", "system_prompt": "", "question": "Quote “this” – fine?", "response": "Yes – it is “fine” here."},
    ]
    return rows


@pytest.fixture(scope="module")
def processed(tmp_path_factory):
    root = tmp_path_factory.mktemp("orca")
    raw = pd.DataFrame(raw_rows())
    raw.to_parquet(root / "tiny.parquet")
    tokdir = make_tokenizer(root / "tok", list(raw.question) + list(raw.response) + [GOOD_SYS, BAD_SYS],
                            vocab_size=500)
    opts = ProcessOptions(io_token_limit=200, n_samples=16, calibration_size=4)
    return process_parquet(root / "tiny.parquet", tokdir, root / "out", opts), ModelTokenizer.from_folder(tokdir)


def test_filters_follow_the_reference(processed):
    res, _ = processed
    full = load_processed(res.full)
    ids = set(full["id"])
    assert "flan.90" not in ids          # non-English
    assert "cot.91" not in ids           # output shorter than 3 tokens ("<s>", "A")
    assert "niv.92" not in ids           # bad system prompt, niv
    assert "flan.93" in ids              # bad system prompt is only dropped for niv/t0
    assert "t0.94" not in ids            # input over io_token_limit
    assert "cot.95" in ids               # unicode quotes and dashes are allowed
    assert not any(i.startswith("niv.") and s == "" for i, s in zip(full["id"], full["system_prompt"]))
    assert res.rows_raw == 38 and res.rows_filtered == len(full)


def test_prompt_and_tokens(processed):
    res, tok = processed
    full = load_processed(res.full).set_index("id")
    row = full.loc["cot.1"]
    assert row.input == f"<s>[INST] <<SYS>>\n{GOOD_SYS}\n<</SYS>>\n\n{row.question} [/INST]"
    assert list(row.tok_input) == tok.encode(row.input) + [RESPONSE_INIT_TOKEN]
    assert list(row.tok_output) == tok.encode(row.output)
    assert full.loc["cot.0"].input == f"<s>[INST] {full.loc['cot.0'].question} [/INST]"
    assert row.origin == "cot"


def test_sampling_is_equal_per_origin_and_seeded(processed):
    res, _ = processed
    full, sampled = load_processed(res.full), load_processed(res.sampled, expect_rows=16)
    assert sampled.origin.value_counts().to_dict() == {"cot": 4, "flan": 4, "niv": 4, "t0": 4}
    expect = pd.concat([g.reset_index(drop=True).sample(n=4, random_state=1337)
                        for _, g in full.groupby("origin")])
    assert list(sampled["id"]) == list(expect["id"])
    calib = load_processed(res.calibration, expect_rows=4)
    assert list(calib["id"]) == list(sampled.sample(n=4, random_state=12345)["id"])
    assert res.sampled.name == "open_orca_gpt4_tokenized_llama.sampled_16.pkl"


def test_not_enough_rows_and_wrong_file(tmp_path, processed):
    raw = pd.DataFrame(raw_rows())
    raw.to_parquet(tmp_path / "r.parquet")
    tokdir = processed[1].folder
    with pytest.raises(DatasetError, match="usable rows, 100 are needed"):
        process_parquet(tmp_path / "r.parquet", tokdir, tmp_path / "o", ProcessOptions(n_samples=400))
    raw.drop(columns=["response"]).to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(DatasetError, match=r"lack \['response'\]"):
        process_parquet(tmp_path / "bad.parquet", tokdir, tmp_path / "o")


def test_is_english():
    assert is_english("plain ascii – “quoted”")
    assert not is_english("café")


def test_cli_reports_paths_and_errors(tmp_path, processed, capsys):
    from mlperf_llm.datasets.openorca import main

    pd.DataFrame(raw_rows()).to_parquet(tmp_path / "r.parquet")
    tokdir = processed[1].folder
    args = ["--dataset_pq_path", str(tmp_path / "r.parquet"), "--model_dir", str(tokdir),
            "--export_dir", str(tmp_path / "o"), "--seqlen_limit", "200"]
    assert main(args + ["--num_total_samples", "8", "--calibration_subset_size", "2"]) == 0
    assert "sampled_8.pkl" in capsys.readouterr().out
    assert main(args) == 1 and "usable rows" in capsys.readouterr().out
