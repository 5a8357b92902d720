"""The embedded summarisation set: the package data, its fixed edge subset, and its build."""
import hashlib
import json
import re

import pytest
from tiny_tokenizer import make_tokenizer

from mlperf_llm.benchmarks import get_benchmark
from mlperf_llm.datasets import cnndm, cnndm_embedded as emb
from mlperf_llm.datasets.schema import DatasetError

# sha256 of the edge ids joined by commas: the edge subset is a fixed choice, as the real one is
EDGE_IDS_SHA256 = "74437f9c3ba2c61bf168aa7d18a3a2af51337fb052445f3e64b1a8b85a2d8036"


@pytest.fixture(scope="module")
def stories():
    return emb.load_stories()


@pytest.fixture(scope="module")
def tokdir(tmp_path_factory, stories):
    texts = [cnndm.PROMPT_TEMPLATE] + [s.article for s in stories[:40]]
    return make_tokenizer(tmp_path_factory.mktemp("tok"), texts)


def test_the_package_data_loads_as_a_varied_set(stories):
    assert len(stories) == 300
    assert [s.id for s in stories] == [f"news.{i:03d}" for i in range(1, 301)]
    topics = {s.topic for s in stories}
    assert topics == {"council", "weather", "sport", "science", "business", "transport", "culture", "community"}
    assert all(len([s for s in stories if s.topic == t]) >= 30 for t in topics)
    assert all(s.article.isascii() and all(h.isascii() for h in s.highlights) for s in stories)


def test_every_article_is_news_sized_with_two_to_four_highlights(stories):
    for s in stories:
        assert 60 <= len(s.article.split()) <= 200, s.id
        assert 2 <= len(s.highlights) <= 4, s.id
        assert all(h[0].isupper() or h[0].isdigit() for h in s.highlights), s.id
        assert s.reference == "\n".join(s.highlights) and "\n" not in s.article


def test_no_article_or_highlight_list_repeats(stories):
    assert len({s.article for s in stories}) == len(stories)
    assert len({s.highlights for s in stories}) == len(stories)


def test_highlights_restate_facts_of_their_own_article(stories):
    """Every number and capitalised name in a highlight appears in its article: the highlights
    summarise the story they belong to, not another one."""
    for s in stories:
        for h in s.highlights:
            for token in re.findall(r"\d[\d,.]*\d|\d|(?<!^)\b[A-Z][a-z]+", h):
                assert token.rstrip(".,") in s.article, (s.id, h, token)


def test_the_edge_subset_is_fixed_and_scaled_like_the_real_one(stories):
    full, edge = get_benchmark("llama3.1-8b").dataset_rows, get_benchmark("llama3.1-8b-edge").dataset_rows
    assert emb.EDGE_ROWS == round(len(stories) * edge / full) == 112
    chosen = emb.select(stories, "edge")
    assert len(chosen) == emb.EDGE_ROWS
    assert hashlib.sha256(",".join(s.id for s in chosen).encode()).hexdigest() == EDGE_IDS_SHA256
    assert [s.id for s in chosen] == sorted(s.id for s in chosen)  # file order, as the real edge file keeps
    assert {s.topic for s in chosen} == {s.topic for s in stories}


def test_the_edge_choice_depends_on_the_ids_only(stories):
    assert emb.edge_ids(stories) == emb.edge_ids(list(reversed(stories))) == emb.edge_ids(stories[::-1][::-1])
    assert emb.edge_ids(stories, 5) < emb.edge_ids(stories, 6)   # a larger subset keeps the smaller one
    with pytest.raises(DatasetError, match="the set has 300 stories"):
        emb.edge_ids(stories, 301)
    with pytest.raises(DatasetError, match="split 'test' is unknown"):
        emb.select(stories, "test")


@pytest.mark.parametrize("split, rows, name", [("validation", 300, "embedded_cnn_eval.json"),
                                               ("edge", 112, "embedded_sample_cnn_eval_112.json")])
def test_build_writes_the_cnn_eval_layout(tmp_path, tokdir, stories, split, rows, name):
    meta = emb.build_embedded(tokdir, tmp_path, split)
    assert meta["path"] == str(tmp_path / name) and meta["rows"] == rows and meta["split"] == split
    got = cnndm.read_rows(meta["path"], expect_rows=rows)
    by_id = {s.id: s for s in stories}
    first = by_id[meta["ids"][0]]
    assert got[0].input == first.article and got[0].output == "\n".join(first.highlights)
    assert got[0].instruction == cnndm.PROMPT_TEMPLATE
    assert meta["ids"] == [s.id for s in emb.select(stories, split)]
    assert len(meta["tokenizer_sha256"]) == 64 and meta["prompt_format"] == emb.PROMPT_FORMAT
    saved = json.loads((tmp_path / (name + ".meta.json")).read_text())
    assert saved == meta


def test_bad_story_lines_are_located(tmp_path):
    good = {"id": "news.001", "topic": "sport", "article": "A team won.", "highlights": ["Team wins."]}
    p = tmp_path / "a.jsonl"
    p.write_text(json.dumps(good) + "\n" + json.dumps({**good, "article": "Other."}) + "\n")
    with pytest.raises(DatasetError, match=r"a.jsonl:2: duplicate id 'news.001'"):
        emb.load_stories(p)
    p.write_text(json.dumps(good) + "\n" + json.dumps({**good, "id": "news.002"}) + "\n")
    with pytest.raises(DatasetError, match=r"a.jsonl:2: story 'news.002' repeats an earlier article"):
        emb.load_stories(p)
    p.write_text(json.dumps({**good, "highlights": []}) + "\n")
    with pytest.raises(DatasetError, match=r"a.jsonl:1: story 'news.001' needs a non-empty list of highlight"):
        emb.load_stories(p)
    p.write_text(json.dumps({k: v for k, v in good.items() if k != "article"}) + "\n")
    with pytest.raises(DatasetError, match=r"a.jsonl:1: not a story object"):
        emb.load_stories(p)
    p.write_text("{oops\n")
    with pytest.raises(DatasetError, match=r"a.jsonl:1: not JSON"):
        emb.load_stories(p)
