"""get_cnndm without the engine or a network: a file you have, the embedded set, the row checks, the
reference numbers' note, and the facts it shares with the benchmark table."""
import json

import pytest
from tiny_tokenizer import make_tokenizer

from mlperf_llm.benchmarks import BENCHMARKS
from mlperf_llm.datasets import cnndm, cnndm_embedded as emb, get_cnndm
from mlperf_llm.datasets.get_cnndm import CnndmRequest, get_cnndm as get
from mlperf_llm.datasets.schema import DatasetError


def fake_rows(n):
    return [cnndm.SummaryRow(input=f"article {i}", output=f"summary {i}", tok_input=(1, i + 2)) for i in range(n)]


@pytest.fixture(scope="module")
def edge_file(tmp_path_factory):
    return cnndm.write_rows(fake_rows(cnndm.EDGE_ROWS), tmp_path_factory.mktemp("d") / cnndm.EDGE_FILE)


@pytest.fixture(scope="module")
def tokdir(tmp_path_factory):
    texts = [cnndm.PROMPT_TEMPLATE] + [s.article for s in emb.load_stories()[:40]]
    return make_tokenizer(tmp_path_factory.mktemp("tok"), texts)


def test_splits_agree_with_the_benchmark_table():
    # the table names the step's tags; the step's splits hold the same row counts and generation length
    by_tags = {b.dataset_tags: b for b in BENCHMARKS.values() if "cnndm" in b.dataset_tags}
    assert set(by_tags) == {"get,dataset,cnndm", "get,dataset,cnndm,_edge"}
    for tags, split in (("get,dataset,cnndm", "validation"), ("get,dataset,cnndm,_edge", "edge")):
        assert get_cnndm.SPLITS[split].rows == by_tags[tags].dataset_rows
        assert get_cnndm.MAX_NEW_TOKENS == by_tags[tags].max_new_tokens
    assert get_cnndm.SPLITS["edge"].file == "sample_cnn_eval_5000.json"
    assert get_cnndm.SPLITS["validation"].uri.endswith("/llama3-1-8b-cnn-eval.uri")


def test_a_user_file_is_checked_and_used_in_place(edge_file, tmp_path):
    res = get(CnndmRequest(split="edge", dataset_path=str(edge_file), out_dir=str(tmp_path)))
    assert (res.path, res.rows, res.split, res.max_new_tokens) == (edge_file.resolve(), 5000, "edge", 128)
    assert res.source == f"user file {edge_file}" and res.reference_file is None and res.notes == ()
    assert list(tmp_path.iterdir()) == []     # never copied


def test_a_user_file_of_the_other_split_says_which_variation_fits(edge_file, tmp_path):
    with pytest.raises(DatasetError) as e:
        get(CnndmRequest(split="validation", dataset_path=str(edge_file), out_dir=str(tmp_path)))
    assert str(e.value) == (f"{edge_file} has 5000 rows, but split 'validation' has 13368; that is the edge "
                            "split's count: run with _edge, or pass cnn_eval.json.")


def test_a_user_file_of_another_count_or_layout_is_refused(tmp_path):
    short = cnndm.write_rows(fake_rows(7), tmp_path / "short.json")
    with pytest.raises(DatasetError, match=r"short.json has 7 rows, but split 'edge' has 5000; the file is "
                                           r"incomplete .* pass sample_cnn_eval_5000.json"):
        get(CnndmRequest(split="edge", dataset_path=str(short)))
    raw = tmp_path / "raw.json"
    raw.write_text(json.dumps([{"article": "a", "highlights": "h"}]))
    with pytest.raises(DatasetError, match=r"raw.json: row 0 .* lacks key\(s\) \['instruction', 'input', "
                                           r"'tok_input', 'output'\]"):
        get(CnndmRequest(split="edge", dataset_path=str(raw)))
    with pytest.raises(DatasetError, match=r"nope.json does not exist; pass the cnn_eval.json"):
        get(CnndmRequest(dataset_path=str(tmp_path / "nope.json")))


def test_an_unknown_split_is_named():
    with pytest.raises(DatasetError, match=r"split 'calibration' is unknown; use one of \['validation', 'edge'\]"):
        get(CnndmRequest(split="calibration"))


def test_embedded_needs_a_tokenizer(tmp_path):
    with pytest.raises(DatasetError, match="--tokenizer_path=DIR or let the get,ml-model,smollm2"):
        get(CnndmRequest(embedded=True, out_dir=str(tmp_path)))


@pytest.mark.parametrize("split,rows", [("validation", 300), ("edge", 112)])
def test_embedded_splits_are_built_and_checked(tokdir, tmp_path, split, rows):
    res = get(CnndmRequest(split=split, embedded=True, tokenizer_dir=str(tokdir), out_dir=str(tmp_path)))
    assert res.rows == rows and res.path.parent == tmp_path
    assert res.path.name == emb.output_name(split, rows)
    assert res.tokenizer_file == tokdir.resolve() / "tokenizer.json"
    built = cnndm.read_rows(res.path, expect_rows=rows)
    assert [r.input for r in built] == [s.article for s in emb.select(emb.load_stories(), split)]


def test_embedded_reference_file_or_a_note_when_it_is_missing(tokdir, tmp_path, monkeypatch):
    ref = tmp_path / "reference_edge.json"
    monkeypatch.setitem(emb.REFERENCE_FILES, "edge", ref)
    req = CnndmRequest(split="edge", embedded=True, tokenizer_dir=str(tokdir), out_dir=str(tmp_path / "o"))
    res = get(req)
    assert res.reference_file is None and len(res.notes) == 1
    assert f"reference numbers for split 'edge' are not made yet ({ref} is missing)" in res.notes[0]
    ref.write_text("{}")
    res = get(req)
    assert res.reference_file == ref and res.notes == ()


def test_a_user_file_with_embedded_is_checked_against_the_embedded_split(tokdir, tmp_path):
    built = get(CnndmRequest(split="validation", embedded=True, tokenizer_dir=str(tokdir), out_dir=str(tmp_path)))
    res = get(CnndmRequest(split="validation", embedded=True, dataset_path=str(built.path)))
    assert res.rows == 300
    with pytest.raises(DatasetError, match="has 300 rows, but split 'edge' has 112; that is the validation "
                                           "split's count: run with _validation, or pass "
                                           "embedded_sample_cnn_eval_112.json"):
        get(CnndmRequest(split="edge", embedded=True, dataset_path=str(built.path)))


def test_reference_file_names_a_file_per_split():
    assert emb.reference_file("validation") == emb.EMBEDDED_DIR / "validation" / "reference.json"
    assert emb.reference_file("edge") == emb.EMBEDDED_DIR / "edge" / "reference.json"
    from mlperf_llm.datasets import cnndm_reference
    assert cnndm_reference.split_dir("edge") == emb.reference_file("edge").parent   # the answers go beside it
    with pytest.raises(DatasetError, match="split 'x' is unknown"):
        emb.reference_file("x")
