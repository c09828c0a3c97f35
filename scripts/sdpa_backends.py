#!/usr/bin/env python3
"""ATen's attention backends inside a CUDA graph, at a model's attention shapes.

A graph of `--layers` x (QKV projection GEMM, scaled_dot_product_attention) is captured once per
backend (torch.nn.attention.sdpa_kernel picking cuDNN, flash or memory-efficient) and replayed:
microseconds per replay (median of 7 timings of 50 replays, CUDA events), and from one profiled
replay the kernels, their summed duration and the attention kernels' share. At batch 1 a model
with CUDA graphs is bound by its kernels and the gaps between them: a backend whose kernel is
faster can still cost more per replay (cuDNN's comes with a memset node and a later start).

    python3 scripts/sdpa_backends.py                      # BERT, ViT and Llama-style shapes, bf16
    python3 scripts/sdpa_backends.py --shapes 1,12,128,64 --causal --dtype float16
"""
import argparse
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

# name: (batch, heads, tokens, head dim, causal)
SHAPES = {
    "bert_b1": (1, 12, 128, 64, False),
    "bert_b8": (8, 12, 128, 64, False),
    "vit_b1": (1, 12, 197, 64, False),
    "llama_b1": (1, 32, 128, 64, True),
    "llama_b8": (8, 32, 128, 64, True),
}
BACKENDS = (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION)


def is_gemm(name):
    n = name.lower()
    return "gemm" in n or "nvjet" in n or "memset" in n


def measure(shape, dtype, backend, layers):
    """One backend at one shape: a line of results, or why it could not run."""
    B, H, T, D, causal = shape
    C = H * D
    torch.manual_seed(0)
    x = torch.randn(B * T, C, device="cuda", dtype=dtype)
    weights = [torch.randn(C, 3 * C, device="cuda", dtype=dtype) * 0.02 for _ in range(layers)]

    def forward():
        h = x
        for w in weights:
            qkv = (h @ w).view(B, T, 3, H, D).permute(2, 0, 3, 1, 4)
            o = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=causal)
            h = o.transpose(1, 2).reshape(B * T, C)
        return h

    with sdpa_kernel([backend]):
        try:
            forward()
        except RuntimeError as e:
            return f"unsupported ({str(e).splitlines()[0][:80]})"
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                forward()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            forward()
    for _ in range(20):
        graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(7):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(50):
            graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1000 / 50)
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        graph.replay()
        torch.cuda.synchronize()
    events = [e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    total = sum(e.time_range.end - e.time_range.start for e in events)
    attention = sum(e.time_range.end - e.time_range.start for e in events if not is_gemm(e.name))
    return (f"replay {statistics.median(times):7.1f} us | {len(events)} kernels, sum {total:6.1f} us | "
            f"attention {attention:6.1f} us ({attention / layers:4.1f} a layer)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=",".join(SHAPES),
                    help="names from the script's table, or one B,H,T,D (with --causal)")
    ap.add_argument("--causal", action="store_true", help="for a B,H,T,D shape")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--layers", type=int, default=12)
    args = ap.parse_args()
    dtype = getattr(torch, args.dtype)
    if args.shapes[0].isdigit():
        shapes = {args.shapes: tuple(int(v) for v in args.shapes.split(",")) + (args.causal,)}
    else:
        shapes = {name: SHAPES[name] for name in args.shapes.split(",")}
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {args.dtype}, {args.layers} layers")
    for name, shape in shapes.items():
        print(f"== {name} {shape}", flush=True)
        for backend in BACKENDS:
            print(f"   {backend.name:20s} {measure(shape, dtype, backend, args.layers)}", flush=True)


if __name__ == "__main__":
    main()
