#!/usr/bin/env bash
# Builds torchfuse and runs the demo (on a machine without a GPU it shows IR, groups and source).
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS=torchfuse_demo bash scripts/build.sh
"${BUILD_DIR:-build}"/examples/torchfuse_demo
