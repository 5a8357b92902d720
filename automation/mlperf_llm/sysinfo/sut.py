"""Build the MLPerf `systems/<hw_name>.json` from detected facts, user inputs and the software used.

Every field the submission checker requires (v4.1 .. v5.1) is present and a string; the fields it
wants a meaningful answer for are never empty. What detection cannot know comes from `SutInputs`;
a field left at a default, or undetected, is listed in `SutDescription.review` with the reason and
the input that fixes it. Those marks are written beside the JSON (`review-<hw_name>.txt`) and
printed, while the JSON itself stays checker-valid.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from .gpu import AcceleratorInfo, format_gpu_memory
from .probe import SystemFacts

# tools/submission/submission_checker.py, SYSTEM_DESC_REQUIRED_FIELDS (same list in v4.1, v5.0, v5.1)
REQUIRED_FIELDS = (
    "division", "submitter", "status", "system_name", "number_of_nodes", "host_processor_model_name",
    "host_processors_per_node", "host_processor_core_count", "host_memory_capacity", "host_storage_capacity",
    "host_storage_type", "accelerators_per_node", "accelerator_model_name", "accelerator_memory_capacity",
    "framework", "operating_system", "system_type", "other_software_stack", "host_processor_frequency",
    "host_processor_caches", "host_memory_configuration", "host_processor_interconnect", "host_networking",
    "host_networking_topology", "accelerator_frequency", "accelerator_host_interconnect",
    "accelerator_interconnect", "accelerator_interconnect_topology", "accelerator_memory_configuration",
    "accelerator_on-chip_memories", "cooling", "hw_notes", "sw_notes", "host_network_card_count",
    "system_type_detail",
)
# SYSTEM_DESC_MEANINGFUL_RESPONSE_REQUIRED_FIELDS: must not be empty
MEANINGFUL_FIELDS = frozenset((
    "division", "submitter", "system_type", "status", "system_name", "number_of_nodes",
    "host_processor_model_name", "host_processors_per_node", "host_processor_core_count",
    "host_memory_capacity", "host_memory_configuration", "host_storage_capacity", "host_storage_type",
    "host_networking", "host_network_card_count", "host_networking_topology", "accelerators_per_node",
    "accelerator_model_name", "accelerator_memory_capacity", "accelerator_host_interconnect",
    "accelerator_memory_configuration", "accelerator_interconnect", "cooling", "framework",
    "operating_system", "other_software_stack",
))
VALID_STATUS = ("available", "preview", "rdi")
VALID_DIVISIONS = ("closed", "open")
VALID_SYSTEM_TYPES = ("datacenter", "edge", "datacenter,edge", "edge,datacenter")
UNDEFINED = "undefined"
DEFAULT_SUBMITTER = "default"      # a description's submitter where none was given (checker-valid)
HW_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


# what a container does not see of the machine it runs on (--docker=chain): the network cards (a
# container with no network has none), the memory modules (dmidecode reads /dev/mem) and the
# operating system (its files are the image's). The host detects them and hands them in: a JSON
# object of these fields, named by HOST_VIEW_ENV.
HOST_VIEW = ("host_networking", "host_network_card_count", "host_memory_configuration", "operating_system")
HOST_VIEW_ENV = "CM_MLPERF_HOST_SYSTEM"


class SutInputError(ValueError):
    pass


def host_view(facts: SystemFacts) -> dict[str, str]:
    """The HOST_VIEW fields `facts` has (those not detected are left out)."""
    out: dict[str, str] = {}
    net = facts.network
    if net and net.cards:
        out["host_networking"] = net.networking_text
        out["host_network_card_count"] = str(net.card_count)
    if facts.memory and facts.memory.configuration:
        out["host_memory_configuration"] = facts.memory.configuration
    if facts.operating_system:
        out["operating_system"] = facts.operating_system
    return out


def load_host_view(path: str) -> dict[str, str]:
    """The host's view (HOST_VIEW_ENV): only HOST_VIEW fields, each a string; SutInputError naming
    the file otherwise."""
    try:
        with open(path) as fh:
            data = json.load(fh)
    except (OSError, ValueError) as e:
        raise SutInputError(f"{HOST_VIEW_ENV}={path}: the host's view of the system cannot be read ({e}); run "
                            "the chain again from the host (--docker=chain writes it)") from e
    if not isinstance(data, dict) or any(k not in HOST_VIEW or not isinstance(v, str) for k, v in data.items()):
        raise SutInputError(f"{HOST_VIEW_ENV}={path}: not the host's view of the system (a JSON object of "
                            f"{', '.join(HOST_VIEW)}, each a string)")
    return data


@dataclass(frozen=True)
class SutInputs:
    """What only the user knows. None = not given (a default is used and marked for review)."""
    hw_name: str
    submitter: str | None = None
    division: str | None = None
    status: str | None = None
    system_name: str | None = None
    system_type: str | None = None
    system_type_detail: str | None = None
    cooling: str | None = None
    hw_notes: str | None = None
    sw_notes: str | None = None
    overrides: dict[str, str] = field(default_factory=dict)   # a user JSON merged on top


# how the systems JSON names each vendor's GPU driver
DRIVER_LABELS = {"nvidia": "NVIDIA driver", "amd": "AMD GPU driver amdgpu"}


@dataclass(frozen=True)
class SoftwareStack:
    """Versions actually used by the run ("" = that component was not part of it)."""
    framework_name: str = "vLLM"
    framework_version: str = ""
    torch_version: str = ""
    loadgen_version: str = ""
    python_version: str = ""
    tool_version: str = ""                 # this toolkit's version, for sw_notes
    extra: tuple[str, ...] = ()            # further "name version" items

    def framework_text(self) -> str:
        return f"{self.framework_name} {self.framework_version}".strip() if self.framework_version else ""

    def other_text(self, accelerators: AcceleratorInfo | None) -> str:
        items = []
        if self.python_version:
            items.append(f"Python: {self.python_version}")
        if self.torch_version:
            items.append(f"PyTorch {self.torch_version}")
        if self.loadgen_version:
            items.append(f"mlcommons-loadgen {self.loadgen_version}")
        if accelerators and accelerators.vendor == "nvidia" and accelerators.cuda_version:
            items.append(f"CUDA {accelerators.cuda_version}")
        driver = DRIVER_LABELS.get(accelerators.vendor) if accelerators else None
        drivers = sorted({g.driver_version for g in accelerators.gpus if g.driver_version}) if driver else []
        if drivers:                       # AMD: amd-smi's (rocm-smi says none)
            items.append(f"{driver} {', '.join(drivers)}")
        items.extend(self.extra)
        return ", ".join(items)


@dataclass
class SutDescription:
    fields: dict[str, str]
    review: dict[str, str]                 # field -> why it needs a human look and how to set it

    def review_text(self) -> str:
        if not self.review:
            return "All fields were detected or given; nothing to review.\n"
        lines = ["Fields to review before submitting (value in the JSON -> why):"]
        lines += [f"  {k} = {self.fields.get(k, '')!r} -> {why}" for k, why in sorted(self.review.items())]
        return "\n".join(lines) + "\n"


def validate_inputs(inputs: SutInputs) -> None:
    if not HW_NAME_RE.match(inputs.hw_name or ""):
        raise SutInputError(f"--hw_name={inputs.hw_name!r} is not a valid system folder name: the checker "
                            "rejects spaces; use letters, digits, '_', '.', '-' (e.g. --hw_name=my_8xH100)")
    checks = (("division", inputs.division, VALID_DIVISIONS), ("status", inputs.status, VALID_STATUS),
              ("system_type", inputs.system_type, VALID_SYSTEM_TYPES))
    for name, value, valid in checks:
        if value is not None and value.lower() not in valid:
            raise SutInputError(f"--{name}={value!r} is not accepted by the submission checker; "
                                f"use one of: {', '.join(valid)}")


def _cpu_fields(facts: SystemFacts, review: dict[str, str]) -> dict[str, str]:
    cpu = facts.cpu
    names = ("host_processor_model_name", "host_processors_per_node", "host_processor_core_count",
             "host_processor_frequency", "host_processor_caches")
    if cpu is None:
        why = [str(g) for g in facts.gaps if g.source == "lscpu"]
        for k in names:
            review[k] = f"{why[0] if why else 'lscpu gave nothing'}; fill it in a user JSON (--sut_json=FILE)"
        return {k: UNDEFINED for k in names}
    out = {
        "host_processor_model_name": cpu.model_name or UNDEFINED,
        "host_processors_per_node": str(cpu.sockets) if cpu.sockets else UNDEFINED,
        "host_processor_core_count": str(cpu.cores_per_socket) if cpu.cores_per_socket else UNDEFINED,
        "host_processor_frequency": cpu.max_mhz or UNDEFINED,
        "host_processor_caches": cpu.caches_text,
    }
    if not cpu.max_mhz:
        review["host_processor_frequency"] = "lscpu reports no 'CPU max MHz' (usual in VM guests)"
    warning = cpu.topology_warning()
    if warning:
        review["host_processor_core_count"] = warning
    return out


def _accelerator_fields(acc: AcceleratorInfo | None, review: dict[str, str], why: str = "") -> dict[str, str]:
    names = ("accelerators_per_node", "accelerator_model_name", "accelerator_memory_capacity",
             "accelerator_memory_configuration", "accelerator_frequency", "accelerator_host_interconnect",
             "accelerator_interconnect", "accelerator_interconnect_topology")
    if acc is None:
        for k in names:
            review[k] = f"{why or 'the accelerator tool failed'}; fill it in a user JSON (--sut_json=FILE)"
        return {k: UNDEFINED for k in names}
    if not acc.gpus:
        return {"accelerators_per_node": "0", "accelerator_model_name": "N/A",
                "accelerator_memory_capacity": "N/A", "accelerator_memory_configuration": "N/A",
                "accelerator_frequency": "", "accelerator_host_interconnect": "N/A",
                "accelerator_interconnect": "N/A", "accelerator_interconnect_topology": ""}
    first = acc.gpus[0]
    mem_type = first.memory_type
    if not mem_type:
        review["accelerator_memory_configuration"] = f"memory type of {first.name!r} is not in the known table"
    clock = first.clock_base_mhz or first.clock_max_mhz
    if len({g.name for g in acc.gpus}) > 1:
        review["accelerator_model_name"] = "mixed accelerator models on one node"
    return {
        "accelerators_per_node": str(acc.count),
        "accelerator_model_name": acc.model_name,
        "accelerator_memory_capacity": format_gpu_memory(first.physical_memory_gib) or UNDEFINED,
        "accelerator_memory_configuration": mem_type or UNDEFINED,
        "accelerator_frequency": f"{clock} MHz" if clock else "",
        "accelerator_host_interconnect": (f"PCIe Gen{first.pcie_gen} x{first.pcie_width}"
                                          if first.pcie_gen and first.pcie_width else "N/A"),
        "accelerator_interconnect": acc.interconnect or "N/A",
        "accelerator_interconnect_topology": acc.interconnect_topology,
    }


def _auto_system_name(hw_name: str, facts: SystemFacts, software: SoftwareStack) -> str:
    """"box (2x NVIDIA GeForce RTX 4090, vLLM 0.5.2; auto detected)", in the seeds' manner."""
    acc = facts.accelerators
    parts = []
    if acc and acc.gpus:
        parts.append(f"{acc.count}x {acc.model_name}")
    elif facts.cpu and facts.cpu.model_name:
        parts.append(facts.cpu.model_name)
    if software.framework_text():
        parts.append(software.framework_text())
    return f"{hw_name} ({', '.join(parts) + '; ' if parts else ''}auto detected)"


def build_sut_description(facts: SystemFacts, inputs: SutInputs, software: SoftwareStack,
                          host: dict[str, str] | None = None) -> SutDescription:
    """`host`: the HOST_VIEW fields the host detected, for a description made in a container; they
    stand for what the container sees of them (the user's --sut_json still wins)."""
    validate_inputs(inputs)
    review: dict[str, str] = {}

    def given(name: str, value: str | None, default: str, how: str) -> str:
        if value is not None and value != "":
            return value
        review[name] = f"default, not detectable: set {how}"
        return default

    f: dict[str, str] = {
        "division": given("division", inputs.division and inputs.division.lower(), "closed", "--division"),
        "submitter": given("submitter", inputs.submitter, DEFAULT_SUBMITTER, "--submitter"),
        "status": given("status", inputs.status and inputs.status.lower(), "available", "--status"),
        "system_name": given("system_name", inputs.system_name, _auto_system_name(inputs.hw_name, facts, software),
                             "--system_name"),
        "system_type": given("system_type", inputs.system_type, "datacenter", "--system_type"),
        "system_type_detail": given("system_type_detail", inputs.system_type_detail, "N/A",
                                    "--system_type_detail"),
        "cooling": given("cooling", inputs.cooling, "air", "--cooling"),
        "hw_notes": inputs.hw_notes or "",
        "sw_notes": inputs.sw_notes if inputs.sw_notes is not None else
        (f"Automated by cm4mlperf-llm {software.tool_version}".strip() + "."),
        "number_of_nodes": "1",
        "host_networking_topology": "N/A",
        "accelerator_on-chip_memories": "",
    }
    f.update(_cpu_fields(facts, review))
    cpu = facts.cpu
    f["host_processor_interconnect"] = ""
    if cpu and cpu.sockets and cpu.sockets > 1:
        review["host_processor_interconnect"] = "multi-socket link (UPI/xGMI) is not detectable"

    seen = {**host_view(facts), **(host or {})}
    mem = facts.memory
    f["host_memory_capacity"] = mem.capacity_text if mem else UNDEFINED
    f["host_memory_configuration"] = seen.get("host_memory_configuration", UNDEFINED)
    if "host_memory_configuration" not in seen:
        why = [str(g) for g in facts.gaps if "host_memory_configuration" in g.affects]
        review["host_memory_configuration"] = (why[0] if why else "dmidecode listed no memory module") + \
            "; or give it: --sut_json with e.g. {\"host_memory_configuration\": \"16x 32GB DDR5-4800\"}"
    if mem is None:
        review["host_memory_capacity"] = "/proc/meminfo was not readable"

    st = facts.storage
    f["host_storage_capacity"] = st.capacity_text if st and st.disks else UNDEFINED
    f["host_storage_type"] = st.type_text if st and st.disks else UNDEFINED
    if not (st and st.disks):
        review["host_storage_capacity"] = review["host_storage_type"] = "lsblk found no disk"

    f["host_networking"] = seen.get("host_networking", UNDEFINED)
    f["host_network_card_count"] = seen.get("host_network_card_count", UNDEFINED)
    if "host_networking" not in seen:
        review["host_networking"] = review["host_network_card_count"] = "no network card found"

    acc_gaps = [str(g) for g in facts.gaps if g.affects.startswith("accelerator")]
    f.update(_accelerator_fields(facts.accelerators, review, acc_gaps[0] if acc_gaps else ""))
    f["operating_system"] = seen.get("operating_system", UNDEFINED)
    if "operating_system" not in seen:
        review["operating_system"] = "OS was not detected"

    f["framework"] = software.framework_text() or UNDEFINED
    if not software.framework_version:
        review["framework"] = "framework version unknown: pass --framework_version (or CM_VLLM_VERSION)"
    f["other_software_stack"] = software.other_text(facts.accelerators) or UNDEFINED
    if f["other_software_stack"] == UNDEFINED:
        review["other_software_stack"] = "no software versions were passed in"

    for key, value in inputs.overrides.items():       # the user's JSON wins, and is reviewed by them
        f[key] = value if isinstance(value, str) else json.dumps(value)
        review.pop(key, None)
    for key in REQUIRED_FIELDS:
        f.setdefault(key, "")
        if key in MEANINGFUL_FIELDS and not f[key]:
            f[key] = UNDEFINED
            review.setdefault(key, "the checker requires a meaningful value")
    return SutDescription(fields=dict(sorted(f.items())), review=review)


def load_user_json(path: str) -> dict[str, str]:
    try:
        with open(path) as fh:
            data = json.load(fh)
    except OSError as e:
        raise SutInputError(f"--sut_json={path}: cannot read it ({e.strerror}); give an existing file") from e
    except json.JSONDecodeError as e:
        raise SutInputError(f"--sut_json={path}: not valid JSON (line {e.lineno}: {e.msg}); fix the file") from e
    if not isinstance(data, dict):
        raise SutInputError(f"--sut_json={path}: must hold a JSON object of system fields, got {type(data).__name__}")
    return data
