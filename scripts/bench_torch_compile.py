#!/usr/bin/env python3
"""Eager, torch.jit.script and torch.compile on torchfuse's benchmark suite, merged with torchfuse_bench.

Runs the twelve cases of shared/bench/SUITE.md the way shared/bench/anchors-h200.md was measured:
triton.testing.do_bench (median, L2 flushed between calls), device-to-device copy bandwidth
measured in the same run, CUDA kernels per call counted with torch.profiler. Then merges the JSON
that `torchfuse_bench --json PATH` wrote on the same machine into one markdown table per dtype,
with geometric means of torchfuse's speed-up over torch.compile and of torchfuse's efficiency.

    build/benchmarks/torchfuse_bench --latency --json tf.json
    python3 scripts/bench_torch_compile.py --torchfuse-json tf.json --out bench.md

--torchfuse-build DIR also times torchfuse in this process, by the same timer as torch.compile:
it builds benchmarks/torchfuse_py.cpp (a Python binding) against DIR/libtorchfuse.so, a build
against this PyTorch, compiles each case's torch.jit.script graph with torchfuse and adds a
same-timer column beside torchfuse_bench's.

--json saves this script's own measurements; --from-json re-uses such a file instead of
measuring again (the merge then needs neither a GPU nor PyTorch).
"""

import argparse
import json
import math
import os
import statistics
import sys
import time
import types

try:
    import torch
except ImportError:  # merging saved results needs no PyTorch
    torch = None


# ---- the suite, written exactly as SUITE.md writes it ----

def gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(0.79788456 * (x + 0.044715 * x * x * x)))


def bias_gelu_erf(x, b):
    y = x + b
    return y * 0.5 * (1.0 + torch.erf(y * 0.7071067811865476))


def softmax_manual(x):
    m = x.max(dim=1, keepdim=True)[0]
    e = torch.exp(x - m)
    return e / e.sum(dim=1, keepdim=True)


def layernorm_manual(x, w, b):
    mu = x.mean(-1, keepdim=True)
    d = x - mu
    var = (d * d).mean(-1, keepdim=True)
    return d * torch.rsqrt(var + 1e-5) * w + b


def rmsnorm_manual(x, w):
    xf = x.float()
    r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (xf * r).to(x.dtype) * w


def swiglu(a, b):
    return torch.nn.functional.silu(a) * b


def add_layernorm(x, r, w, b):
    h = x + r
    return (h, torch.layer_norm(h, [4096], w, b, 1e-5))


def attn_softmax_mask(s, mask):
    return torch.softmax(s * 0.125 + mask, dim=-1)


def col_sum(x):
    return x.sum(dim=0)


def logsumexp_rows(x):
    return torch.logsumexp(x, dim=1)


def mean_sq_full(x):
    return (x * x).mean()


# (name, function, input shapes); every input is randn in the case's dtype, weights too.
CASES = [
    ("gelu_tanh", gelu_tanh, [(8192, 8192)]),
    ("bias_gelu_erf", bias_gelu_erf, [(8192, 8192), (8192,)]),
    ("softmax_manual", softmax_manual, [(16384, 4096)]),
    ("softmax_long_rows", softmax_manual, [(1024, 65536)]),
    ("layernorm_manual", layernorm_manual, [(16384, 4096), (4096,), (4096,)]),
    ("rmsnorm_manual", rmsnorm_manual, [(16384, 4096), (4096,)]),
    ("swiglu", swiglu, [(8192, 8192), (8192, 8192)]),
    ("add_layernorm", add_layernorm, [(16384, 4096), (16384, 4096), (4096,), (4096,)]),
    ("attn_softmax_mask", attn_softmax_mask, [(8, 16, 1024, 1024), (1, 1, 1024, 1024)]),
    ("col_sum", col_sum, [(16384, 4096)]),
    ("logsumexp_rows", logsumexp_rows, [(16384, 4096)]),
    ("mean_sq_full", mean_sq_full, [(8192, 8192)]),
]
CASE_NAMES = [name for name, _, _ in CASES]
DTYPES = {"float32": "float32", "fp32": "float32", "bfloat16": "bfloat16", "bf16": "bfloat16",
          "float16": "float16", "fp16": "float16"}
LATENCY_SHAPE = (64, 1024)
LATENCY_CALLS = 2000
WARMUP_CALLS = 5  # torch.jit.script's profiling executor fuses from its 2nd call


# ---- measuring ----

def tensors_of(value):
    """Every tensor in a result: a tensor or a tuple/list of them."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in tensors_of(v)]
    return []


def tensor_bytes(values):
    return sum(t.numel() * t.element_size() for t in tensors_of(values))


def bench_us(call):
    """Median microseconds per call, L2 flushed before each call (triton's do_bench)."""
    from triton.testing import do_bench
    return do_bench(call, return_mode="median") * 1e3


def copy_bandwidth_gbs(nbytes=1 << 30):
    """Device-to-device copy bandwidth in GB/s (1e9), bytes read + bytes written."""
    src = torch.ones(nbytes // 4, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    us = bench_us(lambda: dst.copy_(src))
    del src, dst
    return 2 * nbytes / (us * 1e-6) / 1e9


def count_kernels(call):
    """CUDA kernels one call launches (memcpy, memset and annotations excluded), or None."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    kernels = 0
    for e in prof.profiler.kineto_results.events():
        if hasattr(e, "activity_type"):
            kernels += e.activity_type().lower() == "kernel"
        elif e.device_type() == torch.autograd.DeviceType.CUDA:
            kernels += not e.name().startswith(("Memcpy", "Memset"))
    return kernels or None  # every call launches something: none seen means no CUPTI data


def max_abs_diff(expected, actual):
    diffs = [(e.float() - a.float()).abs().max().item()
             for e, a in zip(tensors_of(expected), tensors_of(actual))]
    return max(diffs) if diffs else 0.0


def measure_impl(call, expected, min_bytes, copy_gbs):
    """Warm-up, a comparison with eager, the timing and the kernel count of one implementation."""
    try:
        for _ in range(WARMUP_CALLS):
            call()
        torch.cuda.synchronize()
        diff = max_abs_diff(expected, call())
        us = bench_us(call)
        return {"us": us, "eff": min_bytes / (us * 1e-6) / 1e9 / copy_gbs,
                "kernels": count_kernels(call), "max_abs_diff_vs_eager": diff}
    except Exception as e:  # one failing implementation must not end the run
        return {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]}


def compiled(fn, mode):
    """A fresh torch.compile of fn; dynamo's caches are reset so no case reuses another's graphs."""
    torch._dynamo.reset()
    return torch.compile(fn, mode=mode) if mode else torch.compile(fn)


def fresh_copy(fn):
    """fn as a new function object. torch.jit.script caches per function object; a fresh one gives
    each case and dtype its own profiling executor, as torchfuse_bench's fresh modules do."""
    return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


def load_torchfuse(build_dir):
    """The torchfuse_py binding, built (or found built) against build_dir/libtorchfuse.so."""
    from torch.utils.cpp_extension import load
    build_dir = os.path.abspath(build_dir)
    lib = os.path.join(build_dir, "libtorchfuse.so")
    if not os.path.exists(lib):
        raise SystemExit(f"bench_torch_compile: --torchfuse-build: no {lib}; build torchfuse against this PyTorch first")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ext_dir = os.path.join(build_dir, "torchfuse_py")
    os.makedirs(ext_dir, exist_ok=True)
    # The binding is built by the compiler that built the library (cpp_extension reads $CXX): a
    # compiler that links libstdc++ statically, as the GPU machine's $CXX does, crashes here.
    compiler = cmake_cxx_compiler(build_dir)
    if compiler:
        os.environ["CXX"] = compiler
    return load(name="torchfuse_py", sources=[os.path.join(repo, "benchmarks", "torchfuse_py.cpp")],
                extra_include_paths=[os.path.join(repo, "include"), repo], extra_cflags=["-O2", "-std=c++17"],
                extra_ldflags=[f"-L{build_dir}", "-ltorchfuse", f"-Wl,-rpath,{build_dir}"],
                build_directory=ext_dir, verbose=False)


def cmake_cxx_compiler(build_dir):
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("CMAKE_CXX_COMPILER:"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return None


def measure_torchfuse(torchfuse_py, fn, inputs, expected, min_bytes, copy_gbs, tune=""):
    """torchfuse on fn's TorchScript graph, measured as the other implementations are, then checked
    by torchfuse::compare_with_eager (against a float64 run); its stats say whether every call ran
    fused (eager_calls 0) and how many groups fell back. `tune`: CompileOptions::tune."""
    try:
        graph = torch.jit.script(fresh_copy(fn)).graph
        tf = torchfuse_py.compile_graph(graph, tune) if tune else torchfuse_py.compile_graph(graph)
        result = measure_impl(lambda: tf(*inputs), expected, min_bytes, copy_gbs)
        if "error" not in result:
            result["matches_reference"], report = tf.compare_with_eager(*inputs)
            if not result["matches_reference"]:
                result["comparison"] = report
        result["stats"] = tf.stats()
        return result
    except Exception as e:
        return {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]}


def measure_case(name, fn, shapes, dtype_name, copy_gbs, autotune, torchfuse_py=None):
    dtype = getattr(torch, dtype_name)
    torch.manual_seed(0)
    inputs = [torch.randn(s, device="cuda", dtype=dtype) for s in shapes]
    expected = fn(*inputs)
    min_bytes = tensor_bytes(inputs) + tensor_bytes(expected)
    row = {"case": name, "dtype": dtype_name, "min_bytes": min_bytes}
    row["eager"] = measure_impl(lambda: fn(*inputs), expected, min_bytes, copy_gbs)
    script = torch.jit.script(fresh_copy(fn))
    row["script"] = measure_impl(lambda: script(*inputs), expected, min_bytes, copy_gbs)
    modes = {"compile": None}
    if autotune:
        modes["autotune"] = "max-autotune-no-cudagraphs"
    for label, mode in modes.items():
        impl = compiled(fn, mode)
        row[label] = measure_impl(lambda: impl(*inputs), expected, min_bytes, copy_gbs)
    if torchfuse_py is not None:
        row["torchfuse"] = measure_torchfuse(torchfuse_py, fn, inputs, expected, min_bytes, copy_gbs)
    return row


def wall_us_per_call(call, calls=LATENCY_CALLS, warmup=50):
    """Host wall time per call, one synchronize after `calls` back-to-back calls; median of 3."""
    runs = []
    for _ in range(3):
        for _ in range(warmup):
            call()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
        runs.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(runs)


def measure_latency(torchfuse_py=None):
    x = torch.randn(LATENCY_SHAPE, device="cuda", dtype=torch.float32)
    script = torch.jit.script(fresh_copy(gelu_tanh))
    comp = compiled(gelu_tanh, None)
    latency = {"shape": list(LATENCY_SHAPE), "calls": LATENCY_CALLS,
               "eager_us": wall_us_per_call(lambda: gelu_tanh(x)),
               "script_us": wall_us_per_call(lambda: script(x)),
               "compile_us": wall_us_per_call(lambda: comp(x))}
    if torchfuse_py is not None:
        tf = torchfuse_py.compile_graph(torch.jit.script(fresh_copy(gelu_tanh)).graph)
        latency["torchfuse_us"] = wall_us_per_call(lambda: tf(x))
    return latency


def measure_all(args):
    import triton
    results = {"device": torch.cuda.get_device_name(), "torch_version": torch.__version__,
               "triton_version": triton.__version__, "rows": [], "latency": None}
    results["copy_bandwidth_gbs"] = copy_bandwidth_gbs()
    print(f"{results['device']}, PyTorch {torch.__version__}, Triton {triton.__version__}, "
          f"copy bandwidth {results['copy_bandwidth_gbs']:.0f} GB/s", flush=True)
    torchfuse_py = load_torchfuse(args.torchfuse_build) if args.torchfuse_build else None
    selected = [c for c in CASES if c[0] in args.cases]
    with torch.no_grad():
        for dtype_name in args.dtypes:
            for name, fn, shapes in selected:
                row = measure_case(name, fn, shapes, dtype_name, results["copy_bandwidth_gbs"],
                                   args.max_autotune, torchfuse_py)
                results["rows"].append(row)
                print(progress_line(row), flush=True)
        if not args.skip_latency:
            results["latency"] = measure_latency(torchfuse_py)
    return results


def progress_line(row):
    parts = [f"{row['case']:18s} {row['dtype']:9s}"]
    for label in ("eager", "script", "compile", "autotune", "torchfuse"):
        r = row.get(label)
        if r is not None:
            parts.append(f"{label} {fmt(r.get('us'), 1)} us" if "us" in r else f"{label} {r['error']}")
    return "  ".join(parts)


# ---- merging with torchfuse_bench's JSON into markdown ----

def fmt(value, digits):
    return "-" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def torchfuse_kernels(entry):
    """Kernels per call: the profiler's count, else fused launches from stats (marked *)."""
    k = entry["torchfuse"].get("kernels", -1)
    if k is not None and k >= 0:
        return str(k)
    launches = entry.get("torchfuse_launches_per_call", -1)
    return f"{launches}*" if launches is not None and launches >= 0 else "-"


def torchfuse_check(entry):
    if not entry["check"]["ran"]:
        return "error: " + entry["torchfuse"].get("error", "")[:80]
    text = "ok" if entry["check"]["passed"] else "FAIL"
    return text + (" (ran eager)" if entry.get("torchfuse_eager_calls", 0) > 0 else "")


def dtype_table(dtype, py_rows, tf_rows, autotune, same_timer):
    """One markdown table and its geometric means; tf_rows maps case -> torchfuse_bench entry.
    same_timer: this script timed torchfuse too (row["torchfuse"]): two more columns."""
    header = ["case", "eager us", "script us", "compile us"] + (["autotune us"] if autotune else []) + [
        "torchfuse us", "torchfuse eff", "compile eff", "k torchfuse", "k compile",
        "speed-up vs compile", "check"]
    if same_timer:
        header += ["torchfuse us, same timer", "speed-up, same timer"]
    lines = [f"## {dtype}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    speedups, effs, same_speedups = [], [], []
    names = [n for n in CASE_NAMES if n in py_rows or n in tf_rows]
    for name in names:
        py = py_rows.get(name, {})
        tf = tf_rows.get(name)
        def us(label):
            return py.get(label, {}).get("us")
        comp_us = us("compile")
        tf_us = tf["torchfuse"]["us"] if tf and tf["torchfuse"].get("ok") else None
        tf_eff = tf["torchfuse"]["eff"] if tf_us else None
        speedup = comp_us / tf_us if comp_us and tf_us else None
        passed = bool(tf and tf["check"]["passed"])
        if speedup and passed:
            speedups.append(speedup)
        if tf_eff and passed:
            effs.append(tf_eff)
        k_comp = py.get("compile", {}).get("kernels")
        cells = [name, fmt(us("eager"), 1), fmt(us("script"), 1), fmt(comp_us, 1)]
        if autotune:
            cells.append(fmt(us("autotune"), 1))
        cells += [fmt(tf_us, 1), fmt(tf_eff, 2), fmt(py.get("compile", {}).get("eff"), 2),
                  torchfuse_kernels(tf) if tf else "-", str(k_comp) if k_comp else "-",
                  fmt(speedup, 2), torchfuse_check(tf) if tf else "-"]
        if same_timer:
            same_us = same_timer_us(py)
            same_speedup = comp_us / same_us if comp_us and same_us else None
            if same_speedup:
                same_speedups.append(same_speedup)
            cells += [fmt(same_us, 1), fmt(same_speedup, 2)]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    g_speedup, g_eff = geomean(speedups), geomean(effs)
    lines.append(f"Geometric means over the cases where torchfuse matched eager: speed-up vs torch.compile "
                 f"**{fmt(g_speedup, 2)}x** ({len(speedups)}/{len(names)} cases), torchfuse efficiency "
                 f"**{fmt(g_eff, 2)}** ({len(effs)}/{len(names)} cases).")
    if same_timer:
        lines.append(f"Timed by this script alongside torch.compile (same timer, same process): speed-up "
                     f"**{fmt(geomean(same_speedups), 2)}x** ({len(same_speedups)}/{len(names)} cases where "
                     "it ran fused and passed the float64 reference check).")
    return lines


def same_timer_us(py):
    """This script's time of torchfuse, if it ran every call fused and passed the reference check."""
    r = py.get("torchfuse", {})
    stats = r.get("stats", {})
    if "us" not in r or stats.get("eager_calls", 1) or stats.get("fallback_groups", 1):
        return None
    return r["us"] if r.get("matches_reference") else None


def difference_limit(dtype):
    """Differences from eager worth a note (bf16: one rounding step of values near 16)."""
    return 1e-3 if dtype == "float32" else 1e-1


def notes_on_differences(py_results):
    """Implementations of this script whose results differ noticeably from eager."""
    notes = []
    for row in py_results.get("rows", []):
        limit = difference_limit(row["dtype"])
        tf = row.get("torchfuse", {})
        if "us" in tf and not tf.get("matches_reference"):
            notes.append(f"- torchfuse (this script) on {row['case']} {row['dtype']} FAILED the float64 reference check")
        stats = tf.get("stats")
        if stats and (stats["eager_calls"] or stats["fallback_groups"]):
            notes.append(f"- torchfuse (this script) on {row['case']} {row['dtype']}: {stats['eager_calls']} calls "
                         f"ran eager, {stats['fallback_groups']} groups fell back to ATen")
        for label in ("script", "compile", "autotune", "torchfuse"):
            diff = row.get(label, {}).get("max_abs_diff_vs_eager")
            if diff is not None and not diff <= limit:
                notes.append(f"- {label} on {row['case']} {row['dtype']} differs from eager by up to {diff:.3g}")
            if "error" in row.get(label, {}):
                notes.append(f"- {label} on {row['case']} {row['dtype']} failed: {row[label]['error']}")
    return notes


def latency_line(py_results, tf):
    py = py_results.get("latency")
    tfl = tf.get("latency") if tf else None
    if not py and not (tfl and tfl.get("ran")):
        return None
    parts = []
    if py:
        parts.append(f"eager {fmt(py['eager_us'], 1)} us, TorchScript {fmt(py['script_us'], 1)} us, "
                     f"torch.compile {fmt(py['compile_us'], 1)} us"
                     + (f", torchfuse {fmt(py['torchfuse_us'], 1)} us" if "torchfuse_us" in py else "")
                     + " (this script)")
    if tfl and tfl.get("ran"):
        parts.append(f"torchfuse {fmt(tfl['torchfuse_us'], 1)} us (torchfuse_bench, where eager "
                     f"{fmt(tfl['eager_us'], 1)} us, TorchScript {fmt(tfl['script_us'], 1)} us"
                     + ("" if tfl.get("check_passed") else "; torchfuse did NOT match eager") + ")")
    return (f"Small-tensor latency ({LATENCY_SHAPE[0]}x{LATENCY_SHAPE[1]} fp32 tanh-GELU chain, "
            f"{LATENCY_CALLS} calls, wall clock per call): " + "; ".join(parts) + ".")


def compile_time_lines(tf):
    times = (tf or {}).get("compile_time") or []
    if not times:
        return []
    lines = ["## torchfuse compile time (cold, compile() to the first synchronized result)", "",
             "| case | dtype | total ms | NVRTC ms | NVRTC share |", "|---|---|---|---|---|"]
    for t in times:
        if t.get("error"):
            lines.append(f"| {t['case']} | {t['dtype']} | failed: {t['error'][:80]} | | |")
            continue
        share = t["nvrtc_seconds"] / t["seconds"] if t["seconds"] else None
        lines.append(f"| {t['case']} | {t['dtype']} | {fmt(1e3 * t['seconds'], 1)} | "
                     f"{fmt(1e3 * t['nvrtc_seconds'], 1)} | {fmt(100 * share if share is not None else None, 0)}% |")
    return [""] + lines


def markdown_report(py_results, tf, dtypes, autotune, same_timer=False):
    lines = ["# torchfuse vs eager, TorchScript and torch.compile", ""]
    if py_results.get("device"):
        lines.append(f"Measured on {py_results['device']} (PyTorch {py_results['torch_version']}, "
                     f"Triton {py_results['triton_version']}); this script's copy bandwidth "
                     f"{fmt(py_results.get('copy_bandwidth_gbs'), 0)} GB/s.")
    if tf:
        lines.append(f"torchfuse_bench (LibTorch {tf.get('torch_version')}, timer {tf.get('timer')}): "
                     f"copy bandwidth {fmt(tf.get('copy_bandwidth_gbs'), 0)} GB/s in its own run; "
                     "torchfuse eff is against that.")
    lines += ["", "Times: median kernel-side microseconds, L2 flushed between calls. eff = minimal bytes "
              "(inputs read once, outputs written once) / time / copy bandwidth. k = CUDA kernels per call "
              "(profiler; * = fused launches from torchfuse's stats where the profiler was unavailable). "
              "check = torchfuse's output against eager. eager, script and compile columns come from this script "
              "(PyTorch); torchfuse columns from torchfuse_bench (LibTorch), which prints its own eager and "
              "TorchScript times too."
              + (" The same-timer columns time torchfuse in this script, on each case's torch.jit.script "
                 "graph, between torch.compile's case and the next (speed-up over this script's "
                 "torch.compile time)." if same_timer else ""), ""]
    py_rows = {}
    for row in py_results.get("rows", []):
        py_rows.setdefault(row["dtype"], {})[row["case"]] = row
    tf_rows = {}
    for entry in (tf or {}).get("results", []):
        tf_rows.setdefault(entry["dtype"], {})[entry["case"]] = entry
    for dtype in dtypes:
        if dtype in py_rows or dtype in tf_rows:
            lines += dtype_table(dtype, py_rows.get(dtype, {}), tf_rows.get(dtype, {}), autotune, same_timer) + [""]
    latency = latency_line(py_results, tf)
    if latency:
        lines.append(latency)
    lines += compile_time_lines(tf)
    notes = notes_on_differences(py_results)
    if notes:
        lines += ["", "Notes:"] + notes
    return "\n".join(lines) + "\n"


# ---- command line ----

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default=",".join(CASE_NAMES), help="comma-separated suite cases (default: all)")
    p.add_argument("--dtypes", default="float32,bfloat16", help="comma-separated dtypes")
    p.add_argument("--torchfuse-json", help="JSON written by `torchfuse_bench --json` to merge")
    p.add_argument("--out", help="write the merged markdown here (it is printed either way)")
    p.add_argument("--json", help="save this script's measurements as JSON")
    p.add_argument("--from-json", help="use measurements saved with --json instead of measuring")
    p.add_argument("--max-autotune", action="store_true",
                   help='also time torch.compile(mode="max-autotune-no-cudagraphs") (slow to compile)')
    p.add_argument("--skip-latency", action="store_true", help="skip the small-tensor latency test")
    p.add_argument("--torchfuse-build", metavar="DIR",
                   help="also time torchfuse here, by the same timer (DIR: a build with libtorchfuse.so)")
    args = p.parse_args(argv)
    args.cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in args.cases if c not in CASE_NAMES]
    if unknown:
        p.error(f"unknown case(s) {unknown}; known: {CASE_NAMES}")
    try:
        args.dtypes = [DTYPES[d] for d in args.dtypes.split(",") if d]
    except KeyError as e:
        p.error(f"unknown dtype {e}")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.from_json:
        with open(args.from_json) as f:
            py_results = json.load(f)
    elif torch is None or not torch.cuda.is_available():
        print("bench_torch_compile: no PyTorch with a CUDA GPU here; only torchfuse_bench's results are merged.")
        py_results = {}
    else:
        py_results = measure_all(args)
    if args.json and py_results:
        with open(args.json, "w") as f:
            json.dump(py_results, f, indent=1)
    tf = None
    if args.torchfuse_json:
        with open(args.torchfuse_json) as f:
            tf = json.load(f)
    autotune = any("autotune" in row for row in py_results.get("rows", []))
    same_timer = any("torchfuse" in row for row in py_results.get("rows", []))
    report = markdown_report(py_results, tf, args.dtypes, autotune, same_timer)
    print(report)
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
