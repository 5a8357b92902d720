"""The model families (which repository a selection means, the pinned revision, the R2 copy), held
against the benchmark table and the steps' manifests."""
import os

import pytest
import yaml

from mlperf_llm.benchmarks import BENCHMARKS
from mlperf_llm.models.errors import ModelError
from mlperf_llm.models.families import DEEPSEEK_R1, FAMILIES, GPT_OSS, LLAMA2, LLAMA3, family_of
from mlperf_llm.models.step import LOCAL_PREFIX

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def manifest(step: str) -> dict:
    with open(os.path.join(ROOT, "script", step, "_cm.yaml")) as f:
        return yaml.safe_load(f)


RUNNABLE = [b for b in BENCHMARKS.values() if not b.runnable]     # a benchmark not run yet may lack its step


def test_a_benchmark_not_run_yet_says_its_model_step_is_missing():
    for b in BENCHMARKS.values():
        if b.runnable:
            assert "model step" in b.runnable, b.name


@pytest.mark.parametrize("bench", RUNNABLE, ids=[b.name for b in RUNNABLE])
def test_each_benchmarks_model_step_is_a_family_whose_reference_is_the_tables(bench):
    wanted = set(bench.model_tags.split(","))
    steps = [f for f in FAMILIES.values() if wanted <= set(manifest(f.step)["tags"])]
    assert len(steps) == 1, f"{bench.model_tags} matches {[f.step for f in steps]}"
    family = steps[0]
    assert family.repos[family.default] == bench.hf_model
    env = manifest(family.step)["default_env"]
    assert (env["CM_ML_MODEL_SIZE"], env["CM_ML_MODEL_PRECISION"]) == family.default


@pytest.mark.parametrize("family", FAMILIES.values(), ids=list(FAMILIES))
def test_manifests_recheck_a_given_folder_and_output_the_familys_path(family):
    m = manifest(family.step)
    assert m["alias"] == family.step
    assert m["cache_recheck_env"] == [LOCAL_PREFIX + "*"]
    assert family.path_key in m["new_env_keys"] and "CM_ML_MODEL_PATH" in m["new_env_keys"]
    assert m["default_env"]["CM_ML_MODEL_R2_URI"].endswith(".uri")


def test_llama2_selections_and_messages():
    assert LLAMA2.repo("7b", "fp8") == "neuralmagic/Llama-2-7b-chat-hf-FP8"
    with pytest.raises(ModelError, match=r"no known Llama-2 checkpoint for size '7b' with precision 'gptq'; "
                                         r"known variants: _70b, _7b, _70b,_fp8, _70b,_gptq, _7b,_fp8;"):
        LLAMA2.repo("7b", "gptq")
    LLAMA2.check_r2("70b", "fp16")
    with pytest.raises(ModelError, match=r"_r2: MLCommons publishes only the 70B fp16 Llama-2 checkpoint; "
                                         r"drop _7b/_fp8/_gptq or use the hub route \(_hf\)"):
        LLAMA2.check_r2("7b", "fp16")
    assert LLAMA2.revision("meta-llama/Llama-2-70b-chat-hf") == "main"


def test_llama3_is_pinned_to_the_references_commit_for_its_own_repository_only():
    repo = LLAMA3.repo("8b", "bf16")
    assert repo == "meta-llama/Llama-3.1-8B-Instruct"
    assert LLAMA3.revision(repo) == "be673f326cab4cd22ccfef76109faf68e41aa5f1"
    assert LLAMA3.revision(repo, "main") == "main"
    assert LLAMA3.revision("acme/Other-8B") == "main"
    with pytest.raises(ModelError, match=r"no known Llama-3.1 checkpoint for size '70b'.*known variants: _8b;"):
        LLAMA3.repo("70b", "bf16")
    LLAMA3.check_r2("8b", "bf16")


def test_gpt_oss_is_pinned_to_the_revision_the_benchmark_table_names():
    bench = BENCHMARKS["gpt-oss-120b"]
    repo = GPT_OSS.repo("120b", "mxfp4")
    assert repo == bench.hf_model
    assert GPT_OSS.revision(repo) == bench.model_revision and len(bench.model_revision) == 40
    assert GPT_OSS.revision(repo, "main") == "main"
    GPT_OSS.check_r2("120b", "mxfp4")


def test_deepseek_r1_is_pinned_to_the_revision_the_benchmark_table_names():
    bench = BENCHMARKS["deepseek-r1"]
    repo = DEEPSEEK_R1.repo("671b", "fp8")
    assert repo == bench.hf_model == "deepseek-ai/DeepSeek-R1"
    assert DEEPSEEK_R1.revision(repo) == bench.model_revision == "56d4cbbb4d29f4355bab4b9a39ccb717a14ad5ad"
    DEEPSEEK_R1.check_r2("671b", "fp8")
    assert family_of("get-ml-model-deepseek-r1") is DEEPSEEK_R1


def test_an_unknown_step_names_the_known_ones():
    assert family_of("get-ml-model-llama3") is LLAMA3
    with pytest.raises(ModelError, match="'get-ml-model-x' is not a model step of families.py; known: "
                                         "get-ml-model-llama2, get-ml-model-llama3, get-ml-model-gpt-oss"):
        family_of("get-ml-model-x")
