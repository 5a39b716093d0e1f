#!/bin/bash
# Builds tools/gpu/cutlass_probe.cu, on any machine with nvcc (no GPU needed), into
# .gpu/cutlass_probe_cooperative and .gpu/cutlass_probe_pingpong (static CUDA runtime: they
# run on the GPU machine as they are; tools/gpu/check.sh runs them). The CUTLASS headers
# come from PyPI's nvidia-cutlass (pinned below; downloaded, not installed): the copy in
# the TVM wheel lacks the collective builders' .inl files. ~80 s a binary on 2 cores.
set -euo pipefail
CUTLASS=nvidia-cutlass==4.2.0.0
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: -d "$tmp" "$CUTLASS"
(cd "$tmp" && unzip -q nvidia_cutlass-*.whl 'cutlass_library/source/include/*')
mkdir -p .gpu
for variant in cooperative pingpong; do
  flag=""
  [ "$variant" = pingpong ] && flag=-DPINGPONG
  "$NVCC" -std=c++17 -O3 -DNDEBUG $flag -arch=sm_90a --expt-relaxed-constexpr \
    -I"$tmp/cutlass_library/source/include" -o ".gpu/cutlass_probe_$variant" tools/gpu/cutlass_probe.cu
  echo "built .gpu/cutlass_probe_$variant"
done
