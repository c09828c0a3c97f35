#!/usr/bin/env python3
"""Kernel time per call of categories cases: torchfuse (under knob settings) against torch.compile.

At a model's batch 1 or 8 a norm or softmax kernel takes 1.5-5 us, and a per-call timer (the
categories benchmark's do_bench) measures the launch and the host around it instead. Here each
implementation runs 30 calls under torch.profiler, back to back with the L2 warm (as in a model,
where the GEMM before a norm just wrote its input), and the median over calls of the sum of the
call's kernel durations is reported, with the kernels per call and whether torchfuse matched
eager (compare_with_eager, float64 reference).

    python3 scripts/kernel_times.py --torchfuse-build build-gpu --cases add_layer_norm_b1,add_rms_norm_b8 \
        --tunes "row_fill=0;row_fill=2048" --dtypes bfloat16,float32
"""
import argparse
import os
import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_torch_compile as btc  # noqa: E402
import categories as cat  # noqa: E402


def kernel_us(call, calls=30, flush=None, trace=None):
    """Median over calls of the summed kernel durations of one call, and the kernels per call.

    flush: a buffer filled before each call (the L2 overwritten), its fill kernels not counted;
    trace: a path to write the profiler's Chrome trace to."""
    for _ in range(5):
        call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for i in range(calls):
            if flush is not None:
                flush.fill_(i & 255)
            call()
        torch.cuda.synchronize()
    if trace:
        p.export_chrome_trace(trace)
    events = sorted((e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                    key=lambda e: e.time_range.start)
    per_call = len(events) // calls
    durations = [e.time_range.end - e.time_range.start for e in events]
    # With a flush, each call's first kernel is the flush's fill (same stream, just before it):
    # dropped by position, not by name, so that a call's own fill kernels still count.
    skip = 1 if flush is not None else 0
    sums = [sum(durations[i * per_call + skip:(i + 1) * per_call]) for i in range(calls)]
    return statistics.median(sums), per_call - skip


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--torchfuse-build", required=True, metavar="DIR")
    ap.add_argument("--cases", required=True, help="comma-separated categories.py case names")
    ap.add_argument("--tunes", default="", help="';'-separated knob settings, each timed beside the defaults")
    ap.add_argument("--dtypes", default="bfloat16,float32")
    args = ap.parse_args()
    tfpy = btc.load_torchfuse(args.torchfuse_build)
    wanted = args.cases.split(",")
    tunes = [""] + [t for t in args.tunes.split(";") if t]
    with torch.no_grad():
        for dtype_name in args.dtypes.split(","):
            dtype = getattr(torch, dtype_name)
            for _, name, fn, specs in cat.CASES:
                if name not in wanted:
                    continue
                torch.manual_seed(0)
                inputs = [cat.make_input(s, dtype) for s in specs]
                compiled = torch.compile(btc.fresh_copy(fn))
                us, k = kernel_us(lambda: compiled(*inputs))
                line = f"{name:22s} {dtype_name:9s} compile {us:6.2f} ({k})"
                graph = torch.jit.script(btc.fresh_copy(fn)).graph
                for tune in tunes:
                    tf = tfpy.compile_graph(graph, tune) if tune else tfpy.compile_graph(graph)
                    us, k = kernel_us(lambda: tf(*inputs))
                    ok = tf.compare_with_eager(*inputs)[0]
                    line += f" | {tune or 'defaults'} {us:6.2f} ({k}){'' if ok else ' MISMATCH'}"
                print(line, flush=True)
                torch._dynamo.reset()


if __name__ == "__main__":
    main()
