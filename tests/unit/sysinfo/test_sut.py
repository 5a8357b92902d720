import json
import os

import pytest

from mlperf_llm.sysinfo.cpu import parse_lscpu
from mlperf_llm.sysinfo.probe import CommandResult, SystemFacts, collect
from mlperf_llm.files import write_json_atomic
from mlperf_llm.sysinfo.sut import (HOST_VIEW, MEANINGFUL_FIELDS, REQUIRED_FIELDS, SoftwareStack, SutInputError,
                                    SutInputs, build_sut_description, host_view, load_host_view, load_user_json)

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "sysinfo")


def fake_runner(folder, broken=()):
    """Serve recorded outputs of `folder` as if the tools ran; tools not recorded are 'not found'."""
    files = {("lscpu",): "lscpu.txt", ("nvidia-smi", "--query-gpu"): "nvidia-smi-query.csv",
             ("nvidia-smi",): "nvidia-smi.txt", ("nvidia-smi", "topo"): "nvidia-smi-topo.txt",
             ("nvidia-smi", "nvlink"): "nvidia-smi-nvlink-s.txt"}

    def run(argv):
        key = (argv[0],) if len(argv) == 1 else (argv[0], argv[1].split("=")[0])
        if argv[0] in broken:
            return CommandResult(9, "", f"{argv[0]}: failed to initialize: Driver/library version mismatch")
        path = os.path.join(FIXTURES, folder, files.get(key, "-"))
        if not os.path.exists(path):
            return CommandResult(127, "", f"{argv[0]}: command not found")
        with open(path) as f:
            return CommandResult(0, f.read())
    return run


def make_net(root, nics):
    for name, speed, driver in nics:
        base = root / "net" / name
        dev = root / "dev" / name
        (root / "drv" / driver).mkdir(parents=True, exist_ok=True)
        dev.mkdir(parents=True)
        os.symlink(root / "drv" / driver, dev / "driver")
        base.mkdir(parents=True)
        (base / "type").write_text("1\n")
        (base / "speed").write_text(f"{speed}\n")
        os.symlink(dev, base / "device")
    return str(root / "net")


def seed_facts(tmp_path, folder, kernel, glibc):
    return collect(run=fake_runner(folder), meminfo_path=os.path.join(FIXTURES, folder, "meminfo.txt"),
                   net_root=make_net(tmp_path, [("eno1", 1000, "igb")]),
                   os_release_path=os.path.join(FIXTURES, folder, "os-release.txt"), kernel=kernel, glibc=glibc)


def seed_table(n):
    with open(os.path.join(FIXTURES, f"seed_{n}_system_table.json")) as f:
        return json.load(f)


# Fields where we deliberately write something else than the seed, and why (docs/sysinfo.md).
SEED_000_DIVERGES = {
    "accelerator_frequency": ("3120 MHz", "seed: CUDA clock rate 2520 MHz; GeForce has no default application "
                                          "clock in nvidia-smi, so its max graphics clock is reported"),
    "accelerator_memory_capacity": ("24 GB", "seed: CUDA-visible 23.647 GiB; we report the board's memory"),
    "accelerator_host_interconnect": ("PCIe Gen4 x16", "seed: CM's default 'N/A'; read from nvidia-smi"),
    "accelerator_memory_configuration": ("GDDR6X", "seed: CM's default 'N/A'"),
    "host_networking": ("1 Gbit/s Ethernet (eno1, igb)", "seed: CM's default 'Gig Ethernet'"),
    "other_software_stack": ("Python: 3.11.4, CUDA 12.4, NVIDIA driver 550.127.05",
                             "seed lists CM's detected compiler; we list what the run used"),
    "sw_notes": ("Automated by cm4mlperf-llm 0.1.0.", "our tool"),
}
SEED_001_DIVERGES = {
    "accelerator_frequency": ("2520 MHz", "seed left it empty"),
    "host_networking": ("1 Gbit/s Ethernet (eno1, igb)", "seed: CM's default 'Gig Ethernet'"),
    "other_software_stack": ("Python: 3.10.12, CUDA 12.2, NVIDIA driver 535.183.01", "as above"),
    "sw_notes": ("Automated by cm4mlperf-llm 0.1.0.", "our tool"),
}


@pytest.mark.parametrize("n,folder,kernel,glibc,python,diverges,n_same", [
    ("000", "xeon_w7_2495x_2x4090", "6.2.0-39-generic", "2.37", "3.11.4", SEED_000_DIVERGES, 19),
    ("001", "epyc9254_2s_8xl40s", "5.15.0-94-generic", "2.35", "3.10.12", SEED_001_DIVERGES, 22),
])
def test_seed_system_tables_come_out_right(tmp_path, n, folder, kernel, glibc, python, diverges, n_same):
    seed = seed_table(n)
    facts = seed_facts(tmp_path, folder, kernel, glibc)
    desc = build_sut_description(facts, SutInputs(hw_name="sut", submitter="NeuralMagic", cooling="air"),
                                 SoftwareStack(framework_version="0.5.2", python_version=python,
                                               tool_version="0.1.0"))
    fields = desc.fields
    checked = 0
    for key, seed_value in seed.items():
        if key.startswith("_"):
            continue
        if key in diverges:
            assert fields[key] == diverges[key][0], key
            assert fields[key] != seed_value, f"{key} now matches the seed: drop it from the divergence list"
        else:
            assert fields[key] == seed_value, key
            checked += 1
    assert checked == n_same          # 26 fields in each seed table


def test_seed_001_flags_the_inconsistent_vm_topology_for_review(tmp_path):
    facts = seed_facts(tmp_path, "epyc9254_2s_8xl40s", "5.15.0-94-generic", "2.35")
    desc = build_sut_description(facts, SutInputs(hw_name="sut"), SoftwareStack(framework_version="0.5.2"))
    assert "CPU(s) = 40" in desc.review["host_processor_core_count"]
    assert "host_processor_interconnect" in desc.review            # 2 sockets: UPI/xGMI not detectable
    assert "host_processor_frequency" in desc.review


def test_every_required_field_is_a_nonempty_string_where_the_checker_wants_one(tmp_path):
    facts = seed_facts(tmp_path, "xeon_w7_2495x_2x4090", "6.2.0", "2.37")
    desc = build_sut_description(facts, SutInputs(hw_name="sut"), SoftwareStack())
    assert set(REQUIRED_FIELDS) <= set(desc.fields)
    assert all(isinstance(v, str) for v in desc.fields.values())
    assert [k for k in MEANINGFUL_FIELDS if not desc.fields[k]] == []
    assert desc.fields["framework"] == "undefined" and "framework" in desc.review
    for k in ("submitter", "status", "cooling", "system_name", "division", "system_type"):
        assert k in desc.review, k
    assert desc.fields["system_name"] == "sut (2x NVIDIA GeForce RTX 4090; auto detected)"
    named = build_sut_description(SystemFacts(), SutInputs(hw_name="n"), SoftwareStack(framework_version="0.5.2"))
    assert named.fields["system_name"] == "n (vLLM 0.5.2; auto detected)"
    assert "submitter = 'default'" in desc.review_text()


def test_broken_and_missing_tools_give_a_partial_description_with_named_gaps(tmp_path):
    run = fake_runner("xeon_w7_2495x_2x4090", broken=("nvidia-smi",))
    facts = collect(run=run, meminfo_path=str(tmp_path / "no-meminfo"), net_root=str(tmp_path / "nonet"),
                    os_release_path=str(tmp_path / "no-os-release"), kernel="6.2.0", glibc="2.37")
    sources = {g.source for g in facts.gaps}
    assert {"nvidia-smi", "lsblk", str(tmp_path / "no-meminfo"), str(tmp_path / "nonet"),
            str(tmp_path / "no-os-release")} <= sources
    nv = [g for g in facts.gaps if g.source == "nvidia-smi"][0]
    assert "Driver/library version mismatch" in nv.reason and "accelerator" in nv.affects
    assert facts.accelerators is None and facts.cpu is not None
    desc = build_sut_description(facts, SutInputs(hw_name="sut"), SoftwareStack(framework_version="0.5.2"))
    assert desc.fields["accelerator_model_name"] == "undefined"
    assert "Driver/library version mismatch" in desc.review["accelerator_model_name"]
    assert "dmidecode" in desc.review["host_memory_configuration"]
    assert desc.fields["host_processor_model_name"] == "Intel(R) Xeon(R) w7-2495X"
    assert desc.fields["host_storage_capacity"] == "undefined"


def test_lscpu_missing_and_no_accelerator_tool(tmp_path):
    facts = collect(run=fake_runner("no-such-folder"),
                    meminfo_path=os.path.join(FIXTURES, "this_machine", "meminfo.txt"),
                    net_root=str(tmp_path), os_release_path=os.path.join(FIXTURES, "this_machine", "os-release.txt"),
                    kernel="6.18.44", glibc="2.36")
    assert facts.cpu is None and [g.reason for g in facts.gaps if g.source == "lscpu"] == ["lscpu: command not found"]
    assert facts.accelerators is not None and facts.accelerators.vendor == "none"   # an answer, not a gap
    desc = build_sut_description(facts, SutInputs(hw_name="sut"), SoftwareStack())
    assert desc.fields["accelerators_per_node"] == "0" and desc.fields["accelerator_model_name"] == "N/A"
    assert desc.fields["host_processor_model_name"] == "undefined"
    assert desc.review["host_processor_model_name"].startswith("lscpu: command not found")
    assert desc.fields["operating_system"] == "Debian 12 (linux-6.18.44-glibc2.36)"


def test_user_json_wins_and_clears_the_review_mark(tmp_path):
    facts = SystemFacts(cpu=parse_lscpu("CPU(s): 2\nModel name: X\nSocket(s): 1\nCore(s) per socket: 2\n"))
    user = tmp_path / "mine.json"
    user.write_text(json.dumps({"cooling": "liquid", "host_memory_configuration": "8x 64GB DDR5-5600",
                                "number_of_nodes": 1}))
    desc = build_sut_description(facts, SutInputs(hw_name="n1", overrides=load_user_json(str(user))),
                                 SoftwareStack())
    assert desc.fields["cooling"] == "liquid" and "cooling" not in desc.review
    assert desc.fields["host_memory_configuration"] == "8x 64GB DDR5-5600"
    assert desc.fields["number_of_nodes"] == "1"


def test_a_description_made_in_a_container_takes_the_hosts_view_of_what_the_container_cannot_see(tmp_path):
    """--docker=chain: in a container with no network /sys/class/net holds no card, dmidecode cannot
    read the modules and /etc/os-release is the image's; the host's view of those fields stands for
    them (not marked for review: detected), and the user's --sut_json still wins."""
    folder = "xeon_w7_2495x_2x4090"                 # an Ubuntu host; the image is Debian
    host = seed_facts(tmp_path / "host", folder, "6.2.0-39-generic", "2.37")
    container = collect(run=fake_runner(folder), meminfo_path=os.path.join(FIXTURES, folder, "meminfo.txt"),
                        net_root=str(tmp_path), os_release_path=os.path.join(FIXTURES, "this_machine", "os-release.txt"),
                        kernel="6.2.0-39-generic", glibc="2.36")
    view = host_view(host)
    assert set(view) <= set(HOST_VIEW) and view["host_networking"] == "1 Gbit/s Ethernet (eno1, igb)"
    assert view["host_network_card_count"] == "1" and view["operating_system"].startswith("Ubuntu")
    assert view["operating_system"] == host.operating_system != container.operating_system
    path = tmp_path / "host-system.json"
    write_json_atomic(str(path), view)
    alone = build_sut_description(container, SutInputs(hw_name="n1"), SoftwareStack())
    assert alone.fields["host_networking"] == "undefined" and "host_networking" in alone.review
    desc = build_sut_description(container, SutInputs(hw_name="n1"), SoftwareStack(), load_host_view(str(path)))
    for key, value in view.items():
        assert desc.fields[key] == value and key not in desc.review
    mine = build_sut_description(container, SutInputs(hw_name="n1", overrides={"host_networking": "2x 100GbE"}),
                                 SoftwareStack(), view)
    assert mine.fields["host_networking"] == "2x 100GbE" and mine.fields["operating_system"] == view["operating_system"]


@pytest.mark.parametrize("text", ['{"cooling": "liquid"}', '{"host_networking": 1}', "[]", "{not json"])
def test_a_host_view_with_anything_else_is_refused_naming_the_file(tmp_path, text):
    path = tmp_path / "host-system.json"
    path.write_text(text)
    with pytest.raises(SutInputError, match=f"CM_MLPERF_HOST_SYSTEM={path}"):
        load_host_view(str(path))


@pytest.mark.parametrize("inputs,match", [
    (SutInputs(hw_name="my box"), "not a valid system folder name"),
    (SutInputs(hw_name="ok", status="ga"), "--status='ga'.*available, preview, rdi"),
    (SutInputs(hw_name="ok", division="closedd"), "--division"),
    (SutInputs(hw_name="ok", system_type="server"), "datacenter"),
])
def test_bad_inputs_are_named(inputs, match):
    with pytest.raises(SutInputError, match=match):
        build_sut_description(SystemFacts(), inputs, SoftwareStack())


def test_user_json_errors(tmp_path):
    with pytest.raises(SutInputError, match="cannot read"):
        load_user_json(str(tmp_path / "absent.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{\"cooling\": ")
    with pytest.raises(SutInputError, match="not valid JSON"):
        load_user_json(str(bad))
    bad.write_text("[1]")
    with pytest.raises(SutInputError, match="JSON object"):
        load_user_json(str(bad))


def test_atomic_write_leaves_no_partial_file(tmp_path):
    target = tmp_path / "sut.json"
    write_json_atomic(str(target), {"a": "1"})
    with pytest.raises(TypeError):
        write_json_atomic(str(target), {"a": object()})
    assert json.loads(target.read_text()) == {"a": "1"}
    assert os.listdir(tmp_path) == ["sut.json"]


def test_amd_accelerators_through_amd_smi(tmp_path):
    def run(argv):
        if argv[0] == "amd-smi":
            with open(os.path.join(FIXTURES, "amd", "amd-smi-static.json")) as f:
                return CommandResult(0, f.read())
        return CommandResult(127, "", f"{argv[0]}: command not found")
    from mlperf_llm.sysinfo.probe import detect_accelerators
    facts = SystemFacts()
    detect_accelerators(run, facts)
    assert facts.accelerators.vendor == "amd" and facts.accelerators.count == 2
    desc = build_sut_description(facts, SutInputs(hw_name="mi300x"), SoftwareStack(framework_version="0.6.3"))
    f = desc.fields
    assert (f["accelerator_model_name"], f["accelerator_memory_capacity"], f["accelerator_memory_configuration"],
            f["accelerator_host_interconnect"]) == ("AMD Instinct MI300X", "192 GB", "HBM3", "PCIe Gen5 x16")
    assert f["accelerators_per_node"] == "2"
    assert "AMD GPU driver amdgpu 6.7.0" in f["other_software_stack"] and "CUDA" not in f["other_software_stack"]


def test_rocm_smi_is_the_fallback_and_its_failure_is_a_gap():
    calls = []

    def run(argv):
        calls.append(argv[0])
        if argv[0] == "rocm-smi":
            return CommandResult(2, "", "rocm-smi: ERROR: amdgpu driver not loaded")
        return CommandResult(127, "", f"{argv[0]}: command not found")
    from mlperf_llm.sysinfo.probe import detect_accelerators
    facts = SystemFacts()
    detect_accelerators(run, facts)
    assert calls == ["nvidia-smi", "amd-smi", "rocm-smi"]
    assert facts.accelerators is None and "amdgpu driver not loaded" in str(facts.gaps[0])


def test_8x_h100_description_names_the_nvlink_fabric(tmp_path):
    facts = collect(run=fake_runner("h100_8x"), meminfo_path=os.path.join(FIXTURES, "this_machine", "meminfo.txt"),
                    net_root=str(tmp_path), os_release_path=os.path.join(FIXTURES, "this_machine", "os-release.txt"))
    f = build_sut_description(facts, SutInputs(hw_name="h100"), SoftwareStack(framework_version="0.6.0")).fields
    assert (f["accelerators_per_node"], f["accelerator_model_name"]) == ("8", "NVIDIA H100 80GB HBM3")
    assert (f["accelerator_memory_capacity"], f["accelerator_memory_configuration"]) == ("80 GB", "HBM3")
    assert f["accelerator_interconnect"] == "NVLink, 18 links x 26.562 GB/s per GPU"
    assert f["accelerator_interconnect_topology"] == "NVLink, all-to-all"
    assert (f["accelerator_frequency"], f["accelerator_host_interconnect"]) == ("1980 MHz", "PCIe Gen5 x16")


def test_dmidecode_without_smbios_says_so(tmp_path):
    with open(os.path.join(FIXTURES, "this_machine", "dmidecode-memory.stdout")) as f:
        out = f.read()
    with open(os.path.join(FIXTURES, "this_machine", "dmidecode-memory.stderr")) as f:
        err = f.read()

    def run(argv):
        if argv[0] == "dmidecode":
            return CommandResult(1, out, err)
        return CommandResult(127, "", f"{argv[0]}: command not found")
    facts = collect(run=run, meminfo_path=os.path.join(FIXTURES, "this_machine", "meminfo.txt"),
                    net_root=str(tmp_path), os_release_path=os.path.join(FIXTURES, "this_machine", "os-release.txt"))
    gap = [str(g) for g in facts.gaps if g.source == "dmidecode"][0]
    assert "/dev/mem: No such file or directory" in gap and "no SMBIOS table" in gap
    assert facts.memory.capacity_text == "25G"
