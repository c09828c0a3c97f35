#!/usr/bin/env bash
# Builds torchfuse and runs its tests (GPU tests skip themselves without a CUDA device).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "${JOBS:-$(nproc)}" "$@"
