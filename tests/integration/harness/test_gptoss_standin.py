"""gpt-oss-120b through the harness and its scorer against a stand-in server that answers in harmony
channels: the performance tests read the performance set and the accuracy tests the accuracy set, the
run's sampling seed is recorded, and the accuracy log is marked as the reference marks it (the final
channel, repeat weights, programs run in the sandbox: a hostile one killed and marked wrong)."""
import json
from pathlib import Path

from mlperf_llm.accuracy.reasoning_eval import evaluate_log
from mlperf_llm.datasets import gptoss
from mlperf_llm.harness.driver import HarnessRequest, run_all
from standin import StandinConfig, StandinProcess, toytok
from standin.server import prompt_key

HARMONY = "<|channel|>analysis<|message|>{think}<|end|><|start|>assistant<|channel|>final<|message|>{final}<|return|>"
ADD = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
HOSTILE = "```python\nimport os\nwhile True:\n    os.fork()\n```"
# (source, ground truth, the answer's final channel, right?)
ROWS = [
    ("aime25", "42", "\\boxed{42}", True),
    ("aime25", "42", "\\boxed{41}", False),
    ("gpqa_diamond", "C", "Answer: C", True),
    ("gpqa_diamond", "C", "Answer: A", False),
    ("gpqa_diamond", "B", "B", True),
    ("livecodebench_v6", "add", ADD, True),
    ("livecodebench_v6", "fork", HOSTILE, False),
]


class ToyTokenizer:
    def decode(self, ids, skip_special_tokens=True):
        return toytok.decode(list(ids), skip_special_tokens)


def prompt(i: int, kind: str) -> list[int]:
    return toytok.encode(f"<|start|>system<|message|>Reasoning: {'high' if kind == 'acc' else 'low'}<|end|>"
                         f"<|start|>user<|message|>{kind} question {i}<|end|><|start|>assistant")


def test_gpt_oss_runs_both_sets_and_its_answers_are_marked_as_the_reference_marks_them(tmp_path):
    acc = [gptoss.Prompt(tuple(prompt(i, "acc")), src, truth) for i, (src, truth, _, _) in enumerate(ROWS)]
    perf = [gptoss.Prompt(tuple(prompt(i, "perf"))) for i in range(5)]
    acc_path = gptoss.write_set(acc, tmp_path / "acc_eval_inputs.parquet")
    perf_path = gptoss.write_set(perf, tmp_path / "perf_eval_ref.parquet")
    tests = gptoss.write_tests([
        gptoss.Problem("add", (gptoss.Test("1 2\n", "3\n"), gptoss.Test("5 7\n", "12\n"))),
        gptoss.Problem("fork", (gptoss.Test("1\n", "1\n"),))], tmp_path / gptoss.TESTS_FILE)
    responses = {prompt_key(list(p.input_tokens)): toytok.encode(HARMONY.format(think=f"step {i}", final=final),
                                                                  add_special_tokens=False) + [toytok.EOS_ID]
                 for i, (p, (_, _, final, _)) in enumerate(zip(acc, ROWS))}
    with StandinProcess(StandinConfig(output_tokens=6, responses=responses, max_model_len=33000)) as sp:
        outs = run_all(HarnessRequest(
            model="gpt-oss-120b", round="6.1", results_dir=str(tmp_path / "results"), dataset_path=str(acc_path),
            performance_dataset_path=str(perf_path), api_servers=(sp.url,), api_model_name="standin-model",
            scenarios=("Offline",), modes=("performance", "accuracy"), test_query_count=len(perf),
            accuracy_sample_count=0, sampling_seed=11, progress=False))
    assert [(o.mode, o.verdict) for o in outs] == [("performance", "VALID"), ("accuracy", "VALID")], \
        [o.reasons for o in outs]
    perf_run, acc_run = (Path(o.directory) for o in outs)
    # each test read its own set: the performance test loaded the 5 performance rows, the accuracy test all 7
    assert "performance_sample_count_override = 5" in (perf_run / "user.conf").read_text()
    assert "gpt-oss-120b.*.accuracy_sample_count_override = 7" in (acc_run / "user.conf").read_text()
    log = acc_run / "mlperf_log_accuracy.json"
    assert sorted({e["qsl_idx"] for e in json.loads(log.read_text())}) == list(range(len(ROWS)))
    config = json.loads((acc_run / "harness_config.json").read_text())
    assert (config["sampling_seed"], config["greedy"], config["performance_dataset_path"]) == (11, False, str(perf_path))

    result = evaluate_log(str(log), str(acc_path), "toy", tokenizer=ToyTokenizer(), tests=str(tests), workers=2)
    marks = {m.index: m for m in result.marked}
    assert [marks[i].right for i in range(len(ROWS))] == [right for *_, right in ROWS]
    assert marks[6].read == "program" and marks[6].why          # the fork bomb: stopped, and wrong
    # AIME 1 of 2 / 8, GPQA 2 of 3 / 5, LiveCodeBench 1 of 2 / 3, over (2/8 + 3/5 + 2/3)
    want = 100 * (1 / 8 + 2 / 5 + 1 / 3) / (2 / 8 + 3 / 5 + 2 / 3)
    assert result.exact_match == round(want, 3)
    assert result.reference_dict()["exact_match"] == result.exact_match
    assert result.by_source == {"aime25": [1, 2], "gpqa_diamond": [2, 3], "livecodebench_v6": [1, 2]}


def test_a_server_whose_context_cannot_hold_a_prompt_and_its_cap_is_refused_before_the_run(tmp_path):
    perf = gptoss.write_set([gptoss.Prompt(tuple(prompt(i, "perf"))) for i in range(3)], tmp_path / "perf.parquet")
    with StandinProcess(StandinConfig(output_tokens=4, max_model_len=4096)) as sp:
        out, = run_all(HarnessRequest(
            model="gpt-oss-120b", round="6.1", results_dir=str(tmp_path / "results"), dataset_path=str(perf),
            performance_dataset_path=str(perf), api_servers=(sp.url,), api_model_name="standin-model",
            scenarios=("Offline",), modes=("performance",), test_query_count=3, progress=False))
    assert out.verdict == "FAILED"
    assert any("the 10240 new tokens a performance test allows needs" in r and "--max_model_len=" in r
               for r in out.reasons), out.reasons
