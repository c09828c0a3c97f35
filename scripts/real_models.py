#!/usr/bin/env python3
"""Real models, random weights: trace, save, and time them (issue 22's "Measure").

Builds three Hugging Face `transformers` models with random weights, on the GPU:
  llama  LlamaModel, TinyLlama-1.1B's layer (hidden 2048, 32 heads, 4 KV heads, SwiGLU 5632,
         RMSNorm, RoPE), 8 layers of its 22; input_ids [B, 128]
  bert   BertModel, bert-base (12 layers, hidden 768, GELU-erf, post-norm); input_ids and an
         attention mask with padding [B, 128]
  vit    ViTModel, vit-base-patch16-224 (12 layers); pixel_values [B, 3, 224, 224]
For each model, dtype (f32, bf16), batch (8, 1) and sequence length (--seq, 128; a list such as
128,1024 times each in the same process, the files then named ...-s<seq>.pt): traces it
(torch.jit.trace, saved to OUT/<model>-<dtype>-b<batch>.pt with the inputs as
OUT/<...>.inputs.pt), then times eager
(the nn.Module), the TorchScript module and torch.compile (default mode) with CUDA events
(median of --repeats loops of --iters calls, after warm-up), and counts CUDA kernels per call
with torch.profiler, split into GEMM/attention kernels and the rest (non-GEMM work: the kernels a
fusion compiler is meant to merge), listing the most frequent non-GEMM kernels.

With --torchfuse-build DIR (a build against this PyTorch), the saved file is compiled with
torchfuse::compile through benchmarks/torchfuse_py.cpp and timed and profiled by the same timer,
checked with compare_with_eager, and its refusals listed. With --torchfuse BIN (the `torchfuse`
command-line tool, tools/), the file also goes through `torchfuse bench --json` and `torchfuse verify`.

    python3 scripts/real_models.py --out OUT [--models llama,bert,vit,convnext,resnet] [--torchfuse build-gpu/tools/torchfuse]

Writes OUT/real_models.json and OUT/real_models.md.
"""

import argparse
import json
import os
import statistics
import re
import subprocess
import sys
import time

import torch

GEMM_MARKERS = ("gemm", "cutlass", "xmma", "nvjet", "cublas", "sm90_", "sm80_", "wgmma", "flash", "fmha",
                "attention", "splitk", "gemv")


def is_gemm_kernel(name):
    n = name.lower()
    # Generated kernels are named after the ops they fuse: Inductor calls a pointwise kernel that
    # feeds attention "triton_poi_fused__scaled_dot_product_..._attention_...". Only its GEMM
    # templates (triton_tem_*, max-autotune) are GEMMs; torchfuse's kernels (tf_*) never are.
    if n.startswith("tf_"):
        return False
    if n.startswith("triton_"):
        return n.startswith("triton_tem")
    return any(m in n for m in GEMM_MARKERS)


VISION_MODELS = ("vit", "convnext", "resnet")


def build(name, dtype, batch, seq, attn="sdpa"):
    import transformers as tr
    torch.manual_seed(0)
    if name == "llama":
        cfg = tr.LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=8, num_attention_heads=32,
                             num_key_value_heads=4, vocab_size=32000, max_position_embeddings=2048, rms_norm_eps=1e-5, use_cache=False,
                             torchscript=True, attn_implementation=attn)
        model = tr.LlamaModel(cfg)
        inputs = (torch.randint(0, cfg.vocab_size, (batch, seq)),)
        specs = [f"i64[{batch},{seq}]:0..{cfg.vocab_size}"]
    elif name == "bert":
        cfg = tr.BertConfig(torchscript=True, attn_implementation=attn)
        model = tr.BertModel(cfg, add_pooling_layer=False)
        ids = torch.randint(0, cfg.vocab_size, (batch, seq))
        mask = torch.ones(batch, seq, dtype=torch.int64)
        mask[:, seq * 3 // 4:] = 0  # padding: the mask takes part
        inputs = (ids, mask)
        specs = [f"i64[{batch},{seq}]:0..{cfg.vocab_size}", f"i64[{batch},{seq}]:1..2"]
    elif name in VISION_MODELS:
        # ConvNeXt: its channels-first layer norms are means and variances over dim 1; ResNet-50:
        # batch norms after convolutions (freezing folds them into the convolutions).
        if name == "vit":
            model = tr.ViTModel(tr.ViTConfig(torchscript=True, attn_implementation=attn), add_pooling_layer=False)
        elif name == "convnext":
            model = tr.ConvNextModel(tr.ConvNextConfig(torchscript=True))
        else:
            model = tr.ResNetModel(tr.ResNetConfig(torchscript=True))
        inputs = (torch.randn(batch, 3, 224, 224),)
        specs = [f"{'bf16' if dtype == torch.bfloat16 else 'f32'}[{batch},3,224,224]"]
    else:
        raise SystemExit(f"unknown model {name}")
    model = model.eval().to("cuda", dtype)
    inputs = tuple(t.to("cuda", dtype) if t.is_floating_point() else t.to("cuda") for t in inputs)
    return model, inputs, specs


def time_calls(fn, inputs, warmup, iters, repeats):
    with torch.inference_mode():
        for _ in range(warmup):
            fn(*inputs)
        torch.cuda.synchronize()
        times = []
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                fn(*inputs)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) * 1000.0 / iters)
    return statistics.median(times), min(times)


def gemm_choice_summary(choices):
    """One line per timed GEMM shape: the candidate kept and candidate 0's time beside it."""
    lines = []
    for c in choices:
        if c["why_not"]:
            lines.append(f"{c['call']}: not timed ({c['why_not']})")
            continue
        k = c["chosen"]
        splits = sum(1 for lab in c["labels"] if "split-K" in lab)
        lines.append(f"{c['call']}: kept {c['labels'][k]} {c['us'][k]:.2f} us; {c['labels'][0]} {c['us'][0]:.2f} us; "
                     f"{len(c['labels'])} candidates ({splits} split-K variants)")
    return lines


_SLEEP_CYCLES_PER_US = None


def sleep_cycles_per_us():
    """torch.cuda._sleep's spin cycles per microsecond on this device, timed once by CUDA events."""
    global _SLEEP_CYCLES_PER_US
    if _SLEEP_CYCLES_PER_US is None:
        cycles = 2_000_000
        torch.cuda._sleep(cycles)  # warm
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        torch.cuda.synchronize()
        _SLEEP_CYCLES_PER_US = cycles / (start.elapsed_time(end) * 1000.0)
    return _SLEEP_CYCLES_PER_US


def device_span_us(fn, inputs, wall_us, repeats=5):
    """The call's span on the device with the host out of the way: a spinning kernel holds the
    stream for twice the call's wall time while the host queues the whole call behind it, so the
    CUDA events around the call time its kernels back to back, with only the device's own gaps
    between them (a graph's node-to-node latency, a kernel's launch into an idle stream). Wall
    time over this span is the host's share. Not under the profiler, which stretches the gaps it
    traces. A call that synchronizes with the host inside measures its own wait as well."""
    hold_us = 2.0 * wall_us + 100.0
    spans = []
    with torch.inference_mode():
        while len(spans) < repeats:
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(int(hold_us * sleep_cycles_per_us()))
            start.record()
            fn(*inputs)
            end.record()
            # The spin ended before the host had queued the call: the span would hold host time.
            held = not start.query()
            torch.cuda.synchronize()
            if not held:
                if hold_us > 1e6:
                    return None
                hold_us *= 2.0
                continue
            spans.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(spans)


def kernels_per_call(fn, inputs, wall_us):
    from torch.profiler import ProfilerActivity, profile
    with torch.inference_mode():
        fn(*inputs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn(*inputs)
            torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    # GPU time: the call's kernels, copies and memsets end to end, as if launched back to back.
    gpu_us = sum(e.time_range.end - e.time_range.start for e in kernels)
    names = [e.name for e in kernels if not e.name.startswith(("Memcpy", "Memset", "cudaMemcpy"))]
    gemm = [n for n in names if is_gemm_kernel(n)]
    other = [n for n in names if not is_gemm_kernel(n)]
    counts = {}
    for n in other:
        counts[n] = counts.get(n, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    # Where the GPU time goes: each kernel name's count and summed duration, largest first.
    spent = {}
    for e in kernels:
        count, us = spent.get(e.name[:90], (0, 0.0))
        spent[e.name[:90]] = (count + 1, us + e.time_range.end - e.time_range.start)
    by_time = sorted(([n, c, round(us, 1)] for n, (c, us) in spent.items()), key=lambda row: -row[2])
    # (The call's kernels, copies and memsets in launch order, names shortened: where a copy, cast
    # or memset sits.)
    return {"total": len(names), "gemm": len(gemm), "non_gemm": len(other), "top_non_gemm": ranked[:8],
            "all_non_gemm": ranked, "sequence": [e.name[:90] for e in kernels], "gpu_us": gpu_us,
            "span_us": device_span_us(fn, inputs, wall_us),
            "by_time": by_time[:25]}


def ops_left(rewritten_graph):
    """What a rewritten graph (torchfuse dump's rewritten_graph.txt) still runs outside fused
    groups: each aten:: and torchfuse:: op kind with its count, most frequent first (views and
    size arithmetic included; they may launch nothing)."""
    counts = {}
    for m in re.finditer(r"= ((?:aten|torchfuse)::[A-Za-z0-9_]+)\(", rewritten_graph):
        kind = m.group(1)
        if kind != "torchfuse::FusionGroup":
            counts[kind] = counts.get(kind, 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def run_torchfuse(binary, path, specs, args):
    # The traced file holds the dtype already; --dtype is not needed.
    res = {}
    if args.cli_bench:
        cmd = [binary, "bench", path] + sum([["--input", s] for s in specs], []) + [
            "--warmup", str(args.warmup), "--iters", str(args.iters), "--repeats", str(args.repeats), "--json"] + (
            ["--cuda-graphs"] if args.graphs else [])
        t0 = time.time()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.torchfuse_timeout)
        res = {"command": " ".join(cmd), "rc": p.returncode, "seconds": time.time() - t0}
        try:
            res["bench"] = json.loads(p.stdout)
        except ValueError:
            res["stdout"] = p.stdout[-4000:]
        res["stderr"] = p.stderr[-4000:]
    v = subprocess.run([binary, "verify", path] + sum([["--input", s] for s in specs], []), capture_output=True,
                       text=True, timeout=args.torchfuse_timeout)
    res["verify_rc"] = v.returncode
    res["verify"] = (v.stdout + v.stderr)[:6000]  # the table comes first
    if args.dump:
        out = os.path.splitext(path)[0] + "-dump"
        d = subprocess.run([binary, "dump", path] + sum([["--input", s] for s in specs], []) + ["--out", out],
                           capture_output=True, text=True, timeout=args.torchfuse_timeout)
        res["dump_rc"] = d.returncode
        try:
            with open(os.path.join(out, "rewritten_graph.txt")) as f:
                res["ops_left"] = ops_left(f.read())
        except OSError as e:
            res["ops_left_error"] = str(e)
    return res


def restrict_sdpa_backends(names):
    """Lets ATen's scaled_dot_product_attention pick only among these backends, for everything this
    process times (torch.backends.cuda's global switches, which torchfuse's attention op, called
    from C++ in this process, reads too; the --torchfuse CLI runs in processes of its own)."""
    switches = {"cudnn": torch.backends.cuda.enable_cudnn_sdp, "flash": torch.backends.cuda.enable_flash_sdp,
                "efficient": torch.backends.cuda.enable_mem_efficient_sdp, "math": torch.backends.cuda.enable_math_sdp}
    unknown = [n for n in names if n not in switches]
    if unknown:
        raise SystemExit(f"--sdpa-backends: unknown {unknown}; known: {sorted(switches)}")
    for name, enable in switches.items():
        enable(name in names)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="llama,bert,vit")
    ap.add_argument("--dtypes", default="bf16,f32")
    ap.add_argument("--batches", default="8,1")
    ap.add_argument("--seq", default="128", help="tokens per sequence, or a comma-separated list timed in one process "
                    "(e.g. 128,256,1024; the vision models take 224 x 224 images whatever it says)")
    ap.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"],
                    help="transformers' attention: sdpa (ATen's fused kernel) or eager (matmul, softmax, matmul: "
                         "what torchfuse's attention rewrite and Inductor's attention patterns take)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--compile-modes", default="default",
                    help="torch.compile modes to time, e.g. default,reduce-overhead (CUDA graphs)")
    ap.add_argument("--graphs", action="store_true",
                    help="also time torchfuse with CompileOptions::cuda_graphs (needs --torchfuse-build)")
    ap.add_argument("--ablations", default="", help="comma-separated torchfuse variants also timed: "
                    "no_gemm_epilogues, no_shape_tensors (nothing computed once per size, so no mask checks), "
                    "no_cublaslt_gemms (GEMMs without an epilogue through ATen), no_concat_linears (linears of one "
                    "input apart), concat_linears_autotune (merged linears timed whole against apart), no_conv_bias (convolutions keep their bias), "
                    "no_channels_last (convolutions and their neighbours NCHW), gemm_autotune (CompileOptions::gemm_autotune: cuBLASLt's candidates timed), "
                    "graphs_gemm_autotune (the same with CUDA graphs), attention_autotune (ATen's attention pick "
                    "timed against flash attention, on by default with graphs), graphs_no_attention_autotune, "
                    "in_place (CompileOptions::outputs_in_place), pdl and graphs_pdl (programmatic dependent launch, "
                    "runtime/programmatic_launch.h, without and with CUDA graphs), fuse_siblings and graphs_fuse_siblings "
                    "(CompileOptions::fuse_siblings), "
                    "no_rewrites (none of the graph rewrites: attention, GEMM epilogues, linear bias, shape tensors)")
    ap.add_argument("--time-budget", type=float, default=0, help="stop starting new rows after this many seconds")
    ap.add_argument("--torchfuse", default="", help="the torchfuse CLI binary (bench and verify, beside)")
    ap.add_argument("--cli-bench", action="store_true", help="also `torchfuse bench` (verify always runs)")
    ap.add_argument("--dump", action="store_true", help="also `torchfuse dump` each model beside its file, and list "
                    "the ops its rewritten graph runs outside fused groups (needs --torchfuse)")
    ap.add_argument("--torchfuse-build", default="", help="a torchfuse build against this PyTorch: times torchfuse "
                    "in this process by the same timer (benchmarks/torchfuse_py.cpp)")
    ap.add_argument("--torchfuse-timeout", type=float, default=240)
    ap.add_argument("--sdpa-backends", default="", help="comma-separated ATen attention backends every implementation "
                    "in this process may use (cudnn, flash, efficient, math; default: all, ATen's choice), e.g. "
                    "flash,efficient,math to leave cuDNN's out (scripts/sdpa_backends.py)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import transformers
    env = {"torch": torch.__version__, "transformers": transformers.__version__,
           "device": torch.cuda.get_device_name(0)}
    if args.sdpa_backends:
        restrict_sdpa_backends(args.sdpa_backends.split(","))
        env["sdpa_backends"] = args.sdpa_backends
    print(env, flush=True)
    tfpy = None
    if args.torchfuse_build:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from bench_torch_compile import load_torchfuse
        tfpy = load_torchfuse(args.torchfuse_build)
    rows = []
    started = time.time()
    seqs = [int(q) for q in str(args.seq).split(",")]
    for name in args.models.split(","):
        for dname in args.dtypes.split(","):
            dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[dname]
            for batch, seq in [(int(b), int(q)) for b in args.batches.split(",") for q in seqs]:
                if name in VISION_MODELS and seq != seqs[0]:
                    continue  # images: every length is the same call
                if args.time_budget and time.time() - started > args.time_budget:
                    print(f"time budget spent: {name} {dname} b{batch} x {seq} skipped", flush=True)
                    continue
                row = {"model": name, "dtype": dname, "batch": batch, "seq": seq, "attn": args.attn}
                t0 = time.time()
                model, inputs, specs = build(name, dtype, batch, seq, args.attn)
                with torch.inference_mode(False), torch.no_grad():
                    traced = torch.jit.trace(model, inputs, strict=False)
                suffix = f"-s{seq}" if len(seqs) > 1 else ""
                path = os.path.join(args.out, f"{name}-{dname}-b{batch}{suffix}.pt")
                traced.save(path)
                row["trace_s"] = round(time.time() - t0, 1)
                row["specs"] = specs
                row["eager_us"], _ = time_calls(model, inputs, args.warmup, args.iters, args.repeats)
                row["eager_kernels"] = kernels_per_call(model, inputs, row["eager_us"])
                loaded = torch.jit.load(path)
                row["torchscript_us"], _ = time_calls(loaded, inputs, args.warmup, args.iters, args.repeats)
                row["torchscript_kernels"] = kernels_per_call(loaded, inputs, row["torchscript_us"])
                for mode in ([] if args.no_compile else args.compile_modes.split(",")):
                    # "torch_compile" for the default mode (the earlier tables' key), else per mode.
                    key = "torch_compile" if mode == "default" else "torch_compile_" + mode.replace("-", "_")
                    try:
                        t1 = time.time()
                        compiled = torch.compile(model) if mode == "default" else torch.compile(model, mode=mode)
                        with torch.inference_mode():
                            for _ in range(3):  # reduce-overhead records its graphs after warm-up runs
                                compiled(*inputs)
                        row[key + "_s"] = round(time.time() - t1, 1)
                        row[key + "_us"], _ = time_calls(compiled, inputs, args.warmup, args.iters, args.repeats)
                        row[key + "_kernels"] = kernels_per_call(compiled, inputs, row[key + "_us"])
                    except Exception as e:  # one mode failing leaves the others
                        row[key + "_error"] = repr(e)[:500]
                    torch._dynamo.reset()
                if tfpy is not None:
                    t1 = time.time()
                    tf = tfpy.compile_file(path)
                    with torch.inference_mode():
                        tf(*inputs)
                    row["torchfuse_first_call_s"] = round(time.time() - t1, 1)
                    row["torchfuse_us"], _ = time_calls(tf, inputs, args.warmup, args.iters, args.repeats)
                    row["torchfuse_kernels"] = kernels_per_call(tf, inputs, row["torchfuse_us"])
                    row["torchfuse_stats"] = tf.stats()
                    explained = tf.explain(*inputs)
                    row["torchfuse_refused"] = explained["refused"]
                    row["torchfuse_rewrites"] = explained.get("rewrites", [])
                    for key, kw in (("torchfuse_no_gemm_epilogues", {"gemm_epilogues": False}),
                                    ("torchfuse_no_shape_tensors", {"cache_shape_tensors": False}),
                                    ("torchfuse_no_cublaslt_gemms", {"cublaslt_gemms": False}),
                                    ("torchfuse_no_concat_linears", {"concat_linears": False}),
                                    ("torchfuse_concat_linears_autotune", {"concat_linears_autotune": True}),
                                    ("torchfuse_gemm_autotune", {"gemm_autotune": True}),
                                    ("torchfuse_graphs_gemm_autotune", {"gemm_autotune": True, "cuda_graphs": True}),
                                    ("torchfuse_attention_autotune", {"attention_autotune": True}),
                                    ("torchfuse_graphs_no_attention_autotune", {"attention_autotune": False,
                                                                                "cuda_graphs": True}),
                                    ("torchfuse_in_place", {"outputs_in_place": True}),
                                    ("torchfuse_pdl", {"pdl": True}),
                                    ("torchfuse_fuse_siblings", {"fuse_siblings": True}),
                                    ("torchfuse_graphs_fuse_siblings", {"fuse_siblings": True, "cuda_graphs": True}),
                                    ("torchfuse_graphs_pdl", {"cuda_graphs": True, "pdl": True}),
                                    ("torchfuse_no_conv_bias", {"split_conv_bias": False}),
                                    ("torchfuse_no_channels_last", {"channels_last_convs": False}),
                                    ("torchfuse_no_rewrites", {"gemm_epilogues": False, "rewrite_attention": False,
                                                               "split_linear_bias": False, "split_conv_bias": False,
                                                               "channels_last_convs": False,
                                                               "cache_shape_tensors": False,
                                                               "cublaslt_gemms": False, "concat_linears": False})):
                        if key.split("torchfuse_")[1] not in args.ablations.split(","):
                            continue
                        kw = dict(kw)
                        pdl = kw.pop("pdl", False)  # programmatic dependent launch, switched for this variant only
                        tfpy.set_programmatic_launch(pdl)
                        try:
                            timed_before = len(tfpy.gemm_algorithm_choices())
                            ta = tfpy.compile_file(path, **kw)
                            with torch.inference_mode():
                                ta(*inputs)
                            row[key + "_us"], _ = time_calls(ta, inputs, args.warmup, args.iters, args.repeats)
                            row[key + "_kernels"] = kernels_per_call(ta, inputs, row[key + "_us"])
                            row[key + "_stats"] = ta.stats()
                            # GEMM shapes first timed by this variant (a shape is timed once a process)
                            row[key + "_gemm_choices"] = gemm_choice_summary(tfpy.gemm_algorithm_choices()[timed_before:])
                            del ta
                        finally:
                            tfpy.set_programmatic_launch(False)
                    if args.graphs:
                        tg = tfpy.compile_file(path, cuda_graphs=True)
                        with torch.inference_mode():
                            for _ in range(4):  # warm-up calls, then the capture
                                tg(*inputs)
                        row["torchfuse_graphs_us"], _ = time_calls(tg, inputs, args.warmup, args.iters, args.repeats)
                        row["torchfuse_graphs_kernels"] = kernels_per_call(tg, inputs, row["torchfuse_graphs_us"])
                        row["torchfuse_graphs_stats"] = tg.stats()
                        del tg  # checked against eager by `torchfuse bench --cuda-graphs` (--torchfuse)
                if args.torchfuse:
                    # compare_with_eager through the CLI: inside this Python process, an exception
                    # thrown and caught within libtorchfuse (the float64 reference failing) crashed
                    # the process on the GPU machine (docs/performance.md, real models).
                    row["torchfuse_cli"] = run_torchfuse(args.torchfuse, path, specs, args)
                    row["torchfuse_matches_eager"] = row["torchfuse_cli"]["verify_rc"] == 0
                rows.append(row)
                with open(os.path.join(args.out, "real_models.json"), "w") as f:  # so far, in case of a timeout
                    json.dump({"env": env, "rows": rows}, f, indent=1, default=str)
                print(json.dumps({k: v for k, v in row.items() if not k.endswith("kernels")}, default=str)[:1500],
                      flush=True)
                del model, traced, loaded
                torch.cuda.empty_cache()
    with open(os.path.join(args.out, "real_models.json"), "w") as f:
        json.dump({"env": env, "rows": rows}, f, indent=1, default=str)
    backends = f", attention backends {env['sdpa_backends']}" if "sdpa_backends" in env else ""
    lines = [f"{env['device']}, torch {env['torch']}, transformers {env['transformers']}{backends}", "",
             "| model | dtype | batch | eager us | TorchScript us | torch.compile us | torchfuse us | kernels/call eager / TS / compile / torchfuse (non-GEMM) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        tf_us = f"{r['torchfuse_us']:.0f}" if "torchfuse_us" in r else ""
        k = lambda key: (f"{r[key]['total']} ({r[key]['non_gemm']})" if key in r else "")
        lines.append(f"| {r['model']} | {r['dtype']} | {r['batch']} | {r['eager_us']:.0f} | {r['torchscript_us']:.0f} | "
                     f"{r.get('torch_compile_us', float('nan')):.0f} | {tf_us} | {k('eager_kernels')} / "
                     f"{k('torchscript_kernels')} / {k('torch_compile_kernels')} / {k('torchfuse_kernels')} |")
    lines.append("")
    # Launch-bound calls (issue 25): wall time per call back to back, and the GPU time of one call
    # (its kernels end to end, from the profiler).
    variants = [("eager", "eager"), ("TorchScript", "torchscript"), ("compile", "torch_compile"),
                ("compile reduce-overhead", "torch_compile_reduce_overhead"),
                ("compile max-autotune-no-cudagraphs", "torch_compile_max_autotune_no_cudagraphs"), ("torchfuse", "torchfuse"),
                ("torchfuse no GEMM epilogues", "torchfuse_no_gemm_epilogues"),
                ("torchfuse no shape tensors", "torchfuse_no_shape_tensors"),
                ("torchfuse no cuBLASLt GEMMs", "torchfuse_no_cublaslt_gemms"),
                ("torchfuse no concat linears", "torchfuse_no_concat_linears"),
                ("torchfuse merged or apart timed", "torchfuse_concat_linears_autotune"),
                ("torchfuse no conv bias", "torchfuse_no_conv_bias"),
                ("torchfuse no channels-last", "torchfuse_no_channels_last"),
                ("torchfuse GEMM autotune", "torchfuse_gemm_autotune"), ("torchfuse no rewrites", "torchfuse_no_rewrites"),
                ("torchfuse graphs", "torchfuse_graphs"), ("torchfuse graphs GEMM autotune", "torchfuse_graphs_gemm_autotune"),
                ("torchfuse attention autotune", "torchfuse_attention_autotune"),
                ("torchfuse graphs no attention autotune", "torchfuse_graphs_no_attention_autotune"),
                ("torchfuse PDL", "torchfuse_pdl"), ("torchfuse graphs PDL", "torchfuse_graphs_pdl"),
                ("torchfuse siblings", "torchfuse_fuse_siblings"),
                ("torchfuse graphs siblings", "torchfuse_graphs_fuse_siblings")]
    lines += ["| model | dtype | batch x seq | " + " | ".join(f"{v} us (GPU us; span us)" for v, _ in variants) + " |",
              "|---|---|---|" + "---|" * len(variants)]
    for r in rows:
        cells = []
        for _, key in variants:
            us, k = r.get(key + "_us"), r.get(key + "_kernels")
            span = f"; {k['span_us']:.0f}" if k and k.get("span_us") else ""
            cells.append("" if us is None else f"{us:.0f} ({k['gpu_us']:.0f}{span})" if k else f"{us:.0f}")
        lines.append(f"| {r['model']} | {r['dtype']} | {r['batch']} x {r.get('seq', '')} | " + " | ".join(cells) + " |")
    lines.append("")
    # Issue 25's measures, where a row has torchfuse with graphs and reduce-overhead: the wall-time
    # ratio (torchfuse C++ through the binding, torch.compile Python) and wall over GPU time and
    # over the device span, for each graph variant.
    graphed = [r for r in rows if "torch_compile_reduce_overhead_us" in r and "torchfuse_graphs_us" in r]
    if graphed:
        lines += ["| model | dtype | batch x seq | variant | vs reduce-overhead | wall / GPU | wall / span |",
                  "|---|---|---|---|---|---|---|"]
        for r in graphed:
            ro = r["torch_compile_reduce_overhead_us"]
            for name, key in [v for v in variants if v[1] == "torch_compile_reduce_overhead" or v[1].startswith("torchfuse_graphs")]:
                us, k = r.get(key + "_us"), r.get(key + "_kernels")
                if us is None:
                    continue
                gpu = f"{us / k['gpu_us']:.2f}" if k and k.get("gpu_us") else ""
                span = f"{us / k['span_us']:.2f}" if k and k.get("span_us") else ""
                lines.append(f"| {r['model']} | {r['dtype']} | {r['batch']} x {r.get('seq', '')} | {name} | {ro / us:.2f}x | {gpu} | {span} |")
        lines.append("")
    for r in rows:
        left = r.get("torchfuse_cli", {}).get("ops_left")
        if left:
            lines.append(f"- {r['model']} {r['dtype']} b{r['batch']} torchfuse ops outside groups: " +
                         ", ".join(f"{k} x{c}" for k, c in left))
    for r in rows:
        for key in ("torchscript_kernels", "torch_compile_kernels", "torchfuse_kernels"):
            if key in r:
                lines.append(f"- {r['model']} {r['dtype']} b{r['batch']} {key}: top non-GEMM " +
                             ", ".join(f"{n[:60]} x{c}" for n, c in r[key]["top_non_gemm"]))
    for r in rows:
        if "torchfuse_refused" in r:
            lines.append(f"- {r['model']} {r['dtype']} b{r['batch']}: torchfuse matches eager: {r.get('torchfuse_matches_eager')}; "
                         f"stats {r['torchfuse_stats']}; refused ({len(r['torchfuse_refused'])}): " +
                         "; ".join(sorted(set(x[:100] for x in r["torchfuse_refused"]))[:12]))
    for r in rows:
        verify = r.get("torchfuse_cli", {}).get("verify", "")
        outs = [l for l in verify.splitlines() if l.startswith("output ") or l.startswith("no float64 reference")]
        if outs:
            lines.append(f"- {r['model']} {r['dtype']} b{r['batch']} torchfuse verify: " + " | ".join(" ".join(o.split()) for o in outs[:3]))
    with open(os.path.join(args.out, "real_models.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
