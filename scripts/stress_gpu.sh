#!/usr/bin/env bash
# Concurrency under load on a CUDA machine, for minutes: torchfuse_stress (tests/stress_gpu.cpp)
# calls one compiled module from many threads on several streams while new input signatures
# arrive, checks every result against eager, and reports calls, specializations and forward()
# latencies (known shapes while new ones compile, and not). Builds first when the binary is missing
# (as scripts/gpu_check.sh does); the log goes to ${OUT:-gpu_out}/stress.log.
#   bash scripts/stress_gpu.sh                         # 300 s, 16 threads, 8 streams
#   STRESS_SECONDS=900 STRESS_THREADS=32 bash scripts/stress_gpu.sh --seed 7
# Extra arguments go to torchfuse_stress (--seed K, --max-specializations M, ...).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-gpu}
OUT=${OUT:-gpu_out}
mkdir -p "$OUT"
if [ ! -x "$BUILD_DIR/tests/torchfuse_stress" ]; then
  if [ -n "${TORCHFUSE_CXX:-}" ] || [ -x /usr/bin/g++ ]; then export CXX=${TORCHFUSE_CXX:-/usr/bin/g++}; fi
  export TORCHFUSE_TORCH_PREFIX=${TORCHFUSE_TORCH_PREFIX:-$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')}
  BUILD_DIR=$BUILD_DIR TARGETS=torchfuse_stress bash scripts/build.sh >"$OUT/stress_build.log" 2>&1 || {
    tail -30 "$OUT/stress_build.log"
    exit 1
  }
fi
if [ -z "${TORCHFUSE_CACHE_DIR:-}" ]; then
  # A fresh disk cache: every signature compiles with NVRTC while the other threads run.
  TORCHFUSE_CACHE_DIR=$(mktemp -d)
  export TORCHFUSE_CACHE_DIR
  trap 'rm -rf "$TORCHFUSE_CACHE_DIR"' EXIT
fi
"$BUILD_DIR/tests/torchfuse_stress" --seconds "${STRESS_SECONDS:-300}" --threads "${STRESS_THREADS:-16}" \
  --streams "${STRESS_STREAMS:-8}" "$@" 2>&1 | tee "$OUT/stress.log"
status=${PIPESTATUS[0]}
exit "$status"
