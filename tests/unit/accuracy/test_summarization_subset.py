"""An embedded summarisation run is judged by the embedded set's reference: the whole split's numbers
(reference.json) for a run that scored every row; for a test-mode run that scored n rows, the
reference answers of those same n rows, scored the same way. The reference here is made by
cnndm_reference with a stand-in model (tests/fixtures/datasets/fake_generator.py) and the golden
fixture's tokenizer, which also decodes the run's log."""
import json
import sys

import pytest

from mlperf_llm.accuracy.evaluate import EvaluationError
from mlperf_llm.accuracy.log import encode_ids
from mlperf_llm.accuracy.process import AccuracyRequest, process_accuracy
from mlperf_llm.accuracy.summarization import score_summaries
from mlperf_llm.datasets import cnndm, cnndm_embedded as emb, cnndm_reference as ref
from mlperf_llm.datasets.greedy import read_jsonl

from conftest import FIXTURES, GOLDEN

sys.path.insert(0, str(FIXTURES.parent / "datasets"))
from fake_generator import echo_generator  # noqa: E402

TOKENIZER = str(GOLDEN / "tokenizer")
EOS = 2   # the golden tokenizer's </s>


@pytest.fixture(autouse=True)
def _score_in_this_process(monkeypatch):
    """One scoring worker: the unit test stays in this process (the worker pool: tests/integration/accuracy)."""
    from mlperf_llm.accuracy import scoring
    monkeypatch.setattr(scoring, "default_workers", lambda: 1)


@pytest.fixture(params=emb.SPLITS)
def embedded(request, tmp_path):
    """The split built with the golden tokenizer, its reference answers and numbers, and a runner
    that writes an accuracy log of given answers and scores it."""
    split = request.param
    meta = emb.build_embedded(TOKENIZER, tmp_path / "data", split)
    ref.generate(TOKENIZER, split, generator=echo_generator(EOS)[0], out_dir=tmp_path / "reference")
    reference = ref.score(split, tmp_path / "reference")
    answers = read_jsonl(tmp_path / "reference" / "reference_answers.jsonl")
    model = ref.SPLIT_BENCHMARK[split]

    def run(rows, answer_of=lambda i: i, dataset=meta["path"]):
        folder = tmp_path / "results" / model / "Offline" / "accuracy"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "mlperf_log_accuracy.json").write_text(json.dumps(
            [{"seq_id": k, "qsl_idx": i, "data": encode_ids(answers[answer_of(i)]["token_ids"])}
             for k, i in enumerate(rows)]))
        [out] = process_accuracy(AccuracyRequest([str(folder)], dataset, TOKENIZER, model,
                                                 embedded_reference=str(tmp_path / "reference" / "reference.json")))
        return out

    stories = emb.select(emb.load_stories(), split)
    return {"run": run, "reference": reference, "answers": answers, "stories": stories, "model": model}


def test_a_test_mode_run_is_judged_by_the_reference_answers_of_its_own_rows(embedded):
    rows = [4, 0, 9, 2, 7, 1, 3, 8, 6, 5, 4]         # 10 rows in LoadGen's order; a repeat counts once
    out = embedded["run"](rows)
    [verdict] = out.verdicts
    assert verdict.label == "Required accuracy (embedded reference answers of the same 10 samples x0.99)"
    same = score_summaries(predictions=[embedded["answers"][i]["text"] for i in range(10)],
                           references=[embedded["stories"][i].reference for i in range(10)])
    # the run answered exactly the reference answers: its numbers are theirs, and it passes
    assert out.result.checker_values() == same.checker_values()
    assert {m.metric: m.minimum for m in verdict.metrics if m.maximum is None} == pytest.approx(
        {k: v * 0.99 for k, v in same.checker_values().items() if k != "GEN_LEN"})
    gen_len = verdict.metrics[-1]
    assert (gen_len.metric, gen_len.minimum, gen_len.maximum) == ("GEN_LEN", same.gen_len * 0.9, same.gen_len * 1.1)
    assert verdict.note == "" and verdict.passed          # GEN_LEN is these rows' own: nothing to scale
    # answers of other rows (each row gets its neighbour's summary) miss the ROUGE targets
    wrong = embedded["run"](rows, answer_of=lambda i: i + 1)
    assert not wrong.passed and not [m for m in wrong.verdicts[0].metrics if m.metric == "ROUGE1"][0].passed


def test_a_run_of_every_row_is_judged_by_the_recorded_numbers(embedded):
    n = len(embedded["stories"])
    out = embedded["run"](list(range(n)))
    [verdict] = out.verdicts
    assert verdict.label == "Required accuracy (embedded data set reference x0.99)"
    m = embedded["reference"]["metrics"]
    assert out.result.checker_values() == {"ROUGE1": m["rouge1"], "ROUGE2": m["rouge2"], "ROUGEL": m["rougeL"],
                                           "ROUGELSUM": m["rougeLsum"], "GEN_LEN": m["gen_len"]}
    assert verdict.passed and verdict.note == ""


def test_a_data_set_the_answers_were_not_made_for_is_named(embedded, tmp_path):
    rows = [cnndm.SummaryRow(input=f"Another article {i}.", output="A highlight .", tok_input=(5, i)) for i in range(12)]
    other = cnndm.write_rows(rows, tmp_path / "other.json")
    with pytest.raises(EvaluationError, match="not the embedded one the reference answers were made for"):
        embedded["run"](list(range(10)), dataset=str(other))
