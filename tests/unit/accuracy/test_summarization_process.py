"""The accuracy step on a summarisation benchmark (every benchmark whose length metric is GEN_LEN):
the benchmark's accuracy spec picks the pipeline; a LoadGen accuracy log written here with the
token ids of a real tokenizer (the golden fixture's) is decoded, scored against the highlights of a
cnn_eval.json-layout data set, judged, and written as accuracy.txt, accuracy.json and the typed
verdict."""
import json
import re
from pathlib import Path

import pytest

from mlperf_llm import outcomes
from mlperf_llm.accuracy.evaluate import EvaluationError, evaluate
from mlperf_llm.accuracy.log import encode_ids
from mlperf_llm.accuracy.pipelines import PIPELINES, REASONING, pipeline_for
from mlperf_llm.accuracy.reasoning_eval import RULES, evaluate_log
from mlperf_llm.accuracy.process import (AccuracyRequest, accuracy_verdict, process_accuracy, target_models)
from mlperf_llm.accuracy.report import sha256_file
from mlperf_llm.accuracy.summarization import SummaryScores, evaluate_summaries, score_summaries
from mlperf_llm.accuracy.targets import mlperf_targets
from mlperf_llm.benchmarks import BENCHMARKS
from mlperf_llm.datasets import cnndm
from mlperf_llm.datasets.tokenizer import ModelTokenizer

from conftest import GOLDEN
from inference_sources import checker_tables
from news_summaries import HIGHLIGHTS, PREDICTIONS

TOKENIZER = str(GOLDEN / "tokenizer")
SUMMARISATION = sorted(b.name for b in BENCHMARKS.values() if b.accuracy.length_metric == "GEN_LEN")


@pytest.fixture(autouse=True)
def _score_in_this_process(monkeypatch):
    """One scoring worker: the unit test stays in this process (the worker pool: tests/integration/accuracy)."""
    from mlperf_llm.accuracy import scoring
    monkeypatch.setattr(scoring, "default_workers", lambda: 1)


def write_dataset(path: Path, highlights) -> str:
    rows = [cnndm.SummaryRow(input=f"Article {i}.", output=h, tok_input=(5, 6, i)) for i, h in enumerate(highlights)]
    return str(cnndm.write_rows(rows, path))


def write_log(path: Path, answers: dict, order) -> str:
    """A LoadGen accuracy log: one entry per qsl_idx in `order` (a repeat: LoadGen's second
    response for the row, which the evaluation ignores), `data` = the answer's int32 token ids."""
    seen, entries = set(), []
    for k, i in enumerate(order):
        ids = answers[i] if i not in seen else [7, 7, 7]
        seen.add(i)
        entries.append({"seq_id": k, "qsl_idx": i, "data": encode_ids(ids), "token_count": len(ids)})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(entries))
    return str(path)


@pytest.fixture
def run(tmp_path):
    """An accuracy folder with the log of the 8 news predictions (in another order, row 2 answered
    twice) and the data set of their highlights."""
    tok = ModelTokenizer.from_folder(TOKENIZER)
    ids = {i: tok.encode(p) + [tok.backend.token_to_id("</s>")] for i, p in enumerate(PREDICTIONS)}
    folder = tmp_path / "results" / "llama3.1-8b" / "Offline" / "accuracy"
    write_log(folder / "mlperf_log_accuracy.json", ids, [3, 0, 2, 1, 2, 7, 4, 6, 5])
    return {"dir": str(folder), "dataset": write_dataset(tmp_path / "cnn_eval.json", HIGHLIGHTS), "ids": ids}


def test_the_accuracy_spec_picks_the_pipeline():
    for b in BENCHMARKS.values():
        if "exact_match" in b.accuracy.metrics:      # gpt-oss-120b, deepseek-r1: marked by their own rules
            p = pipeline_for(b.name)
            assert (p.name, p.takes_tests) == (REASONING.name, True)
            assert p.score_log.func is evaluate_log and p.score_log.keywords["rules"] is RULES[b.name]
            continue
        assert pipeline_for(b.name) is PIPELINES[b.accuracy.length_metric]
    assert {b for b in BENCHMARKS if "exact_match" in BENCHMARKS[b].accuracy.metrics} == set(RULES)
    assert SUMMARISATION and {pipeline_for(m).score_log for m in SUMMARISATION} == {evaluate_summaries}
    assert pipeline_for("llama2-70b-interactive-99").score_log is evaluate
    with pytest.raises(EvaluationError, match="not a benchmark this tool knows"):
        pipeline_for("gpt-j")


def test_target_models_are_the_same_data_set_at_each_accuracy_level():
    assert target_models("llama2-70b-99") == ["llama2-70b-99", "llama2-70b-99.9"]
    assert target_models("llama2-70b-interactive-99.9") == ["llama2-70b-interactive-99.9", "llama2-70b-interactive-99"]
    for model in SUMMARISATION:     # one accuracy level, and the edge set is another data set
        assert target_models(model) == [model]


@pytest.mark.parametrize("model", SUMMARISATION)
def test_the_log_is_decoded_and_scored_against_the_highlights(run, model):
    [out] = process_accuracy(AccuracyRequest([run["dir"]], run["dataset"], TOKENIZER, model))
    r = out.result
    assert isinstance(r, SummaryScores) and r.gen_num == 8
    # the predictions themselves (special tokens skipped, the repeat of row 2 ignored), scored directly
    direct = score_summaries(predictions=PREDICTIONS, references=HIGHLIGHTS)
    assert r.reference_dict() == direct.reference_dict() == {
        "rouge1": "61.8829", "rouge2": "42.3958", "rougeL": "52.6521", "rougeLsum": "55.5798",
        "gen_len": 1235, "gen_num": 8}
    assert "from " + TOKENIZER in r.tokenizer and set(r.seconds) == {"read", "detokenize", "split_and_score"}
    # judged against the checker's targets with GEN_LEN scaled to the 8 rows scored
    [verdict] = out.verdicts
    assert verdict.model == model and verdict.note == mlperf_targets(model, rows_scored=8).note
    assert f"this test scored 8: x 8/{BENCHMARKS[model].dataset_rows}" in verdict.note
    assert [m.metric for m in verdict.metrics] == ["ROUGE1", "ROUGE2", "ROUGEL", "ROUGELSUM", "GEN_LEN"]
    # 1,235 characters for 8 rows is far under the reference's ~610 a row: GEN_LEN fails, ROUGE passes
    assert [m.passed for m in verdict.metrics] == [True, True, True, True, False] and not out.passed


def test_accuracy_txt_is_read_by_the_checker_and_accuracy_json_carries_the_verdict(run):
    [out] = process_accuracy(AccuracyRequest([run["dir"]], run["dataset"], TOKENIZER, "llama3.1-8b"))
    folder = Path(run["dir"])
    patterns = checker_tables("6.1")["ACC_PATTERN"]
    found = {}
    for line in (folder / "accuracy.txt").read_text().splitlines():
        for metric in ("ROUGE1", "ROUGE2", "ROUGEL", "ROUGELSUM", "GEN_LEN"):
            m = re.match(patterns[metric], line)
            if m:
                found[metric] = float(m.group(1))
    assert found == out.result.checker_values()
    log_hash = sha256_file(str(folder / "mlperf_log_accuracy.json"))
    assert f"hash={log_hash}" in (folder / "accuracy.txt").read_text().splitlines()
    doc = json.loads((folder / "accuracy.json").read_text())
    assert doc["result"]["rougeLsum"] == 55.5798 and doc["result"]["gen_len"] == 1235
    assert doc["model"] == "llama3.1-8b" and doc["accuracy_log_sha256"] == log_hash
    assert doc["verdicts"][0]["note"].startswith("GEN_LEN reference 8167644 is for all 13368 rows")


def test_the_typed_verdict_shows_rougelsum_and_gen_len(run):
    [out] = process_accuracy(AccuracyRequest([run["dir"]], run["dataset"], TOKENIZER, "llama3.1-8b"))
    v = accuracy_verdict(out)
    assert (v.scenario, v.samples, v.rouge1, v.rougeLsum, v.gen_len, v.tokens_per_sample) == \
        ("Offline", 8, 61.8829, 55.5798, 1235, None)
    assert v.targets[0].note == out.verdicts[0].note and not v.passed
    assert outcomes.from_state({outcomes.ACCURACY: outcomes.to_state([v])}, outcomes.ACCURACY) == [v]


def test_a_log_of_another_data_set_or_a_data_set_of_another_layout_is_named(run, tmp_path):
    small = write_dataset(tmp_path / "small.json", HIGHLIGHTS[:4])
    with pytest.raises(EvaluationError, match=r"qsl_idx \[7, 4, 6, 5\] outside the data set .*small.json \(4 rows\)"):
        process_accuracy(AccuracyRequest([run["dir"]], small, TOKENIZER, "llama3.1-8b"))
    pickle = tmp_path / "openorca.pkl"
    pickle.write_bytes(b"\x80\x04not json")
    with pytest.raises(EvaluationError, match="summarisation data set of the run cannot be read: .*openorca.pkl"):
        process_accuracy(AccuracyRequest([run["dir"]], str(pickle), TOKENIZER, "llama3.1-8b-edge"))


def step_hooks():
    import importlib.util
    path = Path(__file__).resolve().parents[3] / "script" / "process-mlperf-accuracy" / "customize.py"
    spec = importlib.util.spec_from_file_location("process_accuracy_hooks", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_step_scores_by_the_model_and_refuses_another_data_sets_variation(run):
    env = {"CM_MLPERF_MODEL": "llama3.1-8b", "CM_MLPERF_ACCURACY_RESULTS_DIR": run["dir"],
           "CM_DATASET_PREPROCESSED_PATH": run["dataset"], "CM_ML_MODEL_PATH": TOKENIZER,
           "CM_MLPERF_ACCURACY_DTYPE": "int32", "CM_MLPERF_ACCURACY_SENTENCE_SPLITTER": "auto",
           "CM_MLPERF_ACCURACY_TARGETS": "mlperf"}
    refused = step_hooks().preprocess({"env": dict(env, CM_MLPERF_ACCURACY_DATASET="open-orca"), "state": {}})
    assert refused == {"return": 1, "error": "llama3.1-8b is scored on its cnndm data set, not open-orca: "
                                             "use the variation _cnndm or none"}
    state = {}
    for asked in ("", "cnndm"):
        assert step_hooks().preprocess({"env": dict(env, CM_MLPERF_ACCURACY_DATASET=asked), "state": state}) == {"return": 0}
    [v] = outcomes.from_state(state, outcomes.ACCURACY)
    assert (v.samples, v.rougeLsum, v.gen_len) == (8, 55.5798, 1235)


def test_the_cli_evaluates_a_summarisation_benchmark(run, tmp_path, capsys):
    from mlperf_llm.accuracy.cli import main
    rc = main(["evaluate", "--model=llama3.1-8b-edge", "--accuracy-log", str(Path(run["dir"]) / "mlperf_log_accuracy.json"),
               "--dataset", run["dataset"], "--tokenizer", TOKENIZER, "--output-dir", str(tmp_path), "--workers", "1"])
    out = capsys.readouterr().out
    assert rc == 0 and "'rougeLsum': '55.5798', 'gen_len': 1235, 'gen_num': 8" in out
    assert "llama3.1-8b-edge: FAIL" in out and "this test scored 8: x 8/5000" in out
    assert json.loads((tmp_path / "accuracy.json").read_text())["accuracy_log"].endswith("mlperf_log_accuracy.json")
