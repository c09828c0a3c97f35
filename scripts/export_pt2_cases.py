#!/usr/bin/env python3
"""Small torch.export programs saved as .pt2 archives, with inputs and PyTorch's outputs (issue 26).

Run on a machine with PyTorch 2.x (the GPU machine); the files are CPU tensors with tiny weights, so
the C++ tests that read them run on CI without a GPU:

    python3 scripts/export_pt2_cases.py --out tests/data/pt2

For each case NAME it writes
  NAME.pt2        torch.export.save(torch.export.export(module, inputs, dynamic_shapes=...))
  NAME.io.json    {"torch": version, "dynamic": {...}, "inputs": [T...], "outputs": [T...],
                   "calls": [{"inputs": [T...], "outputs": [T...]}, ...]}
where T = {"dtype": "float32"|"bfloat16"|"float16"|"int64"|"bool", "sizes": [...], "file": "NAME.in0.bin"}
and each .bin holds the tensor's contiguous little-endian bytes. "calls" are further calls at other
sizes inside the exported dynamic range (empty for static programs).
"""

import argparse
import json
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import Dim

DTYPE_NAMES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16",
               torch.int64: "int64", torch.int32: "int32", torch.bool: "bool"}


class Pointwise(nn.Module):
    """Parameters and a buffer feeding a pointwise chain after a linear."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 32)
        self.register_buffer("scale", torch.rand(32) + 0.5)

    def forward(self, x):
        h = self.lin(x)
        return F.gelu(h) * self.scale + torch.sigmoid(h) * 0.5 - torch.tanh(x.sum(-1, keepdim=True))


class Softmax(nn.Module):
    def forward(self, x, mask):
        return torch.softmax(x * 0.125 + mask, dim=-1)


class Norms(nn.Module):
    """LayerNorm and an RMSNorm written out, with parameters and a buffer."""

    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(64)
        self.w = nn.Parameter(torch.rand(64) + 0.5)
        self.register_buffer("bias", torch.randn(64) * 0.1)

    def forward(self, x, res):
        h = self.ln(x + res)
        r = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w
        return r + self.bias


class MultiOut(nn.Module):
    def forward(self, a, b):
        s = a + b
        return s, (a * b).sum(-1), torch.logsumexp(s, dim=-1), s.amax(dim=0)


class Views(nn.Module):
    """Head split/merge, transposes, slices, cat (RoPE-style rotation), expand."""

    def forward(self, x, cos, sin):
        B, T, C = x.shape
        h = x.view(B, T, 4, C // 4).transpose(1, 2)  # [B, 4, T, D]
        x1 = h[..., : h.shape[-1] // 2]
        x2 = h[..., h.shape[-1] // 2:]
        rot = torch.cat((-x2, x1), dim=-1)
        r = h * cos + rot * sin
        return r.transpose(1, 2).reshape(B, T, C).contiguous() * 2.0


class Ops(nn.Module):
    """One op of each family the converters take."""

    def forward(self, x, y, ids):
        a = torch.where(x > 0, x, y) + torch.clamp(y, -0.5, 0.5)
        b = torch.exp(-x.abs()) * torch.log1p(y.abs()) + torch.relu(x) - F.silu(y)
        c = x.masked_fill(ids > 2, -1.0) + torch.pow(y, 2) + torch.maximum(x, y)
        d = (a * b).mean(-1, keepdim=True) + c.var(-1, keepdim=True) + F.log_softmax(c, -1)
        e = torch.erf(x) + F.leaky_relu(y, 0.1) + F.hardswish(x) + torch.sin(y) * torch.cos(x)
        return d + e.to(torch.bfloat16).to(torch.float32) + ids.to(torch.float32)


class Mlp(nn.Module):
    """Llama-style RMSNorm + SwiGLU MLP with a residual."""

    def __init__(self, d=64, f=128):
        super().__init__()
        self.norm_w = nn.Parameter(torch.rand(d) + 0.5)
        self.gate = nn.Linear(d, f, bias=False)
        self.up = nn.Linear(d, f, bias=False)
        self.down = nn.Linear(f, d, bias=False)

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5)
        h = (self.norm_w * h).to(x.dtype)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Block(nn.Module):
    """A pre-norm transformer block with SDPA attention."""

    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, C))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class OpsMore(nn.Module):
    """Ops with several returns (max.dim: values and indices), split, expand, where with a scalar,
    clamp_min, rsqrt, fp16 compute inside an fp32 program, integer outputs used as floats."""

    def forward(self, x, y):
        m, i = x.max(dim=-1, keepdim=True)
        a, b = torch.split(x, [8, 24], dim=-1)
        c = torch.where(y > 0, y, 0.0).clamp_min(0.1).rsqrt()
        h = (x.half() * 0.5).sigmoid().float()
        e = y[:, :1].expand(-1, 32)
        return (x - m).exp() + h + c + e + i.float(), torch.cat((b, a), -1).sum(-1)


class TiedStrided(nn.Module):
    """Tied weights (one storage for two parameters) and a transposed buffer (non-contiguous
    strides): the archive's payload config must give both back as they were."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 16, bias=False)
        self.b = nn.Linear(16, 16, bias=False)
        self.b.weight = self.a.weight
        self.register_buffer("t", torch.randn(16, 4).t())  # [4, 16], strides (1, 4)

    def forward(self, x):
        return torch.relu(self.a(x)) * 0.5 + self.b(x) + self.t.sum(0)


class ModeRegions(nn.Module):
    """A no_grad block and an autocast-disabled block inside forward (as Hugging Face's rotary
    embeddings have), exported with grad enabled: the training IR wraps them in
    higher_order.wrap_with_set_grad_enabled / wrap_with_autocast, which torchfuse inlines."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        h = self.lin(x)
        with torch.no_grad():
            r = torch.sigmoid(h) * 2.0
        with torch.autocast("cpu", enabled=False):
            s = torch.tanh(h) + r
        return s * h + 1.0


class SeparateProjections(nn.Module):
    """Three biased linears of one input (attention's q, k and v written apart, as Hugging Face's
    BERT and ViT have them): on CUDA, compile_exported concatenates them into one linear, as
    freeze() does for a TorchScript module."""

    def __init__(self, d=32):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)

    def forward(self, x):
        return torch.sigmoid(self.q(x)) * self.k(x) + self.v(x)


class Cond(nn.Module):
    """torch.cond: a higher-order op torchfuse refuses (by name, not a crash)."""

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t.sin() * 2, lambda t: t.cos() + 1, (x,))


def cases():
    batch = Dim("batch", min=1, max=64)
    seq = Dim("seq", min=2, max=256)
    r = torch.randn
    yield "pointwise_static", Pointwise(), (r(4, 8, 16),), None, []
    yield "softmax_dynamic_batch", Softmax(), (r(8, 4, 32), r(8, 1, 32)), ({0: batch}, {0: batch}), \
        [(r(3, 4, 32), r(3, 1, 32)), (r(17, 4, 32), r(17, 1, 32))]
    yield "norms_params_buffers", Norms(), (r(6, 10, 64), r(6, 10, 64)), ({0: batch}, {0: batch}), \
        [(r(1, 10, 64), r(1, 10, 64))]
    yield "multi_output", MultiOut(), (r(5, 24), r(5, 24)), None, []
    yield "views_rope", Views(), (r(2, 12, 32), r(12, 8), r(12, 8)), ({0: batch, 1: seq}, {0: seq}, {0: seq}), \
        [(r(3, 20, 32), r(20, 8), r(20, 8))]
    yield "ops_families", Ops(), (r(4, 33), r(4, 33), torch.randint(0, 5, (4, 33))), None, []
    yield "mlp_rmsnorm_swiglu", Mlp(), (r(2, 7, 64),), ({0: batch},), [(r(5, 7, 64),)]
    yield "block_sdpa", Block(), (r(2, 16, 64),), ({0: batch},), [(r(4, 16, 64),)]
    yield "ops_more", OpsMore(), (r(6, 32), r(6, 32)), ({0: batch}, {0: batch}), [(r(9, 32), r(9, 32))]
    yield "mlp_bf16", Mlp().to(torch.bfloat16), (r(2, 7, 64).bfloat16(),), ({0: batch},), \
        [(r(5, 7, 64).bfloat16(),)]
    yield "tied_strided", TiedStrided(), (r(3, 16),), None, []
    yield "cond_refused", Cond(), (r(4, 8),), None, []
    yield "mode_regions", ModeRegions(), (r(5, 16),), None, []
    yield "separate_projections", SeparateProjections(), (r(4, 6, 32),), ({0: batch},), [(r(2, 6, 32),)]


# Exported with grad enabled (the others under no_grad): a no_grad block inside forward is then a
# grad-mode region of the program.
GRAD_ENABLED = {"mode_regions"}


def dump_tensor(t, path):
    t = t.detach().contiguous().cpu()
    raw = t.view(torch.uint8) if t.dtype != torch.bool else t.to(torch.uint8)
    with open(path, "wb") as f:
        f.write(raw.numpy().tobytes())
    return {"dtype": DTYPE_NAMES[t.dtype], "sizes": list(t.shape), "file": os.path.basename(path)}


def flat_outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    for name, module, inputs, dyn, more in cases():
        if args.only and name not in args.only.split(","):
            continue
        module = module.eval()
        base = os.path.join(args.out, name)
        with (torch.enable_grad() if name in GRAD_ENABLED else torch.no_grad()):
            ep = torch.export.export(module, inputs, dynamic_shapes=dyn)
            torch.export.save(ep, base + ".pt2")
            meta = {"torch": torch.__version__, "dynamic": str(dyn), "inputs": [], "outputs": [], "calls": []}
            meta["inputs"] = [dump_tensor(t, f"{base}.in{i}.bin") for i, t in enumerate(inputs)]
            outs = flat_outputs(ep.module()(*inputs))
            meta["outputs"] = [dump_tensor(t, f"{base}.out{i}.bin") for i, t in enumerate(outs)]
            meta["tuple_output"] = isinstance(ep.module()(*inputs), (tuple, list))
            for c, call in enumerate(more):
                outs = flat_outputs(ep.module()(*call))
                meta["calls"].append({
                    "inputs": [dump_tensor(t, f"{base}.c{c}.in{i}.bin") for i, t in enumerate(call)],
                    "outputs": [dump_tensor(t, f"{base}.c{c}.out{i}.bin") for i, t in enumerate(outs)],
                })
        with open(base + ".io.json", "w") as f:
            json.dump(meta, f, indent=1)
        print(f"{name}: {len(ep.graph.nodes)} nodes, {os.path.getsize(base + '.pt2')} bytes")


if __name__ == "__main__":
    main()
