"""What a published result's accelerators ask of this machine (mlperf_llm.published.plan): their model,
read from the names nvidia-smi, amd-smi / rocm-smi and systems JSONs write, and their count."""
import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

from mlperf_llm.published.plan import HostFacts, plan_published, plan_test
from mlperf_llm.sysinfo.gpu import accelerator_key, same_model
from mlperf_llm.published.reader import read_published
from mlperf_llm.reproduce import replay

PUBLISHED = Path(__file__).resolve().parents[3].parent / "shared" / "published-results"


@pytest.mark.parametrize("name, key", [
    # nvidia-smi --query-gpu=name --format=csv,noheader
    ("NVIDIA H100 80GB HBM3", ("nvidia", "h100")),
    ("NVIDIA H100 PCIe", ("nvidia", "h100")),
    ("NVIDIA H100 NVL", ("nvidia", "h100")),
    ("Tesla T4", ("nvidia", "t4")),
    ("NVIDIA A100-SXM4-80GB", ("nvidia", "a100")),
    ("NVIDIA GH200 480GB", ("nvidia", "gh200")),
    ("NVIDIA L40S", ("nvidia", "l40s")),
    ("NVIDIA A10G", ("nvidia", "a10g")),
    ("NVIDIA GeForce RTX 4090", ("nvidia", "4090")),            # outside the table: vendor word, first model token
    ("NVIDIA RTX A6000", ("nvidia", "a6000")),
    # amd-smi / rocm-smi
    ("AMD Instinct MI325X", ("amd", "mi325x")),
    ("MI300X", ("amd", "mi300x")),
    ("MI300X-O", ("amd", "mi300x")),
    # systems JSONs of submissions (the two shared folders' first)
    ("NVIDIA H100-SXM-80GB", ("nvidia", "h100")),
    ("AMD Instinct MI325X 256GB HBM3e", ("amd", "mi325x")),
    ("H100-SXM5-80GB", ("nvidia", "h100")),
    ("H200-SXM-141GB", ("nvidia", "h200")),
    ("Intel Gaudi2", ("intel", "gaudi2")),
    # what is not known
    ("NVIDIA GPU", ("nvidia", "")),
    ("", ("", "")),
])
def test_accelerator_names_read_as_vendor_and_model(name, key):
    assert accelerator_key(name) == key


@pytest.mark.parametrize("published, here, same", [
    ("NVIDIA H100-SXM-80GB", "NVIDIA H100 80GB HBM3", True),
    ("H100-SXM5-80GB", "NVIDIA H100 80GB HBM3", True),
    ("NVIDIA H100-SXM-80GB", "Tesla T4", False),
    ("NVIDIA H100-SXM-80GB", "NVIDIA H200", False),
    ("H200-SXM-141GB", "NVIDIA GH200 480GB", False),
    ("AMD Instinct MI325X 256GB HBM3e", "AMD Instinct MI325X", True),
    ("MI325X", "AMD Instinct MI300X", False),
    ("AMD Instinct MI325X 256GB HBM3e", "NVIDIA GPU", False),   # another vendor
    ("NVIDIA H100-SXM-80GB", "NVIDIA GPU", True),               # the model here not known: the vendor agrees
])
def test_models_compare_by_key(published, here, same):
    assert same_model(accelerator_key(published), accelerator_key(here)) is same


def a_test(name, per_node, nodes=1):
    """A published test as plan_test reads it: its systems JSON and nothing else."""
    return SimpleNamespace(benchmark="llama2-70b-99", made_with=None, server_commands=[], engine_files=[],
                           system_desc={"accelerator_model_name": name, "accelerators_per_node": per_node,
                                        "number_of_nodes": nodes, "framework": "vLLM 0.6.3"})


@pytest.mark.parametrize("published, per_node, nodes, host, missing", [
    # another model: nothing of the published kind here, however many
    ("NVIDIA H100-SXM-80GB", 4, 1, HostFacts(4, "Tesla T4"),
     "4x NVIDIA H100-SXM-80GB (published) vs 4x Tesla T4 here: another accelerator model (NVIDIA H100, not NVIDIA T4)"),
    ("MI325X", 8, 1, HostFacts(8, "NVIDIA H100 80GB HBM3"),
     "8x MI325X (published) vs 8x NVIDIA H100 80GB HBM3 here: another accelerator model (AMD MI325X, not NVIDIA H100)"),
    # the model, too few of it
    ("NVIDIA H100-SXM-80GB", 4, 1, HostFacts(2, "NVIDIA H100 80GB HBM3"),
     "4x NVIDIA H100-SXM-80GB published, 2 here (2x NVIDIA H100 80GB HBM3): 2 more NVIDIA H100 needed"),
    ("MI325X", 8, 1, HostFacts(4, "AMD Instinct MI325X"), "8x MI325X published, 4 here (4x AMD Instinct MI325X)"),
    ("NVIDIA H100-SXM-80GB", 8, 2, HostFacts(8, "NVIDIA H100 80GB HBM3"),
     "16x NVIDIA H100-SXM-80GB published (2 nodes x 8), 8 here"),
    # a host of two models: only those of the published one count
    ("NVIDIA H100-SXM-80GB", 2, 1, HostFacts(3, "", ("NVIDIA H100 80GB HBM3", "Tesla T4", "Tesla T4")),
     "2x NVIDIA H100-SXM-80GB published, 1 here (1x NVIDIA H100 80GB HBM3 and 2x Tesla T4)"),
    # none at all
    ("NVIDIA H100-SXM-80GB", 4, 1, HostFacts(), "4x NVIDIA H100-SXM-80GB: this machine has no accelerators"),
    # what matches: the model under any of its names, at least as many
    ("H100-SXM5-80GB", 4, 1, HostFacts(4, "NVIDIA H100 80GB HBM3"), None),
    ("H100-SXM5-80GB", 4, 1, HostFacts(8, "NVIDIA H100 80GB HBM3"), None),
    ("AMD Instinct MI325X 256GB HBM3e", 8, 1, HostFacts(8, "AMD Instinct MI325X"), None),
    ("MI325X", 8, 1, HostFacts(8, "MI325X"), None),
    ("NVIDIA H100-SXM-80GB", 2, 1, HostFacts(4, "", ("Tesla T4", "NVIDIA H100 80GB HBM3") * 2), None),
])
def test_the_plan_names_what_is_missing_by_model_and_count(published, per_node, nodes, host, missing):
    plan = plan_test("/nowhere", a_test(published, per_node, nodes), host)
    if missing is None:
        assert plan.missing == []
    else:
        (said,) = plan.missing
        assert said.startswith(missing) and "--allow_device_change=yes" in said, said


def test_a_host_whose_model_is_not_known_is_checked_by_vendor_and_count_and_says_so():
    plan = plan_test("/nowhere", a_test("NVIDIA H100-SXM-80GB", 4), HostFacts(4, "NVIDIA GPU"))
    assert plan.missing == []
    assert any("model of this machine's accelerators is not known (4x NVIDIA GPU)" in n for n in plan.notes)
    plan = plan_test("/nowhere", a_test("AMD Instinct MI325X", 8), HostFacts(8, "NVIDIA GPU"))
    assert "another accelerator model (AMD MI325X, not NVIDIA)" in plan.missing[0]


@pytest.mark.parametrize("folder, host", [
    ("vultr-v5.1-mi325x", HostFacts(8, "AMD Instinct MI325X")),
    ("vultr-v5.1-mi325x", HostFacts(8, "", ("MI325X",) * 8)),
    ("nm-v4.1-fp8", HostFacts(4, "NVIDIA H100 80GB HBM3")),
    ("nm-v4.1-fp8", HostFacts(4, "", ("NVIDIA H100 80GB HBM3",) * 4)),
])
def test_the_shared_folders_plan_as_before_on_a_host_with_their_system(folder, host):
    result = read_published(PUBLISHED / folder)
    plans = plan_published(result, host)
    assert plans and all(p.missing == [] for p in plans)
    fewer = dataclasses.replace(host, accelerators=2, accelerator_names=host.accelerator_names[:2])
    assert all(len(p.missing) == 1 and p.missing[0].startswith(f"{p.accelerators}x ") and ", 2 here (" in p.missing[0]
               for p in plan_published(result, fewer))
    t4 = plan_published(result, HostFacts(8, "Tesla T4"))
    assert all(len(p.missing) == 1 and "here: another accelerator model" in p.missing[0] for p in t4)


def test_host_facts_carry_nvidia_smi_names(monkeypatch):
    assert replay.Host("x86_64", "cpu", 4, ("Tesla T4",) * 4).facts() == HostFacts(4, "Tesla T4", ("Tesla T4",) * 4)
    assert replay.Host("x86_64", "cpu", 8).facts() == HostFacts(8, "NVIDIA GPU")      # no names: the vendor only
    assert replay.Host().facts() == HostFacts()
    mixed = replay.Host("x86_64", "cpu", 2, ("NVIDIA H100 80GB HBM3", "Tesla T4")).facts()
    assert (mixed.accelerators, mixed.accelerator_name) == (2, "") and mixed.describe() == (
        "1x NVIDIA H100 80GB HBM3 and 1x Tesla T4")


@pytest.mark.parametrize("run, names", [
    (lambda *a, **k: SimpleNamespace(returncode=0, stdout="NVIDIA H100 80GB HBM3\nNVIDIA H100 80GB HBM3\n"),
     ("NVIDIA H100 80GB HBM3",) * 2),
    (lambda *a, **k: SimpleNamespace(returncode=6, stdout="No devices were found\n"), ()),
    (lambda *a, **k: (_ for _ in ()).throw(replay.subprocess.TimeoutExpired("nvidia-smi", 10)), ()),
    (lambda *a, **k: (_ for _ in ()).throw(FileNotFoundError("nvidia-smi")), ()),
])
def test_the_names_come_from_nvidia_smi_and_never_fail(monkeypatch, run, names):
    monkeypatch.setattr(replay.subprocess, "run", run)
    assert replay.gpu_names("/usr/bin/nvidia-smi") == names


def test_no_nvidia_smi_is_no_gpus(monkeypatch):
    monkeypatch.setattr(replay.shutil, "which", lambda name: None)
    monkeypatch.setattr(replay.subprocess, "run", lambda *a, **k: pytest.fail("nvidia-smi run without nvidia-smi"))
    host = replay.probe_host()
    assert (host.gpu_count, host.gpu_names) == (0, ()) and host.facts() == HostFacts()
