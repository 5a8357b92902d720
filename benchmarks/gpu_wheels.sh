#!/usr/bin/env bash
# What benchmarks/gpu_check.sh brings to a GPU node that lacks it (no network there). Run where PyPI
# and the apt mirror are reachable; carry DIR along (about 43 MB):
#   - the wheels: pytest and mlcommons-loadgen with their dependencies (benchmarks/gpu_check.py:
#     NEEDED), for the CPython versions a node may have, Linux x86_64;
#   - debs/: Charliecloud's runtime (ch-run and the libraries it loads) and squashfs-tools, unpacked
#     there by gpu_check.sh where the node has no ch-run;
#   - image.sqfs: an image for the SquashFS GPU test (tests/gpu/test_squashfs_gpu.py): Debian 12
#     minbase with python3 by mmdebstrap from this host's mirror at the image base's epoch, its
#     documentation, locales and manuals left out so that it fits the 64 MiB a lent node takes.
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
mkdir -p "$DIR/debs"
(cd "$DIR/debs" && apt-get download -q charliecloud-runtime libsquashfuse0 libfuse3-3 liblzo2-2 squashfs-tools \
  > /dev/null)
if [ ! -s "$DIR/image.sqfs" ]; then
  MIRROR=$(PYTHONPATH=automation python3 -c "from mlperf_llm.containers import base; print(base.host_mirror()[0])")
  EPOCH=$(PYTHONPATH=automation python3 -c "from mlperf_llm.containers import base; print(base.EPOCH)")
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  SOURCE_DATE_EPOCH=$EPOCH mmdebstrap -q --variant=minbase --include=python3 \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --format=directory bookworm "$tmp/root" "$MIRROR"
  mksquashfs "$tmp/root" "$DIR/image.sqfs.part" -comp xz -b 1M -noappend -no-progress -quiet
  mv "$DIR/image.sqfs.part" "$DIR/image.sqfs"
fi
du -sh "$DIR"
