"""The cnn_eval.json layout: reading with located errors, the prompt form, building and writing."""
import json

import pytest
from tiny_tokenizer import make_tokenizer

from mlperf_llm.datasets import cnndm
from mlperf_llm.datasets.schema import DatasetError
from mlperf_llm.datasets.tokenizer import ModelTokenizer

ARTICLE = "The {town} council met on Monday. It approved a new park."
TEMPLATE = ("In very brief sentences, summarize the following news article. Only return the summary.\n"
            "Article: {input}\nSummary: ")


def row(**change):
    good = {"instruction": {"llama": TEMPLATE}, "input": ARTICLE, "tok_input": [1, 5, 9],
            "output": "Council approves a park.\nIt met on Monday."}
    good.update(change)
    return {k: v for k, v in good.items() if v is not None}


def write(tmp_path, data, name="cnn_eval.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=4))
    return path


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    return ModelTokenizer.from_folder(make_tokenizer(tmp_path_factory.mktemp("tok"), [TEMPLATE, ARTICLE]))


def test_prompt_is_the_llama31_template_with_the_article():
    assert cnndm.PROMPT_TEMPLATE == TEMPLATE
    assert cnndm.prompt("A dog.") == ("In very brief sentences, summarize the following news article. "
                                      "Only return the summary.\nArticle: A dog.\nSummary: ")
    assert cnndm.prompt(ARTICLE).count("{town}") == 1  # braces in an article stay as they are


def test_a_file_in_the_layout_reads_into_rows(tmp_path):
    rows = cnndm.read_rows(write(tmp_path, [row(), row(input="Second article.", tok_input=[2])]), expect_rows=2)
    assert [r.input for r in rows] == [ARTICLE, "Second article."]
    assert rows[0].tok_input == (1, 5, 9) and rows[0].output.splitlines() == ["Council approves a park.",
                                                                             "It met on Monday."]
    assert rows[0].instruction == TEMPLATE


@pytest.mark.parametrize("data, message", [
    ([row(), row(tok_input=None)], r"cnn_eval.json: row 1 \(0-based: the sample index\) lacks key\(s\) "
                                   r"\['tok_input'\].*MLCommons downloader"),
    ([{"article": "a", "highlights": "b", "id": "x"}], r"row 0 .* lacks key\(s\) \['instruction', 'input', "
                                                       r"'tok_input', 'output'\].*not the raw CNN/DailyMail"),
    ([row(tok_input=[])], r"row 0 .*'tok_input' must be a non-empty list of integer token ids"),
    ([row(tok_input=["1", "2"])], r"'tok_input' must be a non-empty list of integer token ids"),
    ([row(tok_input=[True])], r"'tok_input' must be a non-empty list of integer token ids"),
    ([row(output="  ")], r"row 0 .*'output' must be non-empty text"),
    ([row(instruction={"llama": "Summarize."})], r"instruction must be \{'llama': template\}.*\{input\}"),
    ([["a", "b"]], r"row 0 .* is a JSON list, not an object"),
    ({"rows": []}, r"holds a JSON dict, not a list of rows"),
    ([], r"holds no rows"),
])
def test_layout_errors_name_the_file_the_row_and_the_fix(tmp_path, data, message):
    path = write(tmp_path, data)
    with pytest.raises(DatasetError, match=message) as e:
        cnndm.read_rows(path)
    assert str(path) in str(e.value)


def test_a_truncated_missing_or_short_file_says_so(tmp_path):
    text = json.dumps([row(), row()], indent=4)
    with pytest.raises(DatasetError, match=r"not valid JSON .* line \d+, column \d+.*truncated"):
        cnndm.read_rows(write(tmp_path, text[:len(text) // 2]))
    with pytest.raises(DatasetError, match=r"does not exist; pass the cnn_eval.json"):
        cnndm.read_rows(tmp_path / "absent.json")
    with pytest.raises(DatasetError, match="has 2 rows, expected 13368"):
        cnndm.read_rows(write(tmp_path, text), expect_rows=13368)


def test_a_plain_string_instruction_is_read_as_the_template(tmp_path):
    assert cnndm.read_rows(write(tmp_path, [row(instruction=TEMPLATE)]))[0].instruction == TEMPLATE


def test_build_row_tokenizes_the_prompt_with_special_tokens(tok):
    r = cnndm.build_row(ARTICLE, "Park approved.", tok)
    assert list(r.tok_input) == tok.encode(cnndm.prompt(ARTICLE))
    assert r.tok_input[0] == tok.backend.token_to_id("<s>")   # tokenizer.encode(prompt): the BOS is added
    assert tok.decode(r.tok_input) == cnndm.prompt(ARTICLE)
    assert (r.input, r.output, r.instruction) == (ARTICLE, "Park approved.", TEMPLATE)


def test_written_rows_are_the_layout_and_read_back(tmp_path, tok):
    rows = [cnndm.build_row(ARTICLE, "Park approved.", tok), cnndm.build_row("Other news.", "Other.", tok)]
    path = cnndm.write_rows(rows, tmp_path / "out" / "cnn_eval.json")
    data = json.loads(path.read_text())
    assert [sorted(d) for d in data] == [sorted(cnndm.KEYS)] * 2
    assert data[0]["instruction"] == {"llama": TEMPLATE} and data[1]["input"] == "Other news."
    assert cnndm.read_rows(path, expect_rows=2) == rows
    assert [p.name for p in path.parent.iterdir()] == ["cnn_eval.json"]  # no temporary left behind
    with pytest.raises(DatasetError, match="no rows to write"):
        cnndm.write_rows([], tmp_path / "empty.json")


def test_the_reference_reader_sees_the_same_columns(tmp_path, tok):
    """The MLCommons dataset.py reads the file with pandas.read_json: it must see our rows the same way."""
    pd = pytest.importorskip("pandas")
    rows = [cnndm.build_row(ARTICLE, "Park approved.", tok), cnndm.build_row("Other news.", "Other.", tok)]
    df = pd.read_json(cnndm.write_rows(rows, tmp_path / "cnn_eval.json"))
    assert df.tok_input.tolist() == [list(r.tok_input) for r in rows]
    assert df.output.tolist() == ["Park approved.", "Other."] and df.input.tolist() == [ARTICLE, "Other news."]
