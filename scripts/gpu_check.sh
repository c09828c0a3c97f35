#!/usr/bin/env bash
# On a CUDA machine with pip PyTorch: builds torchfuse against it, runs the GPU tests, the demo and
# the benchmark, writing logs under ${OUT:-gpu_out}. Prints a summary last.
#   bash scripts/gpu_check.sh            # tests + demo + compile times + suite benchmark (torchfuse side)
#   BENCH=0 bash scripts/gpu_check.sh    # skip the benchmark
#   COMPILE_TIMES=0 ...                  # skip the cold/warm compile times
#   STRESS_SECONDS=600 ...               # the concurrency stress for 10 minutes (default 20 s;
#                                        # 0 skips it; scripts/stress_gpu.sh runs it alone)
# Compile times: torchfuse_bench --compile-time --no-suite runs twice, in two processes sharing a
# fresh, empty $TORCHFUSE_CACHE_DIR: cold (NVRTC compiles everything) then warm (kernels come from
# the disk cache). Logs: $OUT/compile_cold.log, $OUT/compile_warm.log; COMPILE_DTYPES picks the
# dtypes (default float32,bfloat16).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu_out}
mkdir -p "$OUT"
# libtorchfuse shares a process with LibTorch, which uses the shared libstdc++: it must not carry
# a static copy. The GPU machine's $CXX (/opt/gcc/bin/g++) links libstdc++ statically, and a
# torchfuse built with it crashes in a Python process (its own locale facets against the shared
# library's); the system compiler links it dynamically. TORCHFUSE_CXX picks another.
if [ -n "${TORCHFUSE_CXX:-}" ] || [ -x /usr/bin/g++ ]; then
  export CXX=${TORCHFUSE_CXX:-/usr/bin/g++}
fi
export TORCHFUSE_TORCH_PREFIX=${TORCHFUSE_TORCH_PREFIX:-$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')}
export BUILD_DIR=${BUILD_DIR:-build-gpu}
export TORCHFUSE_CACHE_DIR=${TORCHFUSE_CACHE_DIR:-$PWD/$BUILD_DIR/kernel-cache}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
if ! bash scripts/build.sh >"$OUT/build.log" 2>&1; then
  tail -50 "$OUT/build.log"
  echo "SUMMARY: build FAILED"
  exit 1
fi
status=0
if nm -D --defined-only "$BUILD_DIR/libtorchfuse.so" 2>/dev/null | grep -q " _ZNSt6locale7classicEv"; then
  echo "libtorchfuse.so defines std::locale::classic(): ${CXX:-c++} linked a static libstdc++ into it" | tee -a "$OUT/gpu.txt"
  status=1
fi
# The test binaries run side by side (each its own process; the GPU ones share the device), so
# that the whole check fits a 10-minute call on the GPU machine.
pids=()
run_test() {  # name, then the command
  local name=$1
  shift
  "$@" --gtest_brief=1 >"$OUT/$name.log" 2>&1 &
  pids+=($!)
}
run_test cpu_tests "$BUILD_DIR"/tests/torchfuse_cpu_tests
run_test gpu_tests "$BUILD_DIR"/tests/torchfuse_gpu_tests
run_test gpu_reduction_tests "$BUILD_DIR"/tests/torchfuse_gpu_reduction_tests
# NVTX ranges through NVTX's injection interface: the capture library is the tool (as under ctest).
run_test nvtx_tests env NVTX_INJECTION64_PATH="$(cd "$BUILD_DIR" && pwd)/tests/libtorchfuse_nvtx_capture.so" \
  "$BUILD_DIR"/tests/torchfuse_nvtx_tests
run_test replay_tests "$BUILD_DIR"/tests/torchfuse_replay_tests
run_test cli_tests "$BUILD_DIR"/tests/torchfuse_cli_tests
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
bash scripts/check_layers.sh >"$OUT/layers.log" 2>&1 || status=1
if [ "${STRESS_SECONDS:-20}" != 0 ]; then
  "$BUILD_DIR"/tests/torchfuse_stress --seconds "${STRESS_SECONDS:-20}" --threads "${STRESS_THREADS:-8}" \
    --streams "${STRESS_STREAMS:-4}" >"$OUT/stress.log" 2>&1 || status=1
  # The same with CUDA graphs: captures and replays from every thread and stream.
  "$BUILD_DIR"/tests/torchfuse_stress --seconds "${STRESS_SECONDS:-20}" --threads "${STRESS_THREADS:-8}" \
    --streams "${STRESS_STREAMS:-4}" --cuda-graphs >"$OUT/stress_graphs.log" 2>&1 || status=1
  # Both again with programmatic dependent launch (runtime/programmatic_launch.h): kernels that
  # start early and wait for the one before them.
  TORCHFUSE_PDL=1 "$BUILD_DIR"/tests/torchfuse_stress --seconds "${STRESS_SECONDS:-20}" --threads "${STRESS_THREADS:-8}" \
    --streams "${STRESS_STREAMS:-4}" >"$OUT/stress_pdl.log" 2>&1 || status=1
  TORCHFUSE_PDL=1 "$BUILD_DIR"/tests/torchfuse_stress --seconds "${STRESS_SECONDS:-20}" --threads "${STRESS_THREADS:-8}" \
    --streams "${STRESS_STREAMS:-4}" --cuda-graphs >"$OUT/stress_graphs_pdl.log" 2>&1 || status=1
fi
"$BUILD_DIR"/examples/torchfuse_demo >"$OUT/demo.log" 2>&1 || status=1
if [ "${COMPILE_TIMES:-1}" = 1 ] && [ -x "$BUILD_DIR"/benchmarks/torchfuse_bench ]; then
  compile_cache=$(mktemp -d)
  for run in cold warm; do
    TORCHFUSE_CACHE_DIR="$compile_cache" "$BUILD_DIR"/benchmarks/torchfuse_bench --compile-time --no-suite --cases all \
      --dtypes "${COMPILE_DTYPES:-float32,bfloat16}" >"$OUT/compile_$run.log" 2>&1 || status=1
  done
  rm -rf "$compile_cache"
fi
if [ "${BENCH:-1}" = 1 ] && [ -x "$BUILD_DIR"/benchmarks/torchfuse_bench ]; then
  "$BUILD_DIR"/benchmarks/torchfuse_bench ${BENCH_ARGS:-} --json "$OUT/torchfuse_bench.json" >"$OUT/bench.log" 2>&1 || status=1
fi
echo "== summary =="
cat "$OUT/gpu.txt"
for f in cpu_tests gpu_tests gpu_reduction_tests nvtx_tests replay_tests cli_tests; do
  echo "$f: $(grep -E '^\[  (PASSED|FAILED)  \]|tests? ran' "$OUT/$f.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]' "$OUT/$f.log" | head -20
done
echo "layers: $(tail -1 "$OUT/layers.log")"
[ -f "$OUT/stress.log" ] && sed -n '/^torchfuse_stress: [0-9]/,$p' "$OUT/stress.log"
[ -f "$OUT/stress_graphs.log" ] && sed -n '/^torchfuse_stress: [0-9]/,$p' "$OUT/stress_graphs.log"
for f in stress_pdl stress_graphs_pdl; do
  [ -f "$OUT/$f.log" ] && echo "$f: $(sed -n '/^torchfuse_stress: [0-9]/,$p' "$OUT/$f.log" | tr '\n' ' ')"
done
echo "demo: $(tail -1 "$OUT/demo.log")"
for run in cold warm; do
  [ -f "$OUT/compile_$run.log" ] || continue
  echo "-- compile() to first result, $run process --"
  sed -n '/^Compile time/,/^(the first row/p' "$OUT/compile_$run.log" | grep -v '^(the first row'
  grep -E '^torchfuse_bench|no CUDA' "$OUT/compile_$run.log"
done
[ -f "$OUT/bench.log" ] && tail -40 "$OUT/bench.log"
echo "SUMMARY: $([ $status = 0 ] && echo ALL PASSED || echo FAILURES)"
exit $status
