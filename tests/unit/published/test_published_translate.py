"""The Neural Magic result's recorded cm4mlops command translated into this tool's one command
(mlperf_llm.published.translate): every input kept, replaced or named as not reproduced, with why."""
from pathlib import Path

from mlperf_llm.published.reader import read_published
from mlperf_llm.published.translate import DROP, KEEP, REPLACE, render_table, translate

NM = Path(__file__).resolve().parents[3].parent / "shared" / "published-results" / "nm-v4.1-fp8"


def test_the_neural_magic_command_translates_input_by_input():
    (test,) = read_published(NM).tests
    cm = next(c for c in test.commands if c.kind == "cm")
    t = translate(cm)
    rows = {r[0]: r for r in t.rows}
    assert t.request["tags"] == "run-mlperf,inference,_full,_r4.1,_all-scenarios"
    assert t.request["model"] == "llama2-70b-99" and t.request["server_target_qps"] == "5"
    assert t.request["vllm_model_name"] == "nm-testing/Llama-2-70b-chat-hf-FP8"
    assert rows["--api_server"][2] == REPLACE and "api_server" not in t.request
    assert rows["--device"][2] == REPLACE and "device" not in t.request    # cpu was the harness's, not the server's
    assert rows["--rerun"][2] == DROP and "keyed on what each step depends on" in rows["--rerun"][3]
    assert rows["--adr.mlperf-implementation.tags"][2] == DROP
    assert "neuralmagic/inference" in rows["--adr.mlperf-implementation.tags"][1]
    assert rows["tag _r4.1"][2] == KEEP
    assert t.argv[:4] == ["cm", "run", "script", "--tags=run-mlperf,inference,_full,_r4.1,_all-scenarios"]
    table = render_table(t)
    assert table.splitlines()[0] == "| input | value | here | why |" and "| `--rerun` | `yes` | not reproduced |" in table


def test_unknown_inputs_and_variations_are_named_not_dropped_silently():
    from mlperf_llm.published.commands import Command
    t = translate(Command("cm", "cm run script --tags=run-mlperf,inference,_mixtral,_r5.0_default --gpu_name=h100 "
                                "--env.CM_X=1"))
    rows = {r[0]: r for r in t.rows}
    assert rows["tag _mixtral"][2] == DROP and rows["--gpu_name"][3] == "an input this tool does not know"
    assert rows["--env.CM_X"][2] == DROP and t.request["tags"].endswith("_r5.0")
