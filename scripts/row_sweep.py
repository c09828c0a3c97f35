#!/usr/bin/env python3
"""Row kernels over a range of row lengths: torchfuse (under knob settings) against torch.compile.

Each op runs over rows x length = --elements (so every length moves the same bytes), random
inputs, torch.compile (default) and torchfuse (the Python binding of scripts/bench_torch_compile.py)
in the same process. Reported per call, in us: the kernel time under torch.profiler, median of 30
calls, with the L2 warm / with a 256 MB fill between calls; then the grid, block and registers of
each implementation's first kernel (from the profiler's trace) and whether torchfuse matched eager.

    python3 scripts/row_sweep.py --torchfuse-build build-gpu --lengths 32,64,128,1024 \
        --ops ln,rms,sm,sum --dtypes bfloat16 --tunes "row_min_threads=1;row_team_block=64"
"""
import argparse
import json
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_torch_compile as btc  # noqa: E402
import kernel_times  # noqa: E402


def layer_norm(x, w, b):
    return torch.layer_norm(x, [x.size(-1)], w, b, 1e-5)


def rms_norm(x, w):
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * w


def softmax(x):
    return torch.softmax(x, -1)


def row_sum(x):
    return x.float().sum(-1)


# name -> (function, tensor inputs: the rows, then weights of one row each)
OPS = {"ln": (layer_norm, 3), "rms": (rms_norm, 2), "sm": (softmax, 1), "sum": (row_sum, 1)}


def timed(call, flush):
    """Kernel us per call with the L2 warm and overwritten, and the first kernel's launch shape."""
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    warm, _ = kernel_times.kernel_us(call, trace=path)
    cold, _ = kernel_times.kernel_us(call, flush=flush)
    launch = ""
    for e in json.load(open(path))["traceEvents"]:
        if e.get("cat") == "kernel":
            a = e.get("args", {})
            launch = f"{a.get('grid', ['?'])[0]}x{a.get('block', ['?'])[0]} r{a.get('registers per thread')}"
            break
    os.remove(path)
    return warm, cold, launch


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--torchfuse-build", required=True, metavar="DIR")
    ap.add_argument("--lengths", default="32,64,128,256,512,1024")
    ap.add_argument("--elements", type=int, default=1 << 24)
    ap.add_argument("--ops", default="ln,rms,sm,sum", help="comma-separated: " + ",".join(OPS))
    ap.add_argument("--dtypes", default="bfloat16")
    ap.add_argument("--tunes", default="", help="';'-separated knob settings, each timed beside the defaults")
    args = ap.parse_args()
    tfpy = btc.load_torchfuse(args.torchfuse_build)
    tunes = [""] + [t for t in args.tunes.split(";") if t]
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    with torch.no_grad():
        for dtype_name in args.dtypes.split(","):
            dtype = getattr(torch, dtype_name)
            for op in args.ops.split(","):
                fn, n = OPS[op]
                for length in (int(v) for v in args.lengths.split(",")):
                    rows = args.elements // length
                    torch.manual_seed(0)
                    inputs = [torch.randn(rows, length, device="cuda", dtype=dtype)]
                    inputs += [torch.randn(length, device="cuda", dtype=dtype) for _ in range(n - 1)]
                    torch._dynamo.reset()
                    compiled = torch.compile(btc.fresh_copy(fn))
                    warm, cold, info = timed(lambda: compiled(*inputs), flush)
                    line = f"{op:3s} {dtype_name:8s} {rows:7d} x {length:<5d} compile {warm:6.2f} / {cold:6.2f} ({info})"
                    graph = torch.jit.script(btc.fresh_copy(fn)).graph
                    for tune in tunes:
                        tf = tfpy.compile_graph(graph, tune)
                        warm, cold, info = timed(lambda: tf(*inputs), flush)
                        ok = tf.compare_with_eager(*inputs)[0]
                        line += f" | {tune or 'defaults'} {warm:6.2f} / {cold:6.2f} ({info}){'' if ok else ' MISMATCH'}"
                    print(line, flush=True)


if __name__ == "__main__":
    main()
