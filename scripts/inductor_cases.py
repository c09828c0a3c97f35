#!/usr/bin/env python3
"""Runs torch.compile on chosen suite cases a few times, for a profiler (ncu) to look at.

    TORCH_LOGS=output_code python3 scripts/inductor_cases.py --cases col_sum,attn_softmax_mask --dtypes float32

prints Inductor's generated Triton code (with TORCH_LOGS=output_code) and launches each compiled case
--calls times after warm-up, so `ncu -k regex:triton` sees the kernels torch.compile really runs.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_torch_compile import CASES, compiled  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="all")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--calls", type=int, default=3)
    args = ap.parse_args()
    wanted = None if args.cases == "all" else set(args.cases.split(","))
    for dtype_name in args.dtypes.split(","):
        dtype = getattr(torch, dtype_name)
        for name, fn, shapes in CASES:
            if wanted is not None and name not in wanted:
                continue
            torch.manual_seed(0)
            inputs = [torch.randn(s, device="cuda", dtype=dtype) for s in shapes]
            call = compiled(fn, None)
            for _ in range(5):  # compile, autotune
                call(*inputs)
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_push("profile")  # scripts/profile_kernels.sh filters on it
            for _ in range(args.calls):
                call(*inputs)
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
            print(f"ran {name} {dtype_name}", flush=True)


if __name__ == "__main__":
    main()
