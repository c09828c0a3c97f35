#!/usr/bin/env python3
"""The categories benchmark (issue 22): the graph shapes real models bring, beside the suite.

Each category is a handful of small TorchScript functions, at sizes a transformer or CNN gives
them, never tuned to one shape: views and layout ops inside chains, reductions over leading and
middle dims, transposed inputs, size arithmetic, short rows, broadcasts, and the non-GEMM work
around attention. Every case runs eager, torch.compile (default mode) and torchfuse (the
torchfuse_py binding, compiling the case's torch.jit.script graph) in one process by one timer
(triton's do_bench: median, L2 flushed), with CUDA kernels per call from torch.profiler, and
torchfuse checked by compare_with_eager (float64 reference).

    python3 scripts/categories.py --torchfuse-build build-gpu --json cat.json --out cat.md

Geometric means of torchfuse's speed-up over torch.compile per category and dtype close the report.
A case torchfuse runs wrong (compare_with_eager fails) counts as no speed-up (it is listed, and
left out of the mean, with the reason).
"""

import argparse
import json
import math
import os
import sys
from typing import List

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_torch_compile as btc  # noqa: E402  (the suite's timer, kernel counter and binding)


# ---- views and layout ops inside chains ----

def head_split_scale(x):
    # [B, T, C] -> [B, H, T, D], scaled: a q projection's output on its way to attention.
    b, t, c = x.size(0), x.size(1), x.size(2)
    return (x.view(b, t, 16, c // 16).transpose(1, 2) * 0.125).contiguous()


def head_merge_residual(a, r):
    # [B, H, T, D] -> [B, T, C], plus a residual: attention's output before o_proj's residual add.
    b, h, t, d = a.size(0), a.size(1), a.size(2), a.size(3)
    return a.transpose(1, 2).reshape(b, t, h * d) + r


def rope(q, cos, sin):
    half = q.size(-1) // 2
    rotated = torch.cat((-q[..., half:], q[..., :half]), dim=-1)
    return q * cos + rotated * sin


def chunk_swiglu(x):
    a, b = x.chunk(2, dim=-1)
    return torch.nn.functional.silu(a) * b


def mask_fill_softmax(s, mask):
    return torch.softmax(s.masked_fill(mask[:, None, None, :] == 0, -10000.0), dim=-1)


# ---- reductions over leading and middle dims ----

def softmax_dim1(x):
    return torch.softmax(x, dim=1)


def sum_middle(x):
    return x.sum(1)


def sum_dim0(x):
    return (x * 2.0).sum(0)


def mean_var_dim1(x):
    mu = x.mean(1, keepdim=True)
    var = x.var(1, keepdim=True, unbiased=False)
    return (x - mu) * torch.rsqrt(var + 1e-5)


def center_dim0(x):
    # A column mean broadcast back: few columns (4096) over long ones (16384 rows).
    return x - x.mean(0, keepdim=True)


def softmax_dim0(x):
    return torch.softmax(x, dim=0)


def log_softmax_dim0(x):
    return torch.log_softmax(x, dim=0)


# ---- transposed inputs ----

def sigmoid_t_mul(x, y):
    return torch.sigmoid(x.t()) * y


def add_transposed_4d(x, y):
    return torch.relu(x.transpose(1, 2) + y)


def rowsum_of_transposed(x):
    return torch.softmax(x.t(), dim=-1)


# ---- size arithmetic ----

def layer_norm_sizes(x, w, b):
    return torch.layer_norm(x, [x.size(-1)], w, b, 1e-5)


def view_sizes_gelu(x):
    b, t, c = x.size(0), x.size(1), x.size(2)
    y = torch.nn.functional.gelu(x.view(b * t, c) * 1.702)
    return y.view(b, t, c) + x


# ---- short rows ----

def softmax_77(x):
    return torch.softmax(x * 0.125, dim=-1)


def layer_norm_64(x, w, b):
    return torch.layer_norm(x, [64], w, b, 1e-5)


# ---- broadcasts ----

def channel_affine(x, w, b):
    # A CNN's per-channel scale and shift on NCHW, then an activation.
    return torch.relu(x * w[None, :, None, None] + b[None, :, None, None])


def row_col_broadcast(x, r, c):
    return torch.tanh(x + r[:, None] * c[None, :])


# ---- the non-GEMM work around attention ----

def scaled_mask_softmax(s, mask):
    return torch.softmax(s * 0.125 + mask, dim=-1)


def bias_gelu_residual(x, b, r):
    return torch.nn.functional.gelu(x + b) + r


def rmsnorm_weight(x, w):
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    return w * y.to(x.dtype)


# ---- a model's rows at batch 1 and 8 (128 tokens): few rows, hot from the GEMM before ----
# (Kernels of 1.5-5 us: a per-call timer measures their launch and the host around it;
# scripts/kernel_times.py compares the kernels themselves.)

def add_layer_norm(x, r, w, b):
    # BERT's residual add and layer norm; the sum is a second output (the next residual).
    h = x + r
    return torch.layer_norm(h, [h.size(-1)], w, b, 1e-12), h


def add_rms_norm(x, r, w):
    # Llama's residual add and RMS norm, in float32 inside, as transformers writes it.
    h = x + r
    hf = h.float()
    y = hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + 1e-5)
    return w * y.to(x.dtype), h


# ---- a CNN's and a UNet's per-channel norms (passes/decompose_norms.cpp) ----

def batch_norm_relu(x, w, b, rm, rv):
    # Inference batch norm (running statistics) and its activation, as a pre-activation block has it.
    return torch.relu(torch.batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5, True))


def batch_norm_add_relu(x, r, w, b, rm, rv):
    return torch.relu(torch.batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5, True) + r)


def group_norm_silu(x, w, b):
    # A diffusion UNet's resnet block: GroupNorm(32) then SiLU.
    return torch.nn.functional.silu(torch.group_norm(x, 32, w, b, 1e-5, True))


def instance_norm_relu(x, w, b):
    return torch.relu(torch.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, True))


# ---- ops that depend on an element's index (passes/spell_index_ops.h) ----

def argmax_vocab(x):
    # Greedy decoding: the next token of each sequence from its logits, after a temperature.
    return torch.argmax(x / 0.7, -1)


def softmax_max_index(x):
    # A classifier's confidence and class.
    p = torch.softmax(x, -1)
    v, i = torch.max(p, -1)
    return v, i


def triu_scores_softmax(s):
    return torch.softmax(torch.triu(s * 0.125, 1), -1)


def repeat_interleave_heads(k):
    # Grouped heads repeated for attention as some models spell it (8 KV heads for 32 queries).
    return torch.repeat_interleave(k * 1.0, 4, 1)


# ---- scans (cumsum: the row schedule's team scans) ----

def cumsum_position_ids(m):
    # Position ids from a left-padded attention mask, as Hugging Face's generate() builds them.
    return (m.cumsum(-1) - 1).masked_fill(m == 0, 1)


def cumsum_scaled(x):
    # A running sum with a prologue and an epilogue.
    return torch.cumsum(torch.relu(x) * 0.5, -1) + 1.0


def top_p_probs(x):
    # A nucleus sampler's cumulative probabilities over sorted logits (the sort stays in ATen), over
    # a vocabulary: rows longer than registers keep, scanned in steps of a block. (Not compared with
    # top_p here: a comparison at the threshold compares two orders of rounding, and an element a
    # rounding from 0.9 flips.)
    return torch.softmax(x / 0.7, -1).cumsum(-1)


def randn(*shape):
    return ("randn", shape)


def positive(*shape):
    return ("positive", shape)


def mask01(*shape):
    return ("mask01", shape)


# (category, name, function, inputs): inputs are randn in the dtype, 0/1 masks in the dtype, or
# positive values (rand + 0.5: a running variance).
CASES = [
    ("views", "head_split_scale", head_split_scale, [randn(8, 1024, 1024)]),
    ("views", "head_merge_residual", head_merge_residual, [randn(8, 16, 1024, 64), randn(8, 1024, 1024)]),
    ("views", "rope", rope, [randn(8, 32, 1024, 64), randn(1, 1, 1024, 64), randn(1, 1, 1024, 64)]),
    ("views", "chunk_swiglu", chunk_swiglu, [randn(8192, 2 * 2816)]),
    ("views", "mask_fill_softmax", mask_fill_softmax, [randn(8, 12, 512, 512), mask01(8, 512)]),
    ("reduce_dims", "softmax_dim1", softmax_dim1, [randn(64, 512, 256)]),
    ("reduce_dims", "sum_middle", sum_middle, [randn(64, 512, 256)]),
    ("reduce_dims", "sum_dim0", sum_dim0, [randn(512, 64, 256)]),
    ("reduce_dims", "mean_var_dim1", mean_var_dim1, [randn(32, 256, 1024)]),
    ("reduce_dims", "log_softmax_dim0", log_softmax_dim0, [randn(1000, 8192)]),
    ("reduce_dims", "center_dim0_tall", center_dim0, [randn(16384, 4096)]),
    ("reduce_dims", "softmax_dim0_tall", softmax_dim0, [randn(16384, 2048)]),
    ("transposed", "sigmoid_t_mul", sigmoid_t_mul, [randn(4096, 8192), randn(8192, 4096)]),
    ("transposed", "add_transposed_4d", add_transposed_4d, [randn(8, 16, 1024, 64), randn(8, 1024, 16, 64)]),
    ("transposed", "softmax_of_transposed", rowsum_of_transposed, [randn(4096, 4096)]),
    ("size_arith", "layer_norm_sizes", layer_norm_sizes, [randn(8, 1024, 1024), randn(1024), randn(1024)]),
    ("size_arith", "view_sizes_gelu", view_sizes_gelu, [randn(8, 1024, 3072)]),
    ("short_rows", "softmax_77", softmax_77, [randn(8 * 12 * 77, 77)]),
    ("short_rows", "layer_norm_64", layer_norm_64, [randn(262144, 64), randn(64), randn(64)]),
    ("broadcast", "channel_affine", channel_affine, [randn(32, 256, 56, 56), randn(256), randn(256)]),
    ("broadcast", "row_col_broadcast", row_col_broadcast, [randn(8192, 4096), randn(8192), randn(4096)]),
    ("attention_nbhd", "scaled_mask_softmax", scaled_mask_softmax, [randn(8, 12, 1024, 1024), randn(8, 1, 1, 1024)]),
    ("attention_nbhd", "bias_gelu_residual", bias_gelu_residual, [randn(8192, 3072), randn(3072), randn(8192, 3072)]),
    ("attention_nbhd", "rmsnorm_weight", rmsnorm_weight, [randn(8192, 2048), randn(2048)]),
    ("model_rows", "add_layer_norm_b1", add_layer_norm, [randn(1, 128, 768), randn(1, 128, 768), randn(768), randn(768)]),
    ("model_rows", "add_layer_norm_b8", add_layer_norm, [randn(8, 128, 768), randn(8, 128, 768), randn(768), randn(768)]),
    ("model_rows", "add_rms_norm_b1", add_rms_norm, [randn(1, 128, 2048), randn(1, 128, 2048), randn(2048)]),
    ("model_rows", "add_rms_norm_b8", add_rms_norm, [randn(8, 128, 2048), randn(8, 128, 2048), randn(2048)]),
    ("model_rows", "softmax_heads_b1", softmax_77, [randn(1, 12, 128, 128)]),
    ("index_ops", "argmax_vocab", argmax_vocab, [randn(64, 32000)]),
    ("index_ops", "softmax_max_index", softmax_max_index, [randn(8192, 1000)]),
    ("index_ops", "triu_scores_softmax", triu_scores_softmax, [randn(8, 12, 512, 512)]),
    ("index_ops", "repeat_interleave_heads", repeat_interleave_heads, [randn(8, 8, 1024, 128)]),
    ("scans", "cumsum_position_ids", cumsum_position_ids, [mask01(256, 4096)]),
    ("scans", "cumsum_scaled", cumsum_scaled, [randn(4096, 4096)]),
    ("scans", "top_p_probs", top_p_probs, [randn(64, 32000)]),
    # A decoding step's sampler: one row of a Llama 3 vocabulary.
    ("scans", "top_p_probs_one_row", top_p_probs, [randn(1, 128256)]),
    ("norms", "batch_norm_relu", batch_norm_relu,
     [randn(32, 256, 56, 56), randn(256), randn(256), randn(256), positive(256)]),
    ("norms", "batch_norm_add_relu", batch_norm_add_relu,
     [randn(32, 256, 56, 56), randn(32, 256, 56, 56), randn(256), randn(256), randn(256), positive(256)]),
    ("norms", "group_norm_silu_unet", group_norm_silu, [randn(2, 320, 64, 64), randn(320), randn(320)]),
    ("norms", "group_norm_silu_b8", group_norm_silu, [randn(8, 640, 32, 32), randn(640), randn(640)]),
    ("norms", "instance_norm_relu", instance_norm_relu, [randn(8, 64, 128, 128), randn(64), randn(64)]),
]
CATEGORIES = list(dict.fromkeys(c for c, _, _, _ in CASES))


def make_input(spec, dtype):
    kind, shape = spec
    if kind == "mask01":
        return (torch.rand(shape, device="cuda") > 0.2).to(dtype)
    if kind == "positive":  # a running variance
        return (torch.rand(shape, device="cuda") + 0.5).to(dtype)
    return torch.randn(shape, device="cuda", dtype=dtype)


def measure_case(category, name, fn, specs, dtype_name, copy_gbs, torchfuse_py, tunes=()):
    dtype = getattr(torch, dtype_name)
    torch.manual_seed(0)
    inputs = [make_input(s, dtype) for s in specs]
    expected = fn(*inputs)
    min_bytes = btc.tensor_bytes(inputs) + btc.tensor_bytes(expected)
    row = {"category": category, "case": name, "dtype": dtype_name, "min_bytes": min_bytes}
    row["eager"] = btc.measure_impl(lambda: fn(*inputs), expected, min_bytes, copy_gbs)
    impl = btc.compiled(fn, None)
    row["compile"] = btc.measure_impl(lambda: impl(*inputs), expected, min_bytes, copy_gbs)
    if torchfuse_py is not None:
        row["torchfuse"] = btc.measure_torchfuse(torchfuse_py, fn, inputs, expected, min_bytes, copy_gbs)
        for tune in tunes:  # knob sweeps: the same case again under CompileOptions::tune
            row.setdefault("tunes", {})[tune] = btc.measure_torchfuse(torchfuse_py, fn, inputs, expected, min_bytes,
                                                                      copy_gbs, tune)
    return row


def torchfuse_ok(row):
    tf = row.get("torchfuse") or {}
    if "us" not in tf:
        return False, tf.get("error", "not run")
    if not tf.get("matches_reference", False):
        return False, "compare_with_eager failed"
    stats = tf.get("stats") or {}
    if stats.get("eager_calls", 0):
        return False, "ran eager"
    return True, ""


def us_of(row, label):
    r = row.get(label) or {}
    return r.get("us")


def kernels_of(row, label):
    r = row.get(label) or {}
    return r.get("kernels")


def table(rows: List[dict], dtype: str) -> List[str]:
    out = [f"## {dtype}", "",
           "| category | case | eager us | compile us | torchfuse us | vs compile | k eager | k compile | k torchfuse | note |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["dtype"] != dtype:
            continue
        ok, why = torchfuse_ok(r)
        c, t = us_of(r, "compile"), us_of(r, "torchfuse")
        speed = c / t if ok and c and t else None
        out.append(f"| {r['category']} | {r['case']} | {btc.fmt(us_of(r, 'eager'), 1)} | {btc.fmt(c, 1)} | "
                   f"{btc.fmt(t, 1)} | {btc.fmt(speed, 2)} | {kernels_of(r, 'eager') or '-'} | "
                   f"{kernels_of(r, 'compile') or '-'} | {kernels_of(r, 'torchfuse') or '-'} | {why} |")
    out.append("")
    out.append("| category | geomean vs torch.compile | cases |")
    out.append("|---|---|---|")
    for cat in CATEGORIES:
        speeds = []
        total = 0
        for r in rows:
            if r["dtype"] != dtype or r["category"] != cat:
                continue
            total += 1
            ok, _ = torchfuse_ok(r)
            c, t = us_of(r, "compile"), us_of(r, "torchfuse")
            if ok and c and t:
                speeds.append(c / t)
        out.append(f"| {cat} | {btc.fmt(btc.geomean(speeds), 2)} | {len(speeds)}/{total} |")
    out.append("")
    return out


def markdown(results) -> str:
    lines = [f"# Categories benchmark: {results['device']}, PyTorch {results['torch_version']}", "",
             "Same process, same timer (triton do_bench median, L2 flushed); `vs compile` is torch.compile's "
             "time over torchfuse's (above 1: torchfuse faster), blank where torchfuse did not run fused and "
             "correct. k: CUDA kernels per call.", ""]
    for dtype in results["dtypes"]:
        lines += table(results["rows"], dtype)
    return "\n".join(lines)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--categories", default=",".join(CATEGORIES))
    p.add_argument("--cases", default="", help="comma-separated case names (default: every case of the categories)")
    p.add_argument("--torchfuse-build", metavar="DIR", help="a build with libtorchfuse.so against this PyTorch")
    p.add_argument("--json", help="save the measurements here")
    p.add_argument("--out", help="write the markdown here (it is printed either way)")
    p.add_argument("--from-json", help="re-render saved measurements")
    p.add_argument("--tunes", default="", help="';'-separated knob settings (knob=value,...): each case is also "
                   "timed with torchfuse compiled under each (CompileOptions::tune), in the same process")
    args = p.parse_args(argv)
    args.tunes = [t for t in args.tunes.split(";") if t]
    args.dtypes = [btc.DTYPES[d] for d in args.dtypes.split(",") if d]
    args.categories = [c for c in args.categories.split(",") if c]
    unknown = [c for c in args.categories if c not in CATEGORIES]
    if unknown:
        p.error(f"unknown categories {unknown}; known: {CATEGORIES}")
    args.cases = [c for c in args.cases.split(",") if c]
    return args


def measure_all(args):
    results = {"device": torch.cuda.get_device_name(), "torch_version": torch.__version__,
               "dtypes": args.dtypes, "rows": []}
    copy_gbs = btc.copy_bandwidth_gbs()
    results["copy_bandwidth_gbs"] = copy_gbs
    torchfuse_py = btc.load_torchfuse(args.torchfuse_build) if args.torchfuse_build else None
    selected = [c for c in CASES if c[0] in args.categories and (not args.cases or c[1] in args.cases)]
    with torch.no_grad():
        for dtype_name in args.dtypes:
            for category, name, fn, specs in selected:
                row = measure_case(category, name, fn, specs, dtype_name, copy_gbs, torchfuse_py, args.tunes)
                results["rows"].append(row)
                print(f"{category:15s} {name:22s} {dtype_name:9s} eager {btc.fmt(us_of(row, 'eager'), 1)}  "
                      f"compile {btc.fmt(us_of(row, 'compile'), 1)}  torchfuse {btc.fmt(us_of(row, 'torchfuse'), 1)} "
                      f"{torchfuse_ok(row)[1]}", flush=True)
                for tune, r in row.get("tunes", {}).items():
                    ok = r.get("matches_reference") and not (r.get("stats") or {}).get("eager_calls", 0)
                    print(f"{'':15s} {name:22s} {dtype_name:9s} torchfuse[{tune}] {btc.fmt(r.get('us'), 1)} "
                          f"k {r.get('kernels')} {'' if ok else r.get('error', 'not fused or wrong')}", flush=True)
                if args.json:  # after every row, so a run cut short keeps what it measured
                    with open(args.json, "w") as f:
                        json.dump(results, f, indent=1)
    return results


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.from_json:
        with open(args.from_json) as f:
            results = json.load(f)
    else:
        if not torch.cuda.is_available():
            raise SystemExit("categories.py: needs a CUDA GPU (or --from-json)")
        results = measure_all(args)
    report = markdown(results)
    print(report)
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
