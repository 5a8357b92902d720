#!/usr/bin/env bash
# The one script run on a lent GPU machine (docs/gpu.md): accelerator detection on a real GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu_check_out}
PYTHONPATH=automation python3 benchmarks/gpu_check.py "$OUT"
