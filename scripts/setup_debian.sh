#!/usr/bin/env bash
# Installs what torchfuse builds with on Debian 12, when it is missing (needs root for apt-get).
set -euo pipefail
need=()
[ -f /usr/lib/x86_64-linux-gnu/cmake/Torch/TorchConfig.cmake ] || [ -n "${TORCHFUSE_TORCH_PREFIX:-}" ] || need+=(libtorch-dev)
[ -d /usr/lib/x86_64-linux-gnu/cmake/spdlog ] || need+=(libspdlog-dev)
[ -d /usr/lib/x86_64-linux-gnu/cmake/GTest ] || need+=(libgtest-dev)
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
command -v g++ >/dev/null || need+=(g++)
if [ ${#need[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null; then
    echo "torchfuse: missing ${need[*]} and no apt-get to install them" >&2
    exit 1
  fi
  echo "torchfuse: installing ${need[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ ! -f /usr/local/cuda/include/nvrtc.h ] && ! command -v nvcc >/dev/null; then
  echo "torchfuse: the CUDA toolkit (NVRTC) is needed at /usr/local/cuda" >&2
  exit 1
fi
