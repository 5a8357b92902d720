"""How the embedded summarisation set was made: invented news stories expanded from the templates in
embedded_cnndm/stories.yaml with a fixed draw, written to embedded_cnndm/articles.jsonl.

    PYTHONPATH=automation python -m mlperf_llm.datasets.cnndm_stories           # rewrite articles.jsonl
    PYTHONPATH=automation python -m mlperf_llm.datasets.cnndm_stories --check   # exit 1 if it differs

Story i takes kind i mod K (so topics interleave) and draws its names, numbers, lead, body sentences
and closing line from sha256("i/attempt/n"), the same on every Python. The article is those
sentences in order; its highlights are the highlight lines of the sentences it kept, at most four,
so every highlight restates a fact of its own article. A draw whose article falls outside WORDS
words, keeps fewer than two highlights or repeats an earlier article is drawn again (next attempt).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

STORIES_DIR = Path(__file__).resolve().parent / "embedded_cnndm"
TEMPLATES_FILE = STORIES_DIR / "stories.yaml"
ARTICLES_FILE = STORIES_DIR / "articles.jsonl"
COUNT = 300
WORDS = (60, 200)
HIGHLIGHTS = (2, 4)
ATTEMPTS = 50


class TemplateError(ValueError):
    """stories.yaml names a slot it does not define, or a slot spec this generator does not know."""


class Draw:
    """A reproducible stream of choices: draw n of seed s is sha256("s/n")."""

    def __init__(self, seed: str):
        self.seed, self.n = seed, 0

    def below(self, n: int) -> int:
        self.n += 1
        digest = hashlib.sha256(f"{self.seed}/{self.n}".encode()).digest()
        return int.from_bytes(digest[:8], "big") % n

    def choice(self, seq):
        return seq[self.below(len(seq))]

    def ordered_sample(self, seq, k: int) -> list:
        """k distinct items of seq, in seq's order."""
        left = list(range(len(seq)))
        picked = sorted(left.pop(self.below(len(left))) for _ in range(k))
        return [seq[i] for i in picked]


@dataclass(frozen=True)
class Person:
    first: str
    last: str

    def __str__(self) -> str:
        return f"{self.first} {self.last}"


def draw_slots(kind: dict, pools: dict, d: Draw) -> dict:
    """One value per slot: a pool name (distinct values within a story), `person`, `num LO HI [STEP]`
    (an int, LO plus a multiple of STEP), `dec LO HI` (one decimal place, a string) or a list."""
    values, used = {}, set()

    def fresh(pool: str):
        options = [v for v in pools[pool] if v not in used]
        value = d.choice(options)
        used.add(value)
        return value

    for name, spec in kind["slots"].items():
        if isinstance(spec, list):
            values[name] = d.choice(spec)
            continue
        word, *args = str(spec).split()
        if word in pools:
            values[name] = fresh(word)
        elif word == "person":
            values[name] = Person(fresh("first"), fresh("last"))
        elif word == "num" and len(args) in (2, 3):
            lo, hi, step = int(args[0]), int(args[1]), int(args[2]) if len(args) == 3 else 1
            values[name] = lo + step * d.below((hi - lo) // step + 1)
        elif word == "dec" and len(args) == 2:
            lo, hi = round(float(args[0]) * 10), round(float(args[1]) * 10)
            values[name] = f"{(lo + d.below(hi - lo + 1)) / 10:.1f}"
        else:
            raise TemplateError(f"{TEMPLATES_FILE.name}: kind {kind['kind']!r}, slot {name!r}: spec {spec!r} is "
                                f"not a pool ({', '.join(pools)}), person, 'num LO HI [STEP]', 'dec LO HI' or a "
                                "list.")
    return values


def fill(kind: dict, text: str, values: dict) -> str:
    try:
        return " ".join(text.format_map(values).split())
    except (KeyError, AttributeError) as e:
        raise TemplateError(f"{TEMPLATES_FILE.name}: kind {kind['kind']!r}: the text {text[:40]!r}... names "
                            f"{e}, which its slots do not define; add it under slots.") from e


def expand(kind: dict, pools: dict, d: Draw) -> tuple[str, list[str]]:
    """One article and its highlights from one kind."""
    values = draw_slots(kind, pools, d)
    lo, hi = kind.get("pick", [len(kind["body"])] * 2)
    body = d.ordered_sample(kind["body"], lo + d.below(hi - lo + 1))
    sentences = [d.choice(kind["lead"]), *body, d.choice(kind["close"])]
    article = " ".join(fill(kind, s["text"], values) for s in sentences)
    highlights = [fill(kind, s["highlight"], values) for s in sentences if s.get("highlight")]
    return article, highlights[:HIGHLIGHTS[1]]


def acceptable(article: str, highlights: list[str], seen: set) -> bool:
    return WORDS[0] <= len(article.split()) <= WORDS[1] and len(highlights) >= HIGHLIGHTS[0] \
        and article not in seen


def generate(templates: dict, count: int = COUNT) -> list[dict]:
    kinds, pools = templates["stories"], templates["pools"]
    rows, seen = [], set()
    for i in range(count):
        kind = kinds[i % len(kinds)]
        for attempt in range(ATTEMPTS):
            article, highlights = expand(kind, pools, Draw(f"{i}/{attempt}"))
            if acceptable(article, highlights, seen):
                break
        else:
            raise TemplateError(f"{TEMPLATES_FILE.name}: kind {kind['kind']!r} gave no article of {WORDS[0]}-"
                                f"{WORDS[1]} words with {HIGHLIGHTS[0]}+ highlights in {ATTEMPTS} draws; "
                                "widen its pick range or add highlight lines.")
        seen.add(article)
        rows.append({"id": f"news.{i + 1:03d}", "topic": kind["topic"], "article": article,
                     "highlights": highlights})
    return rows


def load_templates(path=TEMPLATES_FILE) -> dict:
    import yaml

    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


def render(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with the committed articles.jsonl only")
    text = render(generate(load_templates()))
    if ap.parse_args(argv).check:
        same = ARTICLES_FILE.is_file() and ARTICLES_FILE.read_text(encoding="utf-8") == text
        print(f"{ARTICLES_FILE}: {'matches' if same else 'differs from'} the generator's output")
        return 0 if same else 1
    from ..files import write_atomic

    write_atomic(str(ARTICLES_FILE), text)
    print(f"wrote {ARTICLES_FILE} ({text.count(chr(10))} stories)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
