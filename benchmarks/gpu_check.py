"""The GPU check: what this project's accelerator detection reads on a real NVIDIA GPU, against what
torch sees there. Run by benchmarks/gpu_check.sh on the lent device machine (CUDA, torch, no vLLM,
no network); the raw nvidia-smi outputs and the parsed facts go to $OUT for the recorded-output tests.

    PYTHONPATH=automation python benchmarks/gpu_check.py OUT_DIR
Exit 0: the parsed name, count and memory agree with torch.cuda (memory within 2%); 1: they differ;
2: no NVIDIA GPU here (nvidia-smi missing), said so."""
from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

from mlperf_llm.sysinfo.gpu import NVIDIA_QUERY_ARGS
from mlperf_llm.sysinfo.probe import SystemFacts, detect_accelerators, run_command

COMMANDS = {"query.csv": ["nvidia-smi", *NVIDIA_QUERY_ARGS], "banner.txt": ["nvidia-smi"],
            "topo.txt": ["nvidia-smi", "topo", "-m"], "nvlink.txt": ["nvidia-smi", "nvlink", "-s"]}


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    for name, argv in COMMANDS.items():           # the raw outputs, for tests/fixtures
        res = run_command(argv)
        (out / name).write_text(res.stdout)
    facts = SystemFacts()
    detect_accelerators(run_command, facts)
    report = {"gaps": [asdict(g) for g in facts.gaps],
              "accelerators": asdict(facts.accelerators) if facts.accelerators else None}
    if facts.accelerators is None or not facts.accelerators.gpus:
        print("no NVIDIA GPU detected:", report["gaps"] or "nvidia-smi not found")
        (out / "parsed.json").write_text(json.dumps(report, indent=1, default=str))
        return 2
    import torch
    seen = [(torch.cuda.get_device_name(i), torch.cuda.get_device_properties(i).total_memory / 2**20)
            for i in range(torch.cuda.device_count())]
    ours = [(g.name, g.memory_total_mib) for g in facts.accelerators.gpus]
    report["torch"] = seen
    problems = []
    if len(ours) != len(seen):
        problems.append(f"count: nvidia-smi parsed {len(ours)}, torch sees {len(seen)}")
    for (name, mib), (tname, tmib) in zip(ours, seen):
        if name != tname:
            problems.append(f"name: parsed {name!r}, torch {tname!r}")
        if not mib or abs(mib - tmib) > 0.02 * tmib:
            problems.append(f"memory: parsed {mib} MiB, torch {tmib:.0f} MiB")
    report["problems"] = problems
    (out / "parsed.json").write_text(json.dumps(report, indent=1, default=str))
    print(json.dumps(report, indent=1, default=str))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "gpu_check_out")))
