# Where a layer's attention loses time inside a CUDA graph: a graph of 12 x (a q, k, v projection, its
# split copied out, then X) replayed on its own, for X = a ReLU, a fill kernel + ReLU, a memset node
# (cuMemsetD8Async captured) + ReLU, cuDNN's attention with and without a mask, the memory-efficient
# kernel with the mask, the math spelled out (matmul, softmax, matmul), flash attention.
# Prints us per replay (median of 7 x 50), the profiler's span and kernel sum, and one middle
# layer's events with the idle time before each (docs/performance.md, "Timed attention backends").
#   python3 scripts/attention_gaps.py [B,H,T,D] [relu,fill_relu,memset_relu,cudnn,cudnn_mask,efficient_mask,
#                                               math_mask,math_softmax,flash]
import ctypes, sys, torch, statistics
from torch.profiler import profile, ProfilerActivity
from torch.nn.attention import sdpa_kernel, SDPBackend
torch.manual_seed(0)
dev = 'cuda'
libcuda = ctypes.CDLL('libcuda.so.1')
libcuda.cuMemsetD8Async.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t, ctypes.c_void_p]
B, H, T, D = [int(v) for v in (sys.argv[1] if len(sys.argv) > 1 else '1,12,128,64').split(',')]
E = H * D
x = torch.randn(B * T, E, device=dev, dtype=torch.bfloat16)
W = torch.randn(3 * E, E, device=dev, dtype=torch.bfloat16) * 0.02
mask = torch.zeros(B, 1, 1, T, device=dev, dtype=torch.bfloat16)
mask[..., T * 3 // 4:] = torch.finfo(torch.bfloat16).min  # padding, as BERT's
buf = torch.empty(1 << 16, device=dev, dtype=torch.uint8)
small = torch.randn(B, H, T, D, device=dev, dtype=torch.bfloat16)

def layer(kind):
    qkv = torch.nn.functional.linear(x, W)
    q, k, v = qkv.view(B, T, 3, H, D).permute(2, 0, 3, 1, 4).contiguous().unbind(0)
    if kind == 'cudnn_mask':
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    if kind == 'cudnn':
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v)
    if kind == 'efficient_mask':
        with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    if kind == 'math_mask':  # the ops spelled out: two batched GEMMs around a masked softmax (ATen's kernels)
        s = torch.matmul(q, k.transpose(-2, -1)) * (D ** -0.5)
        return torch.matmul(torch.softmax(s + mask, -1), v)
    if kind == 'math_softmax':  # the same with the mask add and the scale left out: a softmax kernel alone
        return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-2, -1)), -1), v)
    if kind == 'flash':
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v)
    if kind == 'memset_relu':
        libcuda.cuMemsetD8Async(buf.data_ptr(), 0, buf.numel(), torch.cuda.current_stream().cuda_stream)
        return torch.relu(q)
    if kind == 'fill_relu':
        buf.zero_()
        return torch.relu(q)
    if kind == 'relu':
        return torch.relu(q)

def run(kind, reps=12):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): layer(kind)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps): layer(kind)
    for _ in range(20): g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(7):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(50): g.replay()
        b.record(); b.synchronize()
        times.append(a.elapsed_time(b) * 1000 / 50)
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        g.replay(); torch.cuda.synchronize()
    evs = sorted([e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA], key=lambda e: e.time_range.start)
    ksum = sum(e.time_range.elapsed_us() for e in evs)
    span = evs[-1].time_range.end - evs[0].time_range.start
    print(f'{kind:12s} replay {statistics.median(times):7.1f} us  span {span:7.1f}  kernels {ksum:7.1f}  events {len(evs)}')
    # one middle layer
    per = len(evs) // reps
    start = per * (reps // 2)
    prev_end = evs[start - 1].time_range.end
    for e in evs[start:start + per]:
        print(f'   {e.time_range.elapsed_us():6.2f} gap {e.time_range.start - prev_end:5.2f}  {e.name[:90]}')
        prev_end = e.time_range.end
    sys.stdout.flush()

for kind in (sys.argv[2].split(',') if len(sys.argv) > 2 else ['relu', 'fill_relu', 'memset_relu', 'cudnn', 'cudnn_mask', 'flash']):
    try:
        run(kind)
    except Exception as ex:
        print(kind, 'failed:', str(ex).split('\n')[0])
