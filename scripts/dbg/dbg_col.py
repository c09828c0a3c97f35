import sys, torch
sys.path.insert(0, "scripts")
import bench_torch_compile as btc
tf = btc.load_torchfuse("build-gpu")
torch.manual_seed(1)
def special(shape):
    x = torch.randn(shape, device="cuda")
    flat = x.view(-1)
    vals = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 1e-40, -1e-40, 3e38, -3e38, 1e-30, 65504.0], device="cuda")
    idx = torch.randint(0, flat.numel(), (max(1, flat.numel() // 50),), device="cuda")
    flat[idx] = vals[torch.randint(0, len(vals), idx.shape, device="cuda")]
    return x
def std0(x0, x1):
    return (x0 * x1).std(0, keepdim=True)
def sm(x):
    return torch.softmax(torch.relu(x) * 1.5, -3)
for fn, mk in [(std0, lambda: [special((1, 255, 256)), special((1, 1, 1))]), (sm, lambda: [special((1, 1, 255, 17, 31))])]:
    c = tf.compile_graph(torch.jit.script(fn).graph)
    for trial in range(3):
        ins = mk()
        e = fn(*ins); a = c(*ins)
        torch.cuda.synchronize()
        bad = ~((e == a) | (e.isnan() & a.isnan()) | ((e - a).abs() <= 1e-4 * e.abs() + 1e-5))
        print(fn.__name__, "trial", trial, "bad", int(bad.sum()), "of", e.numel(), "x1" if fn is std0 else "", ins[1].item() if fn is std0 else "")
        nz = bad.nonzero()[:4]
        for ix in nz.tolist():
            t = tuple(ix)
            print("  at", t, "eager", e[t].item(), "fused", a[t].item())
            if fn is std0:
                print("   x0", ins[0][0, t[1], t[2]].item())
            else:
                col = ins[0][0, 0, :, t[3], t[4]]
                print("   col", col.tolist()[:8], "fused col", a[0, 0, :, t[3], t[4]].tolist()[:8])
                print("   col min/max", col.min().item(), col.max().item(), "nan", int(col.isnan().sum()), "inf", int(col.isinf().sum()))
