#!/usr/bin/env bash
# The wheels benchmarks/gpu_check.sh installs on a GPU node that lacks them (no network there):
# pytest and mlcommons-loadgen with their dependencies (benchmarks/gpu_check.py: NEEDED), for the
# CPython versions a node may have, Linux x86_64. Run where PyPI is reachable; carry DIR along.
#   benchmarks/gpu_wheels.sh [DIR]     (default gpu_wheels/)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-gpu_wheels}
DISTS=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import gpu_check; print(' '.join(gpu_check.NEEDED))")
for v in 3.10 3.11 3.12 3.13; do
  # shellcheck disable=SC2086
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$v" --implementation cp \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
    -d "$DIR" $DISTS
done
du -sh "$DIR"
