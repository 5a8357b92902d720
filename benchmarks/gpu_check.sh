#!/usr/bin/env bash
# The one script run on a lent GPU machine (docs/gpu.md): the GPU tests (tests/gpu: detect-gpu
# against torch, install-vllm's CUDA choice, the transformers backend on cuda in bfloat16 through
# LoadGen, an image as SquashFS reaching the GPU as a non-root uid) in the node's own python
# (CUDA, torch, transformers; no vLLM, no network), then a table of
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
TOOLS=${GPU_CHECK_TOOLS:-/tmp/gpu-check-tools}   # Charliecloud's runtime, where the node has none
if ! command -v ch-run > /dev/null && ls "$WHEELS"/debs/*.deb > /dev/null 2>&1; then
  echo "== this node has no ch-run; unpacking $WHEELS/debs into $TOOLS"
  mkdir -p "$TOOLS/bin" && chmod 755 "$TOOLS"
  for f in "$WHEELS"/debs/*.deb; do dpkg-deb -x "$f" "$TOOLS/root"; done
  for t in ch-run unsquashfs; do    # each loads the carried libraries, and only it
    printf '#!/bin/sh\nLD_LIBRARY_PATH='"'"'%s'"'"'${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec '"'"'%s'"'"' "$@"\n' \
      "$TOOLS/root/usr/lib/x86_64-linux-gnu:$TOOLS/root/lib/x86_64-linux-gnu" "$TOOLS/root/usr/bin/$t" > "$TOOLS/bin/$t"
    chmod 755 "$TOOLS/bin/$t"
  done
  export PATH="$TOOLS/bin:$PATH"
fi
[ -f "$WHEELS/image.sqfs" ] && GPU_CHECK_IMAGE=$(cd "$WHEELS" && pwd)/image.sqfs && export GPU_CHECK_IMAGE
# the node's facts the launcher reads (the driver's libraries), for a recorded fixture
{ echo "# ldconfig -p"; ldconfig -p; echo "# LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"; echo "# ls -l /dev/nvidia* /dev/fuse"
  ls -l /dev/nvidia* /dev/fuse 2>&1; echo "# user namespaces: $(cat /proc/sys/user/max_user_namespaces 2>&1)"
  echo "# $(command -v ch-run) $(USER=${USER:-root} ch-run --version 2>&1)"; } > "$OUT/node.txt" 2>&1
echo "== tests/gpu"
# -o addopts=: the suite's pytest-xdist options (pytest.ini) need a plugin the node does not have
PYTHONPATH="$SITE:automation${PYTHONPATH:+:$PYTHONPATH}" GPU_CHECK_OUT="$OUT" \
  "$PY" -m pytest -o addopts= -p no:cacheprovider -rA tests/gpu --junitxml="$OUT/junit.xml" > "$OUT/pytest.log" 2>&1
tail -3 "$OUT/pytest.log"
echo "== GPU check ($("$PY" --version 2>&1), $(date -u +%Y-%m-%dT%H:%MZ))"
"$PY" benchmarks/gpu_check.py table "$OUT/junit.xml" | tee "$OUT/table.txt"
exit "${PIPESTATUS[0]}"
