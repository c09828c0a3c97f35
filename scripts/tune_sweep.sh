#!/usr/bin/env bash
# Tuning runs on the GPU machine: times torchfuse alone on the suite once per TORCHFUSE_TUNE
# setting (codegen/tuning.h), in one process each, and prints each run's table.
#   bash scripts/tune_sweep.sh "" "pointwise_unroll=1" "row_cache=values,column_unroll=1"
# Uses ${BUILD_DIR:-build-gpu}; BENCH_ARGS adds torchfuse_bench options (e.g. --cases a,b).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-gpu}
for spec in "$@"; do
  echo "== TORCHFUSE_TUNE='$spec'"
  TORCHFUSE_TUNE="$spec" "$BUILD_DIR"/benchmarks/torchfuse_bench --torchfuse-only ${BENCH_ARGS:-} 2>&1 |
    grep -E 'geomean|copy|FAIL|error|^[a-z_]+(@[0-9]+)?(#[0-9]+)? +[0-9]' || echo "(no output)"
done
