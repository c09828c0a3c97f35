#!/usr/bin/env bash
# Configures and builds torchfuse into ${BUILD_DIR:-build}. LibTorch comes from Debian's
# libtorch-dev, or from $TORCHFUSE_TORCH_PREFIX (e.g. a pip PyTorch's cmake prefix).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_debian.sh
BUILD_DIR=${BUILD_DIR:-build}
args=(-S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo})
[ -d /usr/local/cuda ] && args+=(-DCUDAToolkit_ROOT=/usr/local/cuda)
[ -n "${TORCHFUSE_TORCH_PREFIX:-}" ] && args+=(-DCMAKE_PREFIX_PATH="$TORCHFUSE_TORCH_PREFIX")
cmake "${args[@]}" >/dev/null
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" ${TARGETS:+--target $TARGETS}
