"""vllm/layout.py: servers, GPUs per server and settings for a benchmark on a node of GPUs, each with
its source; what the user gives wins."""
import re
from dataclasses import replace
from pathlib import Path

import pytest

from mlperf_llm.benchmarks import BENCHMARKS, GpuServing, PublishedLayout
from mlperf_llm.vllm.layout import GPU_DEFAULTS, GpuNode, choose
from mlperf_llm.vllm.replicas import place
from mlperf_llm.vllm.tuning import Machine

H100 = GpuNode(8, 81559 / 1024, "NVIDIA H100 80GB HBM3")
MI300X = GpuNode(8, 196592 / 1024, "AMD Instinct MI300X")
L40S = GpuNode(8, 46068 / 1024, "NVIDIA L40S")


@pytest.mark.parametrize("bench, node, tp, replicas, source", [
    ("llama3.1-8b", H100, 1, 8, "as published: Red Hat v5.1 (closed), 1x H100"),
    ("llama3.1-8b", MI300X, 1, 8, "16.1 GB of weights over 1 GPU(s)"),
    ("llama3.1-8b-edge", L40S, 1, 8, "as published: Red Hat v5.1 (closed), 1x L40S"),
    ("llama2-70b-99.9", H100, 2, 4, "as published: Krai v5.1 (open), 8x H100"),
    ("llama2-70b-99.9", GpuNode(4, 81559 / 1024, "NVIDIA H100 80GB HBM3"), 4, 1, "as published: Neural Magic v4.1"),
    ("llama2-70b-99", GpuNode(8, 143771 / 1024, "NVIDIA H200"), 1, 8, "as published: Krai v5.1 (open), 8x H200"),
    ("llama2-70b-99", MI300X, 1, 8, "server_mi300x.yaml"),
    ("llama2-70b-99", L40S, 4, 2, "70 GB of weights over 4 GPU(s)"),
    ("llama2-70b-99", GpuNode(8, 256, "AMD Instinct MI325X"), 1, 8, "server_mi325x.yaml"),
    ("deepseek-r1", GpuNode(8, 143771 / 1024, "NVIDIA H200"), 8, 1, "the reference implementation's vLLM settings"),
    ("deepseek-r1", GpuNode(8, 294896 / 1024, "AMD Instinct MI355X"), 8, 1, "backend_registry.py: TP 8"),
    ("deepseek-r1", MI300X, 8, 1, "690 GB of weights over 8 GPU(s)"),
])
def test_each_benchmark_gets_its_layout_with_its_source(bench, node, tp, replicas, source):
    chosen = choose(BENCHMARKS[bench], node, {})
    assert (chosen.tensor_parallel_size, chosen.replicas) == (tp, replicas)
    tp_line = chosen.describe().splitlines()[1]
    assert tp_line.startswith(f"  --tensor_parallel_size={tp}: ") and source in tp_line
    assert chosen.env()["CM_VLLM_TENSOR_PARALLEL_SIZE"] == str(tp) and chosen.env()["CM_VLLM_REPLICAS"] == str(replicas)
    # the servers fit the node, each on GPUs of its own
    placed = place(Machine(cpus=(0,), numa_nodes=1, mem_available_bytes=1, flags=frozenset(), gpus=node.count),
                   chosen.replicas, chosen.tensor_parallel_size)
    assert sorted(g for p in placed for g in p.gpus) == list(range(node.count))


def test_deepseek_r1_on_8_h200_gets_the_reference_s_settings_and_expert_parallelism():
    chosen = choose(BENCHMARKS["deepseek-r1"], GpuNode(8, 143771 / 1024, "NVIDIA H200"), {})
    assert (chosen.value("max_num_seqs"), chosen.value("max_model_len")) == (64, 3136 + 20000 + 4)
    assert chosen.value("enable_expert_parallel") is True and chosen.value("gpu_memory_utilization") == 0.90
    assert chosen.env()["CM_VLLM_ENABLE_EXPERT_PARALLEL"] == "yes"
    # 8x H100 cannot hold 690 GB of FP8 weights: planned on the whole node, and said
    assert "need more than 8 GPU(s)" in choose(BENCHMARKS["deepseek-r1"], H100, {}).describe()


def test_published_settings_are_taken_and_the_rest_are_the_gpu_defaults():
    chosen = choose(BENCHMARKS["llama2-70b-99"], MI300X, {})
    assert chosen.value("max_num_seqs") == 650 and chosen.value("enable_chunked_prefill") is False
    assert chosen.env()["CM_VLLM_ENABLE_CHUNKED_PREFILL"] == "no"
    small = choose(BENCHMARKS["llama3.1-8b"], MI300X, {})
    assert {n: small.value(n) for n, _ in GPU_DEFAULTS} == dict(GPU_DEFAULTS)
    assert "Neural Magic's published H100 command" in small.describe().splitlines()[-1]


def test_what_the_user_gives_wins_and_is_left_in_the_env():
    env = {"CM_VLLM_TENSOR_PARALLEL_SIZE": "4", "CM_VLLM_MAX_NUM_SEQS": "64"}
    chosen = choose(BENCHMARKS["llama2-70b-99.9"], H100, env)
    assert (chosen.tensor_parallel_size, chosen.replicas) == (4, 2)
    assert "--tensor_parallel_size=4: as given" in chosen.describe()
    assert "--max_num_seqs=64: as given" in chosen.describe()
    assert "CM_VLLM_TENSOR_PARALLEL_SIZE" not in chosen.env() and "CM_VLLM_MAX_NUM_SEQS" not in chosen.env()
    given = choose(BENCHMARKS["llama3.1-8b"], H100, {"CM_VLLM_REPLICAS": "3"})
    assert given.replicas == 3 and "CM_VLLM_REPLICAS" not in given.env()


def test_pipeline_parallelism_given_counts_in_the_gpus_of_a_server():
    chosen = choose(BENCHMARKS["llama2-70b-99"], H100, {"CM_VLLM_TENSOR_PARALLEL_SIZE": "2",
                                                        "CM_VLLM_PIPELINE_PARALLEL_SIZE": "2"})
    assert chosen.replicas == 2


def test_a_published_layout_larger_than_the_node_falls_back_to_the_weights():
    one = GpuNode(1, 143771 / 1024, "NVIDIA H200")
    assert choose(BENCHMARKS["llama2-70b-99"], one, {}).tensor_parallel_size == 1     # Krai's TP 1 fits
    two = GpuNode(2, 196592 / 1024, "AMD Instinct MI300X")
    assert "server_mi300x.yaml" in choose(BENCHMARKS["llama2-70b-99"], two, {}).describe()
    a6000 = GpuNode(2, 49140 / 1024, "NVIDIA RTX A6000")
    chosen = choose(BENCHMARKS["llama2-70b-99"], a6000, {})
    assert (chosen.tensor_parallel_size, chosen.replicas) == (2, 1)
    assert "70 GB of weights over 2 GPU(s)" not in chosen.describe() and "need more than 2 GPU(s)" in chosen.describe()


def test_weights_larger_than_the_node_span_it_and_say_so():
    bench = BENCHMARKS["llama2-70b-99"]
    huge = replace(bench, gpu=GpuServing("a huge checkpoint", 700.0))
    chosen = choose(huge, GpuNode(8, 80, "NVIDIA H100"), {})
    assert chosen.tensor_parallel_size == 8 and "need more than 8 GPU(s)" in chosen.describe()


def test_a_server_of_no_benchmark_is_sized_by_its_weights_or_spans_the_node():
    assert choose(None, H100, {}, weights_gb=16).tensor_parallel_size == 1
    unknown = choose(None, H100, {})
    assert unknown.tensor_parallel_size == 8 and "weights not known" in unknown.describe()


def test_node_from_detect_gpu_env():
    node = GpuNode.from_env({"CM_GPU_COUNT": "8", "CM_GPU_MEMORY_MIB": "81559", "CM_GPU_NAME": "NVIDIA H100 80GB HBM3"})
    assert node.count == 8 and round(node.memory_gb) == 80
    assert GpuNode.from_env({"CM_GPU_COUNT": "0"}) is None and GpuNode.from_env({"CM_GPU_COUNT": ""}) is None


def test_every_published_layout_names_a_known_accelerator_and_vllm_settings():
    from dataclasses import fields

    from mlperf_llm.sysinfo.gpu import KNOWN_MODELS
    from mlperf_llm.vllm.command import ServeConfig
    names = {f.name for f in fields(ServeConfig)}
    layouts = [p for b in BENCHMARKS.values() if b.gpu for p in b.gpu.published]
    assert layouts
    for p in layouts:
        assert isinstance(p, PublishedLayout) and p.accelerator in KNOWN_MODELS and p.gpus % p.tensor_parallel_size == 0
        assert {k for k, _ in p.settings} <= names and p.source


GPU_DOC = Path(__file__).resolve().parents[3] / "docs" / "gpu.md"
DOC_NODES = {"8x H100 80 GB": H100, "4x H100 80 GB": GpuNode(4, 81559 / 1024, "NVIDIA H100 80GB HBM3"),
             "8x H200 141 GB": GpuNode(8, 143771 / 1024, "NVIDIA H200"), "8x L40S 48 GB": L40S,
             "8x MI300X 192 GB": MI300X, "8x MI325X 256 GB": GpuNode(8, 262144 / 1024, "AMD Instinct MI325X")}
DOC_SOURCES = {"Krai v5.1": "Krai v5.1", "Neural Magic v4.1": "Neural Magic v4.1", "Vultr v5.1": "Vultr v5.1",
               "Red Hat v5.1": "Red Hat v5.1", "Red Hat v6.0": "Red Hat v6.0", "weights": "GB of weights over"}


def test_the_table_in_docs_gpu_is_what_the_code_chooses():
    """docs/gpu.md's table of defaults, cell by cell, against choose() (the first benchmark of a row)."""
    lines = GPU_DOC.read_text().split("## Defaults per benchmark and GPU")[1].splitlines()
    header = next(line for line in lines if line.startswith("| benchmark |"))
    nodes = [c.strip() for c in header.strip("|").split("|")][1:]
    rows = [line for line in lines if line.startswith(("| llama", "| gpt-oss"))]
    assert len(rows) == 3 and set(nodes) == set(DOC_NODES)
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        bench = BENCHMARKS[cells[0].split(",")[0].split(" ")[0]]
        for node, cell in zip(nodes, cells[1:]):
            m = re.fullmatch(r"(\d+) x TP(\d+) \((.+)\)", cell)
            assert m, cell
            chosen = choose(bench, DOC_NODES[node], {})
            assert (chosen.replicas, chosen.tensor_parallel_size) == (int(m[1]), int(m[2])), (bench.name, node)
            assert DOC_SOURCES[m[3]] in chosen.choices[0].source, (bench.name, node, chosen.choices[0].source)


def test_a_cpu_build_serves_on_no_gpu_whatever_the_machine_has():
    from mlperf_llm.vllm import service
    gpus = {"CM_GPU_COUNT": "8", "CM_GPU_MEMORY_MIB": "81559", "CM_GPU_NAME": "NVIDIA H100 80GB HBM3",
            "CM_MLPERF_MODEL": "llama3.1-8b"}
    assert service.served_gpus(gpus) == 8 and service.gpu_layout(gpus).replicas == 8
    for cpu in ({"CM_VLLM_DEVICE": "cpu"}, {"CM_VLLM_BUILD": "cpu"}):
        env = {**gpus, **cpu}
        assert service.served_gpus(env) == 0 and service.machine_is_cpu(env) and service.gpu_layout(env) is None


def test_tune_no_on_gpus_passes_only_what_was_given():
    """--tune=no (docs/vllm.md's published H100 command): no layout fills replicas or settings the
    user left out; one server of the GPUs they named."""
    from mlperf_llm.vllm import service
    gpus = {"CM_GPU_COUNT": "8", "CM_GPU_MEMORY_MIB": "81559", "CM_GPU_NAME": "NVIDIA H100 80GB HBM3",
            "CM_MLPERF_MODEL": "llama2-70b-99", "CM_VLLM_TENSOR_PARALLEL_SIZE": "4"}
    assert service.gpu_layout(gpus).replicas == 2
    assert service.gpu_layout({**gpus, "CM_VLLM_TUNE": "no"}) is None
