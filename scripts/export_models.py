#!/usr/bin/env python3
"""The suite cases and the real models through both front doors (issue 26's last done-criterion).

For each of
  (a) the twelve suite cases (scripts/bench_torch_compile.py's CASES: the functions and shapes
      benchmarks/suite_cases.cpp times), in each --case-dtypes dtype, and
  (b) the real models of scripts/real_models.py (its build(): llama, bert, vit with random
      weights), in each --dtypes dtype and --batches batch,
this script, on the GPU machine,
  1. traces the module (torch.jit.trace, strict=False) and saves WORK/<tag>.pt (--work, default
     OUT/files),
  2. exports it (torch.export.export(module, inputs, strict=False), static shapes unless
     --dynamic-batch) and saves WORK/<tag>.pt2 with torch.export.save: the training IR as export
     returns it, not ep.run_decompositions(), because that IR keeps the composite ops a TorchScript
     graph holds (linear, layer_norm, scaled_dot_product_attention, gelu, silu) for torchfuse's
     converters, where the decomposed IR splits them (addmm and permutes, native_layer_norm, the
     attention backends' own ops); with --decompose auto a program whose .pt2 torchfuse refuses is
     also saved decomposed (WORK/<tag>.decomp.pt2) and tried, to tell the two apart,
  3. runs the torchfuse command-line tool (--torchfuse BIN) on both files with the same --input
     specs: `bench --json` on the .pt (torchfuse::compile) and on the .pt2 (compile_exported, the
     weights on the GPU; bench checks both against eager first), and `verify --json` on the
     models' .pt2 (--verify all: the cases' too),
and writes OUT/export_models.json (after every step, so a timeout keeps what was done) and
OUT/export_models.md (a table: torchfuse through the TorchScript path and through
compile_exported, their ratio, kernels per call, verify's verdict, errors).

Every case and model runs in its own try/except; errors are recorded, not raised. --budget
seconds bound the whole run: work that would start after it is recorded as skipped. The order
is the suite cases, then the models at the first batch, then the models at the other batches.

    python3 scripts/export_models.py --out OUT --torchfuse build-gpu/tools/torchfuse \\
        [--cases all] [--case-dtypes f32] [--models llama,bert,vit] [--dtypes bf16] [--batches 8,1] [--budget 300]
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

try:
    import torch
    import torch.nn as nn
except ImportError:  # --help works without PyTorch
    torch = None
    nn = None

DTYPES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}


def log(*parts):
    print(f"[export_models {time.strftime('%H:%M:%S')}]", *parts, flush=True)


def short_error(text, limit=600):
    """The last informative lines of an error (a traceback's tail, the CLI's one-line error)."""
    lines = [l for l in str(text).strip().splitlines() if l.strip()]
    return " | ".join(lines[-4:])[:limit]


# ---- the work items ----

class _Fn(nn.Module if nn is not None else object):
    """A suite function as an nn.Module (trace and export take modules); module-level classes with
    a forward of fixed arity, so that TorchScript can name them when saving."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn


class Fn1(_Fn):
    def forward(self, a):
        return self.fn(a)


class Fn2(_Fn):
    def forward(self, a, b):
        return self.fn(a, b)


class Fn3(_Fn):
    def forward(self, a, b, c):
        return self.fn(a, b, c)


class Fn4(_Fn):
    def forward(self, a, b, c, d):
        return self.fn(a, b, c, d)


def suite_module(fn, n_inputs):
    return {1: Fn1, 2: Fn2, 3: Fn3, 4: Fn4}[n_inputs](fn).eval()


def case_items(args):
    from bench_torch_compile import CASES
    wanted = None if args.cases in ("all", "") else set(args.cases.split(","))
    if args.cases == "none":
        return []
    unknown = (wanted or set()) - {name for name, _, _ in CASES}
    if unknown:
        raise SystemExit(f"export_models: unknown suite cases {sorted(unknown)}")
    items = []
    for dname in [d for d in args.case_dtypes.split(",") if d]:
        for name, fn, shapes in CASES:
            if wanted is None or name in wanted:
                items.append({"kind": "case", "name": name, "dtype": dname, "batch": None, "fn": fn, "shapes": shapes})
    return items


def model_items(args):
    if args.models in ("", "none"):
        return []
    batches = [int(b) for b in args.batches.split(",") if b]
    items = []
    for batch in batches:
        for name in args.models.split(","):
            for dname in [d for d in args.dtypes.split(",") if d]:
                items.append({"kind": "model", "name": name, "dtype": dname, "batch": batch,
                              "build_batch": max(batches)})
    return items


def tag_of(item):
    if item["kind"] == "case":
        return f"case-{item['name']}-{item['dtype']}"
    return f"{item['name']}-{item['dtype']}-b{item['batch']}"


def build_case(item):
    dtype = getattr(torch, DTYPES[item["dtype"]])
    module = suite_module(item["fn"], len(item["shapes"]))
    gen = torch.Generator(device="cuda").manual_seed(0)
    inputs = tuple(torch.randn(s, device="cuda", dtype=dtype, generator=gen) for s in item["shapes"])
    specs = [f"{item['dtype']}[{','.join(str(d) for d in s)}]" for s in item["shapes"]]
    return module, inputs, specs


_MODELS = {}  # (name, dtype) -> (model, inputs, specs) at the largest batch asked for


def rebatch_spec(spec, batch):
    new, n = re.subn(r"^([a-z0-9]+)\[(\d+),", lambda m: f"{m.group(1)}[{batch},", spec, count=1)
    if n != 1:
        raise ValueError(f"cannot set the batch of input spec {spec!r}")
    return new


def build_model(item, seq):
    """real_models.build() at the largest batch, kept until another model is built (one model on the
    GPU at a time); smaller batches are the first rows of its inputs."""
    from real_models import build
    key = (item["name"], item["dtype"])
    if key not in _MODELS:
        for other in list(_MODELS):  # one model on the GPU at a time
            del _MODELS[other]
        torch.cuda.empty_cache()
        dtype = getattr(torch, DTYPES[item["dtype"]])
        _MODELS[key] = build(item["name"], dtype, item["build_batch"], seq)
    model, inputs, specs = _MODELS[key]
    if item["batch"] == item["build_batch"]:
        return model, inputs, specs
    b = item["batch"]
    return model, tuple(t[:b].contiguous() for t in inputs), [rebatch_spec(s, b) for s in specs]


# ---- the two files ----

def trace_and_save(module, inputs, path):
    with torch.inference_mode(False), torch.no_grad():
        traced = torch.jit.trace(module, inputs, strict=False)
    traced.save(path)


def graph_summary(ep):
    """The exported graph's call targets (counts), and the higher-order ops among them."""
    targets = collections.Counter()
    hops = set()
    for node in ep.graph.nodes:
        if node.op != "call_function":
            continue
        if isinstance(node.target, torch._ops.HigherOrderOperator):
            name = f"higher_order.{node.target.name()}"
            hops.add(name)
        else:
            name = str(node.target)
        targets[name] += 1
    hops = sorted(hops)
    return {"nodes": len(ep.graph.nodes), "targets": dict(targets.most_common()), "higher_order": hops}


def export_program(module, inputs, dynamic_batch):
    dynamic_shapes = None
    if dynamic_batch:
        from torch.export import Dim
        batch = Dim("batch", min=1, max=1024)
        dynamic_shapes = tuple({0: batch} for _ in inputs)
    with torch.inference_mode(False), torch.no_grad():
        return torch.export.export(module, tuple(inputs), dynamic_shapes=dynamic_shapes, strict=False)


# ---- the command-line tool ----

class Budget:
    def __init__(self, seconds):
        self.end = time.time() + seconds

    def left(self):
        return self.end - time.time()


def run_cli(binary, command, path, specs, args, budget, extra=()):
    """`torchfuse COMMAND PATH --input ... --json`: its JSON (or the error), rc and seconds."""
    cmd = [binary, command, path] + sum([["--input", s] for s in specs], []) + list(extra) + ["--json"]
    timeout = max(5.0, min(args.cli_timeout, budget.left()))
    res = {"command": " ".join(cmd)}
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        res.update(rc=None, seconds=round(time.time() - t0, 1), error=f"timed out after {timeout:.0f} s")
        return res
    res.update(rc=p.returncode, seconds=round(time.time() - t0, 1))
    res["json"] = parse_json_output(p.stdout)
    if res["json"] is None:
        res["stdout"] = p.stdout[-3000:]
    if p.returncode not in (0, 1):  # 1: verify's mismatch, with its report
        err = (res.get("json") or {}).get("error") or p.stderr or p.stdout
        res["error"] = short_error(err)
    res["stderr"] = p.stderr[-2000:]
    return res


def parse_json_output(text):
    """The CLI's --json object: all of stdout, else its last line that parses (one line of JSON)."""
    text = text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        pass
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def bench_numbers(res):
    """torchfuse's, TorchScript's and eager's median us and kernels per call from a bench run."""
    out = {}
    j = (res or {}).get("json") or {}
    for v in j.get("variants", []):
        out[v["name"] + "_us"] = v.get("median_us")
        out[v["name"] + "_kernels"] = v.get("kernels_per_call")
    if "matches_eager" in j:
        out["matches_eager"] = j["matches_eager"]
    return out


def verify_verdict(res):
    if not res:
        return ""
    if res.get("error"):
        return "ERROR"
    j = res.get("json") or {}
    if "passed" in j:
        return "PASS" if j["passed"] else "FAIL"
    return f"rc {res.get('rc')}"


# ---- one row ----

def run_item(item, args, budget, row):
    tag = tag_of(item)
    pt, pt2 = os.path.join(args.work, tag + ".pt"), os.path.join(args.work, tag + ".pt2")
    t0 = time.time()
    if item["kind"] == "case":
        module, inputs, specs = build_case(item)
    else:
        module, inputs, specs = build_model(item, args.seq)
    row["specs"] = specs
    row["build_s"] = round(time.time() - t0, 1)

    step = time.time()
    try:
        trace_and_save(module, inputs, pt)
        row["trace_s"] = round(time.time() - step, 1)
    except Exception as e:  # noqa: BLE001 - recorded, the .pt2 still runs
        row["trace_error"] = short_error(traceback.format_exc())
        log(tag, "trace failed:", e)
    step = time.time()
    ep = None
    try:
        ep = export_program(module, inputs, args.dynamic_batch and item["kind"] == "model")
        torch.export.save(ep, pt2)
        row["export_s"] = round(time.time() - step, 1)
        row["exported"] = graph_summary(ep)
    except Exception as e:  # noqa: BLE001
        row["export_error"] = short_error(traceback.format_exc())
        log(tag, "export failed:", e)
    save(args)

    if not args.torchfuse:
        return
    bench = ["--warmup", str(args.warmup), "--iters", str(args.iters), "--repeats", str(args.repeats)]
    if "trace_error" not in row:
        row["ts_bench"] = run_cli(args.torchfuse, "bench", pt, specs, args, budget, bench)
        row["ts"] = bench_numbers(row["ts_bench"])
        save(args)
    if ep is not None:
        row["pt2_bench"] = run_cli(args.torchfuse, "bench", pt2, specs, args, budget, bench)
        row["pt2"] = bench_numbers(row["pt2_bench"])
        save(args)
        if (args.verify == "all" or (args.verify == "models" and item["kind"] == "model")) and budget.left() > 10:
            row["pt2_verify"] = run_cli(args.torchfuse, "verify", pt2, specs, args, budget)
            save(args)
        refused = row["pt2_bench"].get("rc") == 2  # an error (a refusal), not a timeout or a mismatch
        if refused and args.decompose == "auto" and budget.left() > 60:
            try_decomposed(ep, tag, specs, args, budget, bench, row)


def try_decomposed(ep, tag, specs, args, budget, bench, row):
    path = os.path.join(args.work, tag + ".decomp.pt2")
    d = row["decomposed"] = {}
    try:
        step = time.time()
        with torch.inference_mode(False), torch.no_grad():
            dep = ep.run_decompositions({})
        torch.export.save(dep, path)
        d["export_s"] = round(time.time() - step, 1)
        d["exported"] = graph_summary(dep)
    except Exception:  # noqa: BLE001
        d["export_error"] = short_error(traceback.format_exc())
        return
    d["bench"] = run_cli(args.torchfuse, "bench", path, specs, args, budget, bench)
    d["numbers"] = bench_numbers(d["bench"])
    save(args)


# ---- results ----

STATE = {"env": {}, "rows": []}


def save(args):
    with open(os.path.join(args.out, "export_models.json"), "w") as f:
        json.dump(STATE, f, indent=1, default=str)


def label(r):
    return f"{r['name']} {r['dtype']}" + (f" b{r['batch']}" if r.get("batch") else "")


def fmt_us(v):
    return f"{v:.1f}" if isinstance(v, (int, float)) else ""


def fmt_k(v):
    return str(v) if isinstance(v, int) else ""


def markdown():
    env = STATE["env"]
    lines = [f"{env.get('device', '?')}, torch {env.get('torch', '?')}, transformers {env.get('transformers', '-')}, "
             f"torchfuse {env.get('git', '?')}", "",
             "torchfuse through the TorchScript path (torch.jit.trace -> .pt -> torchfuse::compile) and through "
             "torch.export (.pt2 -> torchfuse::compile_exported); `torchfuse bench` medians in us per call; ratio = "
             ".pt2 / .pt (1.00: as fast); TorchScript = the traced module run by TorchScript.", "",
             "| case / model | dtype | batch | TorchScript us | torchfuse .pt us | torchfuse .pt2 us | ratio | "
             "kernels/call .pt / .pt2 | matches eager .pt / .pt2 | verify .pt2 | error |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in STATE["rows"]:
        ts, p2 = r.get("ts", {}), r.get("pt2", {})
        a, b = ts.get("torchfuse_us"), p2.get("torchfuse_us")
        ratio = f"{b / a:.2f}" if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a > 0 else ""
        err = r.get("skipped") or r.get("error") or r.get("export_error") or r.get("trace_error") or \
            (r.get("pt2_bench") or {}).get("error") or (r.get("ts_bench") or {}).get("error") or \
            (r.get("pt2_verify") or {}).get("error") or ""
        m = lambda d: {True: "yes", False: "NO"}.get(d.get("matches_eager"), "")
        lines.append(f"| {r['name']} | {r['dtype']} | {r['batch'] or ''} | {fmt_us(ts.get('torchscript_us'))} | "
                     f"{fmt_us(a)} | {fmt_us(b)} | {ratio} | {fmt_k(ts.get('torchfuse_kernels'))} / "
                     f"{fmt_k(p2.get('torchfuse_kernels'))} | {m(ts)} / {m(p2)} | {verify_verdict(r.get('pt2_verify'))} | "
                     f"{str(err).replace('|', '/')[:300]} |")
    lines.append("")
    for r in STATE["rows"]:
        hops = (r.get("exported") or {}).get("higher_order")
        if hops:
            lines.append(f"- {label(r)}: higher-order ops in the export: {', '.join(hops)}")
        d = r.get("decomposed")
        if d:
            n = d.get("numbers", {})
            lines.append(f"- {label(r)}: decomposed .pt2 (run_decompositions({{}})): "
                         f"torchfuse {fmt_us(n.get('torchfuse_us'))} us, {fmt_k(n.get('torchfuse_kernels'))} kernels, "
                         f"error: {d.get('export_error') or (d.get('bench') or {}).get('error') or 'none'}")
    return "\n".join(lines) + "\n"


def environment(args):
    env = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "argv": sys.argv[1:]}
    try:
        import transformers
        env["transformers"] = transformers.__version__
    except ImportError:
        pass
    try:
        env["git"] = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True, timeout=10).stdout.strip()
    except Exception:  # noqa: BLE001
        env["git"] = "?"
    return env


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="export_models.json and export_models.md go here")
    ap.add_argument("--work", default="", help="the .pt and .pt2 files (GBs for the models; default OUT/files)")
    ap.add_argument("--torchfuse", default="", help="the torchfuse CLI (build-gpu/tools/torchfuse); without it the "
                    "files are only written")
    ap.add_argument("--cases", default="all", help="suite cases: all, none or a comma list")
    ap.add_argument("--case-dtypes", default="f32", help="dtypes of the suite cases: f32,bf16,f16")
    ap.add_argument("--models", default="llama,bert,vit", help="real models (scripts/real_models.py), or none")
    ap.add_argument("--dtypes", default="bf16", help="dtypes of the real models: bf16,f32")
    ap.add_argument("--batches", default="8,1")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--verify", choices=["models", "all", "none"], default="models",
                    help="which .pt2 files `torchfuse verify` checks (bench's compare_with_eager checks every file)")
    ap.add_argument("--decompose", choices=["auto", "off"], default="auto",
                    help="auto: when torchfuse refuses a .pt2, also try ep.run_decompositions({})")
    ap.add_argument("--dynamic-batch", action="store_true", help="export with a dynamic batch dim (dim 0 of every input)")
    ap.add_argument("--budget", type=float, default=300, help="seconds for the whole run; later work is skipped")
    ap.add_argument("--cli-timeout", type=float, default=120, help="seconds for one torchfuse command")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if torch is None:
        raise SystemExit("export_models: needs PyTorch")
    budget = Budget(args.budget)
    os.makedirs(args.out, exist_ok=True)
    args.work = args.work or os.path.join(args.out, "files")
    os.makedirs(args.work, exist_ok=True)
    if args.torchfuse and not os.access(args.torchfuse, os.X_OK):
        raise SystemExit(f"export_models: --torchfuse {args.torchfuse} is not an executable")
    STATE["env"] = environment(args)
    log(STATE["env"])
    items = case_items(args) + model_items(args)
    # What a row needs at least, to be worth starting.
    least = {"case": 15.0, "model": 60.0}
    for n, item in enumerate(items):
        row = {k: item[k] for k in ("kind", "name", "dtype", "batch")}
        STATE["rows"].append(row)
        if budget.left() < least[item["kind"]]:
            row["skipped"] = f"budget: {budget.left():.0f} s left"
            continue
        log(f"{n + 1}/{len(items)} {tag_of(item)} ({budget.left():.0f} s left)")
        t0 = time.time()
        try:
            run_item(item, args, budget, row)
        except Exception:  # noqa: BLE001 - the next row still runs
            row["error"] = short_error(traceback.format_exc())
            log(tag_of(item), "failed:", row["error"])
        row["seconds"] = round(time.time() - t0, 1)
        ts, p2 = row.get("ts", {}), row.get("pt2", {})
        log(f"  {tag_of(item)}: {row['seconds']} s; torchfuse .pt {fmt_us(ts.get('torchfuse_us'))} us, .pt2 "
            f"{fmt_us(p2.get('torchfuse_us'))} us; verify {verify_verdict(row.get('pt2_verify'))}"
            + (f"; {row.get('error') or row.get('export_error') or (row.get('pt2_bench') or {}).get('error')}"
               if row.get("error") or row.get("export_error") or (row.get("pt2_bench") or {}).get("error") else ""))
        save(args)
        if item["kind"] == "case":
            torch.cuda.empty_cache()
    _MODELS.clear()
    save(args)
    text = markdown()
    with open(os.path.join(args.out, "export_models.md"), "w") as f:
        f.write(text)
    print(text, flush=True)


if __name__ == "__main__":
    main()
