"""The embedded summarisation set is exactly what its generator makes from its templates."""
import pytest

from mlperf_llm.datasets import cnndm_stories as gen

pytest.importorskip("yaml")


def test_the_committed_articles_are_the_generators_output():
    expected = gen.render(gen.generate(gen.load_templates()))
    assert gen.ARTICLES_FILE.read_text(encoding="utf-8") == expected, \
        "articles.jsonl is stale: run `PYTHONPATH=automation python -m mlperf_llm.datasets.cnndm_stories`"


def test_the_draw_is_a_fixed_function_of_its_seed():
    a, b = gen.Draw("7/0"), gen.Draw("7/0")
    assert [a.below(1000) for _ in range(5)] == [b.below(1000) for _ in range(5)]
    assert gen.Draw("x").ordered_sample(list("abcdef"), 6) == list("abcdef")
    picked = gen.Draw("y").ordered_sample(list("abcdef"), 3)
    assert len(set(picked)) == 3 and picked == sorted(picked)


KIND = {"kind": "k", "topic": "t", "slots": {"town": "town", "n": "num 10 20 5"},
        "lead": [{"text": "{town} has {n} parks and {n} ponds, all of them open to everyone every day of the year.",
                  "highlight": "{town} has {n} parks."}],
        "body": [{"text": "Each park has benches.", "highlight": "Parks have benches."}],
        "close": [{"text": "The mayor is pleased."}]}
POOLS = {"town": ["Ollerby", "Norrow"], "first": ["Anna"], "last": ["Verlo"]}


def test_slots_fill_every_sentence_and_highlights_follow_kept_sentences():
    article, highlights = gen.expand(KIND, POOLS, gen.Draw("0/0"))
    town = article.split()[0]
    assert town in POOLS["town"] and highlights[0].startswith(town)
    n = int(article.split()[2])
    assert n in (10, 15, 20) and f"{n} parks" in highlights[0]
    assert highlights[1] == "Parks have benches."


def test_a_slot_the_kind_does_not_define_is_named():
    bad = {**KIND, "close": [{"text": "Said {mayor}."}]}
    with pytest.raises(gen.TemplateError, match=r"kind 'k'.*names 'mayor'.*add it under slots"):
        gen.expand(bad, POOLS, gen.Draw("0/0"))
    with pytest.raises(gen.TemplateError, match=r"slot 'n': spec 'many 1 2'"):
        gen.expand({**KIND, "slots": {"n": "many 1 2"}}, POOLS, gen.Draw("0/0"))
