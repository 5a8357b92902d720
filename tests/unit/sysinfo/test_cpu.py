import pytest

from mlperf_llm.sysinfo.cpu import LscpuParseError, parse_lscpu


def test_xeon_w7_2495x(fixture_text):
    cpu = parse_lscpu(fixture_text("xeon_w7_2495x_2x4090", "lscpu.txt"))
    assert cpu.model_name == "Intel(R) Xeon(R) w7-2495X"
    assert (cpu.sockets, cpu.cores_per_socket, cpu.threads_per_core, cpu.logical_cpus) == (1, 24, 2, 48)
    assert cpu.max_mhz == "4800.0000"
    assert cpu.caches_text == ("L1d cache: 1.1 MiB (24 instances), L1i cache: 768 KiB (24 instances), "
                               "L2 cache: 48 MiB (24 instances), L3 cache: 45 MiB (1 instance)")
    assert cpu.numa_nodes == 1
    assert {"amx_bf16", "amx_tile", "amx_int8", "avx512f", "avx512_bf16", "avx512_fp16"} <= set(cpu.key_flags)
    assert "sse2" not in cpu.key_flags
    assert cpu.topology_warning() == ""


def test_epyc_9254_kvm_guest_reports_inconsistent_topology(fixture_text):
    cpu = parse_lscpu(fixture_text("epyc9254_2s_8xl40s", "lscpu.txt"))
    assert cpu.model_name == "AMD EPYC 9254 24-Core Processor"
    assert (cpu.sockets, cpu.cores_per_socket) == (2, 4)
    assert cpu.max_mhz == ""                    # KVM guests print no "CPU max MHz"
    assert cpu.hypervisor == "KVM"
    assert cpu.numa_nodes == 2
    assert "amx_tile" not in cpu.flags and "avx512_bf16" in cpu.key_flags
    assert "2 socket(s) x 4 core(s) x 1 thread(s) = 8, but CPU(s) = 40" in cpu.topology_warning()


def test_this_machine(fixture_text):
    cpu = parse_lscpu(fixture_text("this_machine", "lscpu.txt"))
    assert cpu.model_name == "AMD EPYC" and cpu.logical_cpus == 2 and cpu.sockets == 1
    assert cpu.caches["L3"] == "32 MiB (1 instance)"
    assert "avx512f" in cpu.key_flags


HIERARCHIC = """\
Architecture:             x86_64
CPU(s):                   96
  On-line CPU(s) list:    0-95
Vendor ID:                AuthenticAMD
  Model name:             AMD EPYC 9254 24-Core Processor
    Thread(s) per core:   2
    Core(s) per socket:   24
    Socket(s):            2
    CPU max MHz:          4151.7568
    Flags:                fpu vme avx512f avx512_bf16 re
                          p_good avx512d
                          q pausefilter
                           avx512vl
Caches (sum of all):
  L1d:                    1.5 MiB (48 instances)
  L1i:                    1.5 MiB (48 instances)
  L2:                     48 MiB (48 instances)
  L3:                     256 MiB (8 instances)
NUMA:
  NUMA node(s):           1
"""


def test_hierarchic_layout_as_a_terminal_shows_it():
    cpu = parse_lscpu(HIERARCHIC)
    assert (cpu.sockets, cpu.cores_per_socket, cpu.threads_per_core) == (2, 24, 2)
    assert cpu.caches_text.startswith("L1d cache: 1.5 MiB (48 instances), L1i cache: 1.5 MiB")
    assert cpu.caches["L3"] == "256 MiB (8 instances)"
    assert cpu.max_mhz == "4151.7568"
    assert {"rep_good", "avx512dq", "pausefilter", "avx512vl"} <= set(cpu.flags)   # wrapped mid-word
    assert "re" not in cpu.flags and "p_good" not in cpu.flags
    assert cpu.topology_warning() == ""


def test_arm_dash_socket_counts_as_one():
    cpu = parse_lscpu("Architecture: aarch64\nCPU(s): 72\nModel name: Neoverse-V2\n"
                      "Thread(s) per core: 1\nCore(s) per cluster: 72\nSocket(s): -\n")
    assert (cpu.sockets, cpu.cores_per_socket) == (1, 72)


def test_not_lscpu_is_a_clear_error():
    with pytest.raises(LscpuParseError, match="not lscpu output"):
        parse_lscpu("bash: lscpu: command not found\n")
