"""The replay plan of a published folder (mlperf_llm.published.plan), on the two real folders in
../shared/published-results, for a machine without accelerators (this one, CI) and one with them."""
from pathlib import Path

from mlperf_llm.published.plan import HostFacts, plan_published, render
from mlperf_llm.published.reader import read_published

PUBLISHED = Path(__file__).resolve().parents[3].parent / "shared" / "published-results"
HERE = HostFacts()


def test_vultr_plan_names_round_targets_system_engine_replicas_and_what_is_missing():
    result = read_published(PUBLISHED / "vultr-v5.1-mi325x")
    plans = {p.test.scenario: p for p in plan_published(result, HERE)}
    text = render(result, list(plans.values()))
    for scenario, qps in (("Offline", 114), ("Server", 103), ("Interactive", 59)):
        p = plans[scenario]
        assert (p.engine, p.accelerators, p.replicas) == ("vLLM", 8, 8)        # one replica per GPU
        assert p.server["tensor_parallel_size"] == 1 and p.server["quantization"] == "fp8"
        assert p.server_source.endswith(f"{scenario.lower()}_mi325x.yaml (the engine YAML of its code folder)")
        assert "round v5.1" in text and f"llama2-70b-99 {scenario}" in text and f"target {qps} QPS" in text
    assert "Vultr (closed)" in text and "8x AMD Instinct MI325X 256GB HBM3e" in text
    assert "8 replica(s) of 1 device(s); tensor_parallel_size=1" in text and "quantization=fp8" in text
    assert "published on a vLLM build of its own (vLLM 0.6.5.dev964+mlperf50" in text
    assert "the weights are a path on the submitter's machine (/model/llama2-70b-chat-hf/fp8_quantized)" in text
    assert "missing here: 8x AMD Instinct MI325X 256GB HBM3e: this machine has no accelerators" in text
    assert "made by: no CM or MLC command" in text


def test_neural_magic_plan_names_the_served_model_its_parallelism_and_the_gpus():
    result = read_published(PUBLISHED / "nm-v4.1-fp8")
    (p,) = plan_published(result, HERE)
    text = render(result, [p])
    assert p.model == "nm-testing/Llama-2-70b-chat-hf-FP8" and p.server["tensor_parallel_size"] == 4
    assert p.accelerators == 4 and p.replicas == 1 and p.engine == "vLLM"
    assert "round v4.1" in text and "llama2-70b-99 Server" in text and "target 5 QPS" in text
    assert "4x NVIDIA H100-SXM-80GB" in text or "4x NVIDIA H100" in text, text
    assert "weights (measurement JSON): fp8" in text and "made by: CM" in text
    assert "missing here: 4x NVIDIA H100" in text
    with_gpus = plan_published(result, HostFacts(4, "NVIDIA H100 80GB HBM3"))[0]
    assert with_gpus.missing == []
