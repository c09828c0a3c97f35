#!/usr/bin/env bash
# Nsight Compute counters for torchfuse's and torch.compile's kernels on suite cases, side by side.
# Needs ncu (the GPU machine's Firecracker runtime reads counters) and a built torchfuse_bench.
#   OUT=prof CASES=attn_softmax_mask,col_sum DTYPES=float32 bash scripts/profile_kernels.sh
# Writes $OUT/ncu_torchfuse_<case>_<dtype>.csv, $OUT/ncu_inductor.csv and $OUT/inductor_code.log
# (Inductor's generated Triton). Clocks are left alone (--clock-control none); caches are flushed
# between replays, so DRAM bytes are a kernel's own.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-prof_out}
BUILD_DIR=${BUILD_DIR:-build-gpu}
CASES=${CASES:-all}
DTYPES=${DTYPES:-float32,bfloat16}
NCU=${NCU:-$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)}
mkdir -p "$OUT"
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,\
launch__grid_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_static,\
launch__occupancy_limit_registers,sm__warps_active.avg.pct_of_peak_sustained_active,\
smsp__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,\
sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio
ncu_run() { "$NCU" --clock-control none --metrics "$METRICS" --csv --page raw "$@"; }
all_cases=$(python3 -c 'import sys; sys.path.insert(0, "scripts"); from bench_torch_compile import CASE_NAMES; print(",".join(CASE_NAMES))')
[ "$CASES" = all ] && CASES=$all_cases
for c in ${CASES//,/ }; do
  for d in ${DTYPES//,/ }; do
    # torchfuse kernels are named tf_<pattern>_<hash>. The first launches of the fused kernels are
    # the pre-timing check against eager: 4 launches cover the two-kernel cases twice.
    ncu_run -k "regex:^tf_" -c 4 "$BUILD_DIR"/benchmarks/torchfuse_bench --torchfuse-only --reps 1 \
      --cases "$c" --dtypes "$d" >"$OUT/ncu_torchfuse_${c}_$d.csv" 2>"$OUT/ncu_torchfuse_${c}_$d.err"
  done
done
TORCH_LOGS=output_code ncu_run --nvtx --nvtx-include "profile/" python3 scripts/inductor_cases.py \
  --cases "$CASES" --dtypes "$DTYPES" --calls 2 >"$OUT/ncu_inductor.csv" 2>"$OUT/inductor_code.log"
echo "profile_kernels: wrote $(ls "$OUT" | wc -l) files under $OUT"
