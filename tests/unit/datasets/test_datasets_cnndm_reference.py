"""The embedded summarisation set's reference answers and numbers (cnndm_reference), made here with
a stand-in model (fake_generator.py), and the generation loop both embedded sets share (greedy)."""
import hashlib
import json

import pytest
from fake_generator import echo_generator
from tiny_tokenizer import make_tokenizer

from mlperf_llm.accuracy.summarization import score_summaries
from mlperf_llm.accuracy.targets import embedded_targets
from mlperf_llm.benchmarks import get_benchmark
from mlperf_llm.datasets import cnndm, cnndm_embedded as emb, cnndm_reference as ref, embedded, embedded_reference
from mlperf_llm.datasets.greedy import Prompt, greedy_answers, read_jsonl
from mlperf_llm.datasets.schema import DatasetError
from mlperf_llm.datasets.tokenizer import ModelTokenizer


@pytest.fixture(autouse=True)
def _score_in_this_process(monkeypatch):
    """One scoring worker: the unit test stays in this process (the worker pool: tests/integration/accuracy)."""
    from mlperf_llm.accuracy import scoring
    monkeypatch.setattr(scoring, "default_workers", lambda: 1)


@pytest.fixture(scope="module")
def tokdir(tmp_path_factory):
    stories = emb.load_stories()
    texts = [cnndm.PROMPT_TEMPLATE] + [s.article for s in stories[:40]] + [s.reference for s in stories[:40]]
    return make_tokenizer(tmp_path_factory.mktemp("tok"), texts)


@pytest.fixture(scope="module")
def eos(tokdir):
    return ModelTokenizer.from_folder(tokdir).backend.token_to_id("<|im_end|>")


def test_greedy_batches_are_length_sorted_left_padded_and_cut_after_eos():
    gen, batches = echo_generator(eos=0, start=0, limit=4)
    prompts = [Prompt("a", [1, 2, 3, 4, 5]), Prompt("b", [6, 7]), Prompt("c", [8, 9, 10])]
    answers = greedy_answers(prompts, gen, lambda ids: "-".join(map(str, ids)), batch_size=2)
    # b and c (the shortest) together, b left-padded with EOS and masked; then a alone
    assert batches == [([[0, 6, 7], [8, 9, 10]], [[0, 1, 1], [1, 1, 1]]), ([[1, 2, 3, 4, 5]], [[1, 1, 1, 1, 1]])]
    # in the prompts' order; b's and a's answers keep their EOS; c ran out of prompt (no EOS)
    assert answers == [{"id": "a", "n_tokens": 3, "token_ids": [1, 2, 0], "text": "1-2-0"},
                       {"id": "b", "n_tokens": 3, "token_ids": [6, 7, 0], "text": "6-7-0"},
                       {"id": "c", "n_tokens": 3, "token_ids": [8, 9, 10], "text": "8-9-10"}]


@pytest.mark.parametrize("split", emb.SPLITS)
def test_generate_writes_each_storys_answer_and_the_provenance(tokdir, eos, tmp_path, split):
    gen, batches = echo_generator(eos)
    record = ref.generate(tokdir, split, generator=gen, out_dir=tmp_path)
    stories = emb.select(emb.load_stories(), split)
    answers = read_jsonl(tmp_path / "reference_answers.jsonl")
    assert [a["id"] for a in answers] == [s.id for s in stories] and len(answers) == {"validation": 300, "edge": 112}[split]
    tok = ModelTokenizer.from_folder(tokdir)
    for a, s in zip(answers, stories):
        assert a["n_tokens"] == len(a["token_ids"]) >= 1
        assert a["text"] == tok.decode(a["token_ids"]) and a["text"] in cnndm.prompt(s.article)   # its own story
    bench = get_benchmark(ref.SPLIT_BENCHMARK[split])
    assert record["settings"] == {"do_sample": False, "max_new_tokens": bench.max_new_tokens, "min_new_tokens": 1,
                                  "batch_size": 16, "torch_threads": 1, "dtype": "float32", "device": "cpu",
                                  "eos_token_id": eos}
    assert bench.max_new_tokens == 128 and all(len(ids) <= 16 for ids, _ in batches)
    assert (record["split"], record["benchmark"], record["samples"], record["versions"]) == \
        (split, bench.name, len(stories), {"fake": "echo"})
    assert record["ids_sha256"] == hashlib.sha256(",".join(s.id for s in stories).encode()).hexdigest()
    assert record["tokenizer_sha256"] == tok.fingerprint() and record["tokenizer_parity_with_transformers"]
    assert record["generated_tokens"] == sum(a["n_tokens"] for a in answers) and "metrics" not in record
    assert json.loads((tmp_path / "reference.json").read_text()) == record


@pytest.mark.parametrize("split", emb.SPLITS)
def test_score_adds_the_metrics_the_targets_read(tokdir, eos, tmp_path, split):
    ref.generate(tokdir, split, generator=echo_generator(eos)[0], out_dir=tmp_path)
    reference = ref.score(split, tmp_path)
    stories = emb.select(emb.load_stories(), split)
    answers = read_jsonl(tmp_path / "reference_answers.jsonl")
    direct = score_summaries(predictions=[a["text"] for a in answers], references=[s.reference for s in stories])
    m = reference["metrics"]
    assert {k: m[k] for k in ("rouge1", "rouge2", "rougeL", "rougeLsum", "gen_len", "gen_num")} == \
        {k: getattr(direct, k) for k in ("rouge1", "rouge2", "rougeL", "rougeLsum", "gen_len", "gen_num")}
    assert reference["samples"] == m["gen_num"] == len(stories)
    capped = sum(1 for a in answers if a["token_ids"][-1] != eos)
    assert m["capped"] == capped and 0 < capped < len(stories)       # the stand-in stops every other answer
    assert m["gen_tok_len"] == sum(a["n_tokens"] for a in answers)
    assert json.loads((tmp_path / "reference.json").read_text()) == reference
    # accuracy.targets reads them: the whole split, and a test-mode run of 10 rows (GEN_LEN scaled)
    model = ref.SPLIT_BENCHMARK[split]
    whole = embedded_targets(model, str(tmp_path / "reference.json"), rows_scored=len(stories))
    assert whole.reference == {"ROUGE1": m["rouge1"], "ROUGE2": m["rouge2"], "ROUGEL": m["rougeL"],
                               "ROUGELSUM": m["rougeLsum"], "GEN_LEN": m["gen_len"]}
    ten = embedded_targets(model, str(tmp_path / "reference.json"), rows_scored=10)
    assert ten.reference["GEN_LEN"] == pytest.approx(m["gen_len"] * 10 / len(stories))


def test_score_refuses_missing_answers_and_answers_of_another_split(tokdir, eos, tmp_path):
    with pytest.raises(DatasetError, match="run `generate --split edge` first"):
        ref.score("edge", tmp_path)
    ref.generate(tokdir, "validation", generator=echo_generator(eos)[0], out_dir=tmp_path)
    with pytest.raises(DatasetError, match="does not answer the edge split's 112 stories in order"):
        ref.score("edge", tmp_path)
    assert ref.main(["score", "--split", "edge", "--out-dir", str(tmp_path / "none")]) == 2


def test_each_split_has_its_own_folder_in_the_package():
    assert emb.reference_file("validation") == emb.EMBEDDED_DIR / "validation" / "reference.json"
    assert emb.reference_file("edge") == emb.EMBEDDED_DIR / "edge" / "reference.json"
    with pytest.raises(DatasetError, match="split 'test' is unknown"):
        emb.reference_file("test")


def test_the_openorca_set_generates_with_the_same_loop(tmp_path):
    samples = embedded.load_samples()
    tokdir = make_tokenizer(tmp_path / "tok", [s.question for s in samples] + [s.output for s in samples])
    eos = ModelTokenizer.from_folder(tokdir).backend.token_to_id("<|im_end|>")
    record = embedded_reference.generate(tokdir, limit=20, out=tmp_path / "answers.jsonl",
                                         generator=echo_generator(eos)[0])
    answers = read_jsonl(tmp_path / "answers.jsonl")
    assert [a["id"] for a in answers] == [s.id for s in samples[:20]]
    assert record["samples"] == 20 and record["settings"]["max_new_tokens"] == embedded_reference.MAX_NEW_TOKENS
    assert record["samples_sha256"] == hashlib.sha256(embedded.SAMPLES_FILE.read_bytes()).hexdigest()


@pytest.mark.parametrize("split", emb.SPLITS)
def test_the_committed_reference_recomputes_from_its_answers(split):
    path = emb.reference_file(split)
    assert path.is_file(), f"{path} is missing: the embedded summarisation set's reference (docs/datasets.md)"
    reference = json.loads(path.read_text())
    answers = read_jsonl(path.parent / "reference_answers.jsonl")
    stories = emb.select(emb.load_stories(), split)
    assert [a["id"] for a in answers] == [s.id for s in stories], "the stories changed: regenerate the answers"
    assert reference["articles_sha256"] == hashlib.sha256(emb.ARTICLES_FILE.read_bytes()).hexdigest()
    assert reference["settings"]["max_new_tokens"] == get_benchmark(ref.SPLIT_BENCHMARK[split]).max_new_tokens
    direct = score_summaries(predictions=[a["text"] for a in answers], references=[s.reference for s in stories])
    assert reference["metrics"]["rouge1"] == direct.rouge1 and reference["metrics"]["gen_len"] == direct.gen_len
    assert reference["samples"] == len(stories)
