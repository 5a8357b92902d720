from mlperf_llm.sysinfo.cpu import parse_lscpu
from mlperf_llm.sysinfo.envmap import gpu_env, host_env
from mlperf_llm.sysinfo.sutenv import software_from_env, sut_inputs_from_env
from mlperf_llm.sysinfo.gpu import AcceleratorInfo, nvidia_info
from mlperf_llm.sysinfo.memory import MemoryInfo
from mlperf_llm.sysinfo.probe import SystemFacts


def test_host_env_names_follow_cm(fixture_text):
    facts = SystemFacts(cpu=parse_lscpu(fixture_text("xeon_w7_2495x_2x4090", "lscpu.txt")),
                        memory=MemoryInfo(202021597184))
    env = host_env(facts)
    assert env["CM_HOST_CPU_PHYSICAL_CORES_PER_SOCKET"] == "24" and env["CM_HOST_CPU_SOCKETS"] == "1"
    assert env["CM_HOST_CPU_L1D_CACHE_SIZE"] == "1.1 MiB (24 instances)"
    assert env["CM_HOST_CPU_MAX_MHZ"] == "4800.0000" and env["CM_HOST_CPU_HAS_AMX"] == "yes"
    assert env["CM_HOST_CPU_TOTAL_PHYSICAL_CORES"] == "24" and env["CM_HOST_MEMORY_CAPACITY"] == "202G"
    assert all(isinstance(v, str) for v in env.values())


def test_gpu_env(fixture_text):
    assert gpu_env(None) == {"CM_GPU_VENDOR": "unknown", "CM_GPU_COUNT": ""}
    assert gpu_env(AcceleratorInfo.none()) == {"CM_GPU_VENDOR": "none", "CM_GPU_COUNT": "0"}
    acc = nvidia_info(fixture_text("h100_8x", "nvidia-smi-query.csv"), fixture_text("h100_8x", "nvidia-smi.txt"))
    env = gpu_env(acc)
    assert (env["CM_GPU_COUNT"], env["CM_GPU_MEMORY_CAPACITY"], env["CM_GPU_FREQUENCY_MHZ"]) == ("8", "80 GB", "1980")
    assert env["CM_GPU_CUDA_VERSION"] == "12.4" and env["CM_GPU_HOST_INTERCONNECT"] == "PCIe Gen5 x16"


def test_inputs_and_software_from_env():
    inputs = sut_inputs_from_env({"CM_HOST_SYSTEM_NAME": "gpu-box-01.lab", "CM_MLPERF_SUBMITTER": "Acme",
                                  "CM_MLPERF_SYSTEM_COOLING": ""})
    assert inputs.hw_name == "gpu_box_01" and inputs.submitter == "Acme" and inputs.cooling is None
    assert sut_inputs_from_env({"CM_HW_NAME": "my-8xH100"}).hw_name == "my-8xH100"
    sw = software_from_env({"CM_VLLM_VERSION": "0.5.2", "CM_TORCH_VERSION": "2.3.1", "CM_LOADGEN_VERSION": "4.1.30",
                            "CM_PYTHON_VERSION": "3.10.12", "CM_MLPERF_OTHER_SOFTWARE": "nm-vllm 0.5.2; ; LLVM 15"})
    assert sw.framework_text() == "vLLM 0.5.2"
    assert sw.other_text(None) == "Python: 3.10.12, PyTorch 2.3.1, mlcommons-loadgen 4.1.30, nm-vllm 0.5.2, LLVM 15"


def test_backend_and_category_from_the_submission_step():
    sw = software_from_env({"CM_MLPERF_BACKEND": "transformers", "CM_TRANSFORMERS_VERSION": "5.17.0",
                            "CM_VLLM_VERSION": "0.32.0"})
    assert sw.framework_text() == "transformers 5.17.0"
    assert software_from_env({"CM_VLLM_VERSION": "0.32.0"}).framework_text() == "vLLM 0.32.0"
    assert sut_inputs_from_env({"CM_MLPERF_SUBMISSION_CATEGORY": "edge"}).system_type == "edge"
