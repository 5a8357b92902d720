"""Recorded GPU hosts for tests: the vendor tools (nvidia-smi, amd-smi) as executables on PATH that
print a recorded machine's outputs (tests/fixtures/sysinfo/<host>/). A GPU cannot exist here; its
tools' outputs can, and the detection code reads them as it reads the real ones."""
from __future__ import annotations

import os
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "sysinfo"


def fake_tool(bin_dir: Path, name: str, body: str) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def nvidia_host(bin_dir: Path, host: str) -> None:
    """nvidia-smi of a recorded NVIDIA host (h100_8x, epyc9254_2s_8xl40s, h200_1x, ...)."""
    folder = FIXTURES / host
    fake_tool(bin_dir, "nvidia-smi", f"""case "$1" in
  --query-gpu=*) cat {folder}/nvidia-smi-query.csv ;;
  topo) cat {folder}/nvidia-smi-topo.txt ;;
  nvlink) cat {folder}/nvidia-smi-nvlink-s.txt 2>/dev/null ;;
  *) cat {folder}/nvidia-smi.txt ;;
esac
""")


def amd_host(bin_dir: Path, host: str = "amd") -> None:
    """amd-smi of a recorded AMD host (`amd-smi static ... --json`); no nvidia-smi beside it."""
    fake_tool(bin_dir, "amd-smi", f"cat {FIXTURES / host}/amd-smi-static.json\n")


def on_path(monkeypatch, bin_dir: Path) -> None:
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
