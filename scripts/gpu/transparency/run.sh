#!/usr/bin/env bash
# Transparency under contention on a GPU machine: builds the CUDA programs, then runs run.py
# (see its documentation for the roles and the records), the attribute probe first.
#
#   scripts/gpu/transparency/run.sh --out DIR [run.py options…]
#
# Needs target/release/baton and libbaton_interposer.so beside it (built on a machine with
# Rust: `cargo build --release -p baton-cli -p baton-interposer`), nvcc, and Python with
# PyTorch, torchvision, transformers, CuPy, JAX and Triton. CENSUS=1 also counts, with CUPTI,
# the driver functions each workload calls natively.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
BIN=${TRANSPARENCY_BIN:-$(mktemp -d)}
if [ ! -x "$BIN/contender" ] || [ ! -x "$BIN/attribute_probe" ]; then
  nvcc -O2 -arch=sm_90 -o "$BIN/cuda_legacy" -DNAME='"cuda-legacy"' "$HERE/cuda_features.cu" &
  nvcc -O2 -arch=sm_90 --default-stream per-thread -o "$BIN/cuda_ptds" -DNAME='"cuda-ptds"' "$HERE/cuda_features.cu" &
  nvcc -O2 -arch=sm_90 -o "$BIN/contender" "$HERE/contender.cu" &
  nvcc -O2 -arch=sm_90 -o "$BIN/attribute_probe" "$HERE/attribute_probe.cu" -lcuda &
  wait
  for b in cuda_legacy cuda_ptds contender attribute_probe; do [ -x "$BIN/$b" ] || { echo "building $b failed" >&2; exit 1; }; done
fi
extra=()
if [ "${CENSUS:-0}" = 1 ] && [ ! -f "$BIN/launch_counter.so" ]; then
  CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc)")")}
  inc=$(ls -d "$CUDA_HOME"/extras/CUPTI/include "$CUDA_HOME"/targets/x86_64-linux/include 2>/dev/null | head -1 || true)
  lib=$(dirname "$(find "$CUDA_HOME" /usr /opt -name 'libcupti.so*' 2>/dev/null | head -1 || true)")
  gcc -O2 -shared -fPIC -I"$inc" -o "$BIN/launch_counter.so" "$ROOT/scripts/gpu/apps/launch_counter.c" \
    -L"$lib" -lcupti -Wl,-rpath,"$lib"
fi
[ "${CENSUS:-0}" = 1 ] && extra+=(--census "$BIN/launch_counter.so")
cd "$ROOT"
exec python3 "$HERE/run.py" --bin "$BIN" --probe "$BIN/attribute_probe" "${extra[@]}" "$@"
