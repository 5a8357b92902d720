#!/usr/bin/env bash
# The one script run on a lent GPU machine (docs/gpu.md): the GPU tests (tests/gpu: detect-gpu
# against torch, install-vllm's CUDA choice, the transformers backend on cuda in bfloat16 through
# LoadGen) in the node's own python (CUDA, torch, transformers; no vLLM, no network), then a table of
# what ran, passed, or could not run there and why. Elsewhere every row says "not run: no CUDA device".
#
#   benchmarks/gpu_check.sh [WHEELS]   WHEELS: the wheels carried along (benchmarks/gpu_wheels.sh
#                                      makes them; default gpu_wheels/), installed where missing
# Results (junit, nvidia-smi's raw outputs for a fixture, the table) go to $OUT (gpu_check_out).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
OUT=${OUT:-gpu_check_out}
WHEELS=${1:-gpu_wheels}
mkdir -p "$OUT"
SITE=${GPU_CHECK_SITE:-$OUT/site}     # where the carried wheels are installed (never the node's python)
need=$("$PY" benchmarks/gpu_check.py missing)
if [ -n "$need" ]; then
  echo "== this python lacks: $need; from $WHEELS"
  # shellcheck disable=SC2086
  "$PY" -m pip install -q --no-index --no-deps --no-compile --find-links "$WHEELS" --target "$SITE" $need \
    || echo "GPU check: could not install $need from $WHEELS (make them with benchmarks/gpu_wheels.sh)"
fi
echo "== tests/gpu"
# -o addopts=: the suite's pytest-xdist options (pytest.ini) need a plugin the node does not have
PYTHONPATH="$SITE:automation${PYTHONPATH:+:$PYTHONPATH}" GPU_CHECK_OUT="$OUT" \
  "$PY" -m pytest -o addopts= -p no:cacheprovider -rA tests/gpu --junitxml="$OUT/junit.xml" > "$OUT/pytest.log" 2>&1
tail -3 "$OUT/pytest.log"
echo "== GPU check ($("$PY" --version 2>&1), $(date -u +%Y-%m-%dT%H:%MZ))"
"$PY" benchmarks/gpu_check.py table "$OUT/junit.xml" | tee "$OUT/table.txt"
exit "${PIPESTATUS[0]}"
