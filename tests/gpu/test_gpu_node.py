"""On a node with an NVIDIA GPU: what detect-gpu reads for the systems JSON agrees with what torch
sees; install-vllm would choose the CUDA build; the harness's transformers backend runs a tiny
Llama (random weights, built here) on the GPU in bfloat16 through LoadGen to a VALID Offline result."""
import json
import sys

import pytest

from mlperf_llm.harness.driver import HarnessRequest, run_all
from mlperf_llm.sysinfo.envmap import gpu_env
from mlperf_llm.sysinfo.gpu import NVIDIA_QUERY_ARGS
from mlperf_llm.sysinfo.probe import SystemFacts, detect_accelerators, run_command
from mlperf_llm.vllm import install

pytestmark = pytest.mark.gpu
MODEL = "llama3.1-8b"
DEVICE = "cuda"
ROWS, MAX_TOKENS = 8, 16


def detected():
    facts = SystemFacts()
    detect_accelerators(run_command, facts)
    return facts


def test_detect_gpu_reads_what_torch_sees(check_out):
    import torch
    for name, argv in {"nvidia-smi-query.csv": ["nvidia-smi", *NVIDIA_QUERY_ARGS], "nvidia-smi.txt": ["nvidia-smi"],
                       "nvidia-smi-topo.txt": ["nvidia-smi", "topo", "-m"]}.items():
        (check_out / name).write_text(run_command(argv).stdout)      # the raw outputs: a fixture to keep
    facts = detected()
    acc = facts.accelerators
    assert acc is not None and acc.vendor == "nvidia", [str(g) for g in facts.gaps]
    seen = [(torch.cuda.get_device_name(i), torch.cuda.get_device_properties(i).total_memory / 2**20)
            for i in range(torch.cuda.device_count())]
    assert [g.name for g in acc.gpus] == [name for name, _ in seen]
    for g, (_, mib) in zip(acc.gpus, seen):
        assert abs(g.memory_total_mib - mib) <= 0.02 * mib, (g.memory_total_mib, mib)
    env = gpu_env(acc)
    assert env["CM_GPU_COUNT"] == str(len(seen)) and env["CM_GPU_VENDOR"] == "nvidia"
    (check_out / "parsed.json").write_text(json.dumps({"env": env, "torch": seen}, indent=1))


def test_install_vllm_would_choose_the_cuda_build():
    count = detected().accelerators.count
    install.check_device("cuda", count)                          # no refusal on this node
    pkg = install.choose_package(count)                          # no --device: the GPU decides
    assert pkg.name == install.GPU_PACKAGE and install.CPU_TORCH not in pkg.extra_pip_args
    assert install.choose_package(count, device="cpu").name == install.CPU_PACKAGE


ARTICLES = [(f"The town of Vell{i} opened its {i + 2} new bridges on Monday. Officials said the work took "
             f"{i + 3} years and cost less than planned.", f"Vell{i} opened {i + 2} bridges.") for i in range(ROWS)]


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    """A Llama with random weights (seeded) and a tokenizer trained here (no weights to carry), and
    a data set in llama3.1-8b's cnn_eval.json layout tokenized by it (JSON: the node needs no pandas)."""
    import torch
    from mlperf_llm.datasets.cnndm import build_row, prompt, write_rows
    from mlperf_llm.datasets.tokenizer import ModelTokenizer
    from tiny_tokenizer import make_tokenizer
    from transformers import LlamaConfig, LlamaForCausalLM

    folder = tmp_path_factory.mktemp("tiny-llama")
    make_tokenizer(folder, [prompt(a) for a, _ in ARTICLES], llama_like=True)
    tok = ModelTokenizer.from_folder(folder)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                         bos_token_id=tok.backend.token_to_id("<s>"), eos_token_id=tok.backend.token_to_id("</s>"))
    LlamaForCausalLM(config).save_pretrained(folder)
    dataset = write_rows([build_row(a, h, tok) for a, h in ARTICLES], folder / "cnn_eval.json")
    return folder, str(dataset)


def test_transformers_backend_on_cuda_in_bfloat16_gives_a_valid_offline_result(tiny_llama, tmp_path):
    folder, dataset = tiny_llama
    req = HarnessRequest(model=MODEL, round="6.1", results_dir=str(tmp_path / "results"), dataset_path=dataset,
                         scenarios=("Offline",), backend="transformers", model_path=str(folder), device=DEVICE,
                         dtype="bfloat16", total_sample_count=ROWS, test_query_count=ROWS, max_tokens=MAX_TOKENS,
                         batch_size=ROWS, python=sys.executable, progress=False)
    outs = {(o.scenario, o.mode): o for o in run_all(req)}
    perf, acc = outs[("Offline", "performance")], outs[("Offline", "accuracy")]
    assert perf.verdict == "VALID", perf.reasons
    assert acc.verdict != "FAILED", acc.reasons
    records = json.loads((tmp_path / "results" / MODEL / "Offline" / "accuracy" / "mlperf_log_accuracy.json").read_text())
    assert sorted(r["qsl_idx"] for r in records) == list(range(ROWS))
    assert all(1 <= len(bytes.fromhex(r["data"])) // 4 <= MAX_TOKENS for r in records)
