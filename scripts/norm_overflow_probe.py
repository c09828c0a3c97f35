"""What eager and torch.compile return for layer norm, rms norm and var over rows holding a value whose
square overflows float32 (1e30, +-1e30, 3e38, 1e20), beside the float64 result. Run on a GPU machine:
`python3 scripts/norm_overflow_probe.py`. docs/performance.md, "Fuzzing findings first", has its table."""
import torch, torch.nn.functional as F
torch.manual_seed(0)
def show(tag, y, ref):
    y = y.float().cpu(); ref = ref.cpu()
    for r in range(y.shape[0]):
        nan = int(torch.isnan(y[r]).sum()); inf = int(torch.isinf(y[r]).sum())
        print(f"  {tag:10s} row{r}: nan {nan:4d} inf {inf:3d} first {[round(v,4) for v in y[r,:3].tolist()]} big {y[r,3].item():.4g}  ref first {[round(v,4) for v in ref[r,:3].tolist()]} big {ref[r,3].item():.4g}")
ln_c = torch.compile(lambda x, w, b: F.layer_norm(x, [x.shape[-1]], w, b))
ln_c0 = torch.compile(lambda x: F.layer_norm(x, [x.shape[-1]]))
rms_c = torch.compile(lambda x, w: F.rms_norm(x, [x.shape[-1]], w))
for dt in (torch.bfloat16, torch.float32):
    for n in (64, 256, 1024, 77):
        x = torch.randn(4, n, device="cuda").to(dt)
        x[0, 3] = 1e30
        x[1, 3] = 1e30; x[1, 5] = -1e30
        x[2, 3] = 3e38 if dt == torch.float32 else 3.0e38
        x[3, 3] = 1e20
        w = torch.randn(n, device="cuda").to(dt); b = torch.randn(n, device="cuda").to(dt)
        print(f"== {dt} n={n}")
        ref = F.layer_norm(x.double(), [n])
        show("eager", F.layer_norm(x, [n]), ref)
        m = torch.native_layer_norm(x, [n], None, None, 1e-5)
        print("  eager mean", m[1].flatten().tolist(), "rstd", m[2].flatten().tolist())
        show("compile", ln_c0(x), ref)
        refw = F.layer_norm(x.double(), [n], w.double(), b.double())
        show("eager w", F.layer_norm(x, [n], w, b), refw)
        show("compile w", ln_c(x, w, b), refw)
        refr = F.rms_norm(x.double(), [n], w.double())
        show("rms eager", F.rms_norm(x, [n], w), refr)
        show("rms comp", rms_c(x, w), refr)
        print("  var eager", torch.var(x.float(), -1).tolist(), "ref", torch.var(x.double(), -1).tolist())
