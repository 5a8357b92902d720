import pytest

from mlperf_llm.sysinfo.gpu import (GpuParseError, format_gpu_memory, nvidia_info, parse_amd_smi_static,
                                    parse_nvidia_nvlink_status, parse_nvidia_smi_query, parse_nvidia_topo,
                                    parse_rocm_smi)


def _nvidia(fixture_text, folder):
    return nvidia_info(fixture_text(folder, "nvidia-smi-query.csv"), fixture_text(folder, "nvidia-smi.txt"),
                       fixture_text(folder, "nvidia-smi-topo.txt"))


def test_2x_rtx_4090(fixture_text):
    acc = _nvidia(fixture_text, "xeon_w7_2495x_2x4090")
    assert (acc.vendor, acc.count, acc.model_name) == ("nvidia", 2, "NVIDIA GeForce RTX 4090")
    g = acc.gpus[1]
    assert (g.index, g.memory_total_mib, g.clock_max_mhz, g.clock_base_mhz) == (1, 24564, 3120, None)
    assert (g.pcie_gen, g.pcie_width, g.ecc_enabled, g.driver_version) == (4, 16, None, "550.127.05")
    assert acc.cuda_version == "12.4"
    assert format_gpu_memory(g.physical_memory_gib) == "24 GB"
    assert g.memory_type == "GDDR6X"
    assert (acc.interconnect, acc.interconnect_topology) == ("", "")


def test_8x_l40s_ecc_carve_out_is_added_back(fixture_text):
    acc = _nvidia(fixture_text, "epyc9254_2s_8xl40s")
    assert acc.count == 8 and acc.model_name == "NVIDIA L40S"
    g = acc.gpus[0]
    assert g.ecc_enabled is True and g.memory_total_mib == 46068
    assert format_gpu_memory(g.physical_memory_gib) == "48 GB"
    assert g.clock_base_mhz == 2520 and acc.cuda_version == "12.2"
    assert acc.interconnect == ""


def test_8x_h100_nvlink_all_to_all(fixture_text):
    acc = _nvidia(fixture_text, "h100_8x")
    assert acc.count == 8 and acc.model_name == "NVIDIA H100 80GB HBM3"
    g = acc.gpus[7]
    assert format_gpu_memory(g.physical_memory_gib) == "80 GB"    # HBM: no ECC carve-out to add back
    assert g.memory_type == "HBM3" and g.pcie_gen == 5
    assert acc.interconnect.startswith("NVLink (NV18")
    assert acc.interconnect_topology == "NVLink, all-to-all"


def test_nvlink_status_gives_links_and_speed(fixture_text):
    names = ("nvidia-smi-query.csv", "nvidia-smi-topo.txt", "nvidia-smi-nvlink-s.txt")
    h100 = [fixture_text("h100_8x", f) for f in names]
    acc = nvidia_info(h100[0], "", h100[1], h100[2])
    assert acc.interconnect == "NVLink, 18 links x 26.562 GB/s per GPU"
    assert acc.interconnect_topology == "NVLink, all-to-all"
    assert parse_nvidia_nvlink_status("GPU 0: NVIDIA L40S (UUID: GPU-1)\n") == (0, 0.0)


def test_partial_nvlink_topology_counts_pairs():
    topo = ("\tGPU0\tGPU1\tGPU2\tCPU Affinity\n"
            "GPU0\t X \tNV4\tSYS\t0-7\nGPU1\tNV4\t X \tSYS\t0-7\nGPU2\tSYS\tSYS\t X \t0-7\n")
    assert parse_nvidia_topo(topo) == ("NVLink (NV4 per GPU pair in nvidia-smi topo -m)", "NVLink, 1 of 3 GPU pairs")


def test_csv_without_header_is_rejected_with_the_fix():
    with pytest.raises(GpuParseError, match="--format=csv"):
        parse_nvidia_smi_query("0, NVIDIA L40S, 46068 MiB\n")


def test_csv_row_of_wrong_width_is_rejected():
    with pytest.raises(GpuParseError, match="row 2 has 2 fields"):
        parse_nvidia_smi_query("index, name, memory.total [MiB]\n0, NVIDIA L40S\n")


def test_amd_smi_and_rocm_smi(fixture_text):
    amd = parse_amd_smi_static(fixture_text("amd", "amd-smi-static.json"))
    assert [g.name for g in amd] == ["AMD Instinct MI300X"] * 2
    assert format_gpu_memory(amd[0].physical_memory_gib) == "192 GB"
    assert (amd[0].pcie_gen, amd[0].pcie_width, amd[0].memory_type) == (5, 16, "HBM3")
    rocm = parse_rocm_smi(fixture_text("amd", "rocm-smi.json"))
    assert len(rocm) == 2 and rocm[1].index == 1 and rocm[0].memory_total_mib == 196592
    with pytest.raises(GpuParseError, match="not JSON"):
        parse_rocm_smi("ERROR: GPU[0] : Unable to open device")


def test_memory_formatting():
    assert format_gpu_memory(None) == ""
    assert format_gpu_memory(23.6470) == "23.6 GB"
    assert format_gpu_memory(79.65) == "80 GB"
    assert format_gpu_memory(80.0) == format_gpu_memory(81920 / 1024) == "80 GB"        # A100 80GB: exact
    assert format_gpu_memory(22.5) == "22.5 GB"                # 2.2% under 23: not a whole number's reserve


def test_the_h200s_memory_is_named_as_nvidia_and_its_submitters_name_it(fixture_text):
    """143,771 MiB (140.4 GiB) on the lent H200: '141 GB', as NVIDIA's sheet and published systems
    JSONs ('H200-SXM-141GB') have it, not the nearest whole number below."""
    names = ("nvidia-smi-query.csv", "nvidia-smi.txt", "nvidia-smi-topo.txt", "nvidia-smi-nvlink-s.txt")
    g = nvidia_info(*(fixture_text("h200_1x", f) for f in names)).gpus[0]
    assert format_gpu_memory(g.physical_memory_gib) == "141 GB"


def test_1x_h200_recorded_on_a_lent_device(fixture_text):
    """benchmarks/gpu_check.sh's raw outputs from the lent H200 (docs/gpu.md): one GPU, no NVLink,
    and a topo table whose header carries the terminal's underline escape."""
    names = ("nvidia-smi-query.csv", "nvidia-smi.txt", "nvidia-smi-topo.txt", "nvidia-smi-nvlink-s.txt")
    acc = nvidia_info(*(fixture_text("h200_1x", f) for f in names))
    assert (acc.vendor, acc.count, acc.model_name, acc.cuda_version) == ("nvidia", 1, "NVIDIA H200", "13.0")
    g = acc.gpus[0]
    assert (g.memory_total_mib, g.clock_max_mhz, g.pcie_gen, g.pcie_width, g.ecc_enabled) == (143771, 1980, 5, 16, True)
    assert g.memory_type == "HBM3e" and g.driver_version == "580.159.04"
    assert (acc.interconnect, acc.interconnect_topology) == ("", "")
