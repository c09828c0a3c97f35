#!/usr/bin/env python3
"""Where a real model's GPU time goes, kernel by kernel: torchfuse against torch.compile.

Reads OUT/real_models.json (scripts/real_models.py) and prints, per model row, a markdown table of
the kernel names by summed GPU time in one call (the profiler's per-name sums that real_models.py
keeps: the 25 costliest names of each implementation), side by side, and the non-GEMM kernels of
one implementation that the other does not run. Needs no GPU and no PyTorch.

    python3 scripts/kernel_breakdown.py OUT/real_models.json [--models convnext] [--top 15]
"""
import argparse
import json
import sys


def table(row, top):
    tf = row.get("torchfuse_kernels") or {}
    tc = row.get("torch_compile_kernels") or {}
    lines = [f"### {row['model']} {row['dtype']} batch {row['batch']}: GPU us "
             f"torchfuse {tf.get('gpu_us', float('nan')):.1f}, torch.compile {tc.get('gpu_us', float('nan')):.1f}",
             "", "| torchfuse kernel | n | us | torch.compile kernel | n | us |", "|---|---|---|---|---|---|"]
    a, b = tf.get("by_time", [])[:top], tc.get("by_time", [])[:top]
    for i in range(max(len(a), len(b))):
        left = a[i] if i < len(a) else ["", "", ""]
        right = b[i] if i < len(b) else ["", "", ""]
        lines.append(f"| {left[0][:60]} | {left[1]} | {left[2]} | {right[0][:60]} | {right[1]} | {right[2]} |")
    names_tf = {n for n, _ in tf.get("all_non_gemm", [])}
    names_tc = {n for n, _ in tc.get("all_non_gemm", [])}
    only = [(n, c) for n, c in tf.get("all_non_gemm", []) if not n.startswith("tf_") and n in names_tf - names_tc]
    if only:
        lines += ["", "ATen or library kernels (non-GEMM) that torchfuse runs and torch.compile does not:"]
        lines += [f"- {c} x {n[:110]}" for n, c in only]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json")
    ap.add_argument("--models", default="", help="comma-separated model names (default: every row)")
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    with open(args.json) as f:
        data = json.load(f)
    rows = data["rows"] if isinstance(data, dict) else data
    wanted = set(filter(None, args.models.split(",")))
    out = [table(r, args.top) for r in rows if not wanted or r["model"] in wanted]
    if not out:
        sys.exit("no rows match")
    print("\n\n".join(out))


if __name__ == "__main__":
    main()
