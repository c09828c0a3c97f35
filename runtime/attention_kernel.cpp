#include "runtime/attention_kernel.h"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>

#include "codegen/attention.h"
#include "runtime/driver_api.h"
#include "runtime/launch_util.h"
#include "src/error.h"

namespace torchfuse {
namespace runtime {
namespace {

// The kernel of a spec, generated once per process (the kernel cache then loads it once per device).
const codegen::GeneratedKernel& kernel_for(const codegen::AttentionSpec& s) {
  static std::mutex mutex;
  using Key = std::tuple<int, int, int, int, int, bool, bool, bool, bool>;
  static auto* kernels = new std::map<Key, codegen::GeneratedKernel>();  // used until exit
  const Key key{static_cast<int>(s.dtype), s.head_dim, s.warps, s.key_split, s.key_block,
                s.mask, s.mask_pairs, s.causal, s.vector_loads};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = kernels->find(key);
  if (it == kernels->end()) it = kernels->emplace(key, codegen::generate_attention(s)).first;
  return it->second;
}

// Rows of a head dim that may be read 16 bytes at a time: the head dim contiguous, every other
// stride a multiple of 8 elements (or its size 1), the data 16-byte aligned.
bool rows_of_16_bytes(const at::Tensor& t) {
  if (t.stride(3) != 1 || reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 != 0) return false;
  for (int64_t i = 0; i < 3; ++i)
    if (t.size(i) > 1 && t.stride(i) % 8 != 0) return false;
  return true;
}

// The strides of the mask broadcast to the scores [batch, heads, rows, keys], as ATen's expand
// gives them (a dim broadcast from 1 strides 0; a dim the mask lacks strides as a size-1 dim over
// the next), computed without making the view on every call.
std::array<int64_t, 4> expanded_mask_strides(const at::Tensor& mask, const at::Tensor& q, const at::Tensor& k) {
  const std::array<int64_t, 4> target{q.size(0), q.size(1), q.size(2), k.size(2)};
  std::array<int64_t, 4> sizes{}, strides{};
  const int64_t lacking = 4 - mask.dim();
  for (int64_t i = 3; i >= 0; --i) {
    const int64_t dim = i - lacking;
    int64_t size = dim >= 0 ? mask.size(dim) : 1;
    int64_t stride = dim >= 0 ? mask.stride(dim) : (i == 3 ? 1 : sizes[i + 1] * strides[i + 1]);
    if (size != target[i]) {
      TORCHFUSE_INTERNAL_ASSERT(size == 1, "attention mask dim ", dim, " of size ", size, " does not broadcast to ",
                                target[i]);
      size = target[i];
      stride = 0;
    }
    sizes[i] = size;
    strides[i] = stride;
  }
  return strides;
}

// A mask broadcast to the scores whose two neighbouring keys are one aligned 4-byte load: keys
// contiguous, the key length and every other stride even, the data 4-byte aligned.
bool mask_in_pairs(const at::Tensor& mask, const std::array<int64_t, 4>& strides, int64_t keys) {
  if (strides[3] != 1 || keys % 2 != 0) return false;
  if (reinterpret_cast<uintptr_t>(mask.data_ptr()) % 4 != 0) return false;
  for (int64_t i = 0; i < 3; ++i)
    if (strides[static_cast<size_t>(i)] % 2 != 0) return false;
  return true;
}

// Warps a block: 4, fewer where the grid would not fill the device's multiprocessors once.
int warps_for(int64_t rows, int64_t batch_heads, int sm_count) {
  int warps = 4;
  auto blocks = [&](int w) {
    const int64_t rows_a_block = codegen::kAttentionRowsPerWarp * w;
    return (rows + rows_a_block - 1) / rows_a_block * batch_heads;
  };
  while (warps > 1 && blocks(warps) < sm_count) warps /= 2;
  return warps;
}

}  // namespace

std::string attention_kernel_unusable(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const c10::optional<at::Tensor>& mask, bool enable_gqa) {
  if (q.scalar_type() != at::kHalf && q.scalar_type() != at::kBFloat16) return "not 16-bit";
  if (k.scalar_type() != q.scalar_type() || v.scalar_type() != q.scalar_type()) return "dtypes differ";
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) return "not rank 4";
  const int64_t d = q.size(3);
  if (k.size(3) != d || v.size(3) != d) return "head dims differ";
  if (d <= 0 || d % 16 != 0 || d > codegen::kAttentionMaxHeadDim)
    return "head dim " + std::to_string(d) + " (the kernel takes multiples of 16 up to " +
           std::to_string(codegen::kAttentionMaxHeadDim) + ")";
  const bool heads_fit = enable_gqa ? k.size(1) > 0 && q.size(1) % k.size(1) == 0 : k.size(1) == q.size(1);
  if (k.size(0) != q.size(0) || v.size(0) != q.size(0) || v.size(1) != k.size(1) || !heads_fit)
    return "key or value with another batch or head count";
  if (k.size(2) != v.size(2)) return "key and value of different lengths";
  if (q.numel() == 0 || k.numel() == 0) return "empty";
  if (mask) {
    if (mask->scalar_type() != q.scalar_type()) return "a mask not additive in the query's dtype";
    if (mask->dim() > 4) return "a mask of rank above 4";
    const int64_t scores[4] = {q.size(0), q.size(1), q.size(2), k.size(2)};
    for (int64_t i = 1; i <= mask->dim(); ++i) {
      const int64_t s = mask->size(-i);
      if (s != 1 && s != scores[4 - i]) return "a mask that does not broadcast to the scores";
    }
  }
  const int64_t rows_a_block = codegen::kAttentionRowsPerWarp;
  if ((q.size(2) + rows_a_block - 1) / rows_a_block * q.size(0) * q.size(1) > std::numeric_limits<int32_t>::max())
    return "more blocks than a grid holds";
  if (!q.is_cuda() || !k.is_cuda() || !v.is_cuda() || (mask && !mask->is_cuda())) return "not CUDA tensors";
  if (device_info(q.device().index()).cc_major < 8) return "a device before sm_80 (no 16-bit mma.sync)";
  return "";
}

KeySplit attention_key_split(int64_t head_dim, int64_t keys) {
  KeySplit best;
  for (int key_block : {64, 32}) {
    const int64_t blocks = (keys + key_block - 1) / key_block;
    int ways = codegen::attention_max_key_split(static_cast<int>(head_dim), key_block);
    while (ways > 1 && ways > blocks) ways /= 2;
    // Above head dim 32 a tie goes to blocks of 32, as many warps busy in fewer registers: split 2
    // ways, blocks of 64 take 229 registers or more there and spill with a mask at head dims 48 to
    // 80 (ptxas, sm_90), where blocks of 32 do not (docs/performance.md).
    const bool fewer_registers = ways == best.ways && ways > 1 && head_dim > 32;
    if (ways > best.ways || fewer_registers) best = {ways, key_block};
  }
  return best;
}

bool attention_key_split_worth_timing(const at::Tensor& q, const at::Tensor& k, int sm_count) {
  if (attention_key_split(q.size(3), k.size(2)).ways < 2) return false;
  const int64_t tiles = (q.size(2) + codegen::kAttentionRowsPerWarp - 1) / codegen::kAttentionRowsPerWarp;
  return tiles * q.size(0) * q.size(1) < 4 * static_cast<int64_t>(sm_count);
}

codegen::AttentionSpec attention_kernel_spec(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                             const at::Tensor& out, const c10::optional<at::Tensor>& mask,
                                             bool is_causal, AttentionSchedule schedule, int sm_count) {
  codegen::AttentionSpec spec;
  spec.dtype = q.scalar_type();
  spec.head_dim = static_cast<int>(q.size(3));
  const KeySplit split = schedule == AttentionSchedule::kKeys ? attention_key_split(q.size(3), k.size(2)) : KeySplit{};
  spec.key_split = split.ways;
  spec.key_block = split.key_block;
  spec.warps = split.ways > 1 ? split.ways : warps_for(q.size(2), q.size(0) * q.size(1), sm_count);
  spec.mask = mask.has_value();
  spec.mask_pairs = mask.has_value() && mask_in_pairs(*mask, expanded_mask_strides(*mask, q, k), k.size(2));
  spec.causal = is_causal;
  spec.vector_loads = rows_of_16_bytes(q) && rows_of_16_bytes(k) && rows_of_16_bytes(v) && rows_of_16_bytes(out);
  return spec;
}

at::Tensor attention_kernel_output(const at::Tensor& q) {
  // The query's order of batch, heads and rows (heads inside rows, as a projection's output
  // viewed per head is), the head dim innermost: the view back to [batch, rows, heads * dim]
  // after it then needs no copy.
  const int64_t b = q.size(0), h = q.size(1), l = q.size(2), d = q.size(3);
  if (h > 1 && l > 1 && q.stride(1) < q.stride(2)) return at::empty({b, l, h, d}, q.options()).transpose(1, 2);
  return at::empty({b, h, l, d}, q.options());
}

int64_t pack_attention_arguments(ParamPacker& p, const codegen::AttentionSpec& spec, const at::Tensor& q,
                                 const at::Tensor& k, const at::Tensor& v, const c10::optional<at::Tensor>& mask,
                                 const at::Tensor& out, double scale) {
  const int64_t batch = q.size(0), heads = q.size(1), rows = q.size(2);
  const int64_t rows_a_block = codegen::kAttentionRowsPerWarp * spec.warps / spec.key_split;
  const int64_t tiles = (rows + rows_a_block - 1) / rows_a_block;
  const std::array<int64_t, 4> mask_strides = mask ? expanded_mask_strides(*mask, q, k) : std::array<int64_t, 4>{};
  p.ptr(q.data_ptr());
  p.ptr(k.data_ptr());
  p.ptr(v.data_ptr());
  p.ptr(mask ? mask->data_ptr() : nullptr);
  p.ptr(out.data_ptr());
  for (int64_t x : {batch, heads, k.size(1), rows, k.size(2), tiles}) p.i64(x);
  const auto strides_of = [](const at::Tensor& t) {
    return std::array<int64_t, 4>{t.stride(0), t.stride(1), t.stride(2), t.stride(3)};
  };
  for (const std::array<int64_t, 4>& strides : {strides_of(q), strides_of(k), strides_of(v), mask_strides, strides_of(out)})
    for (int64_t x : strides) p.i64(x);
  p.f64(scale);
  return tiles * batch * heads;
}

c10::optional<AttentionSchedule> attention_kernel_forced() {
  const char* v = std::getenv("TORCHFUSE_ATTENTION_KERNEL");
  if (!v) return c10::nullopt;
  if (std::strcmp(v, "1") == 0) return AttentionSchedule::kRows;
  if (std::strcmp(v, "keys") == 0) return AttentionSchedule::kKeys;
  return c10::nullopt;
}

at::Tensor attention_kernel(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const c10::optional<at::Tensor>& mask, double scale, bool is_causal, bool enable_gqa,
                            AttentionSchedule schedule) {
  const std::string why = attention_kernel_unusable(q, k, v, mask, enable_gqa);
  TORCHFUSE_INTERNAL_ASSERT(why.empty(), "attention kernel called on a call it cannot run: ", why);
  at::Tensor out = attention_kernel_output(q);
  const codegen::AttentionSpec spec =
      attention_kernel_spec(q, k, v, out, mask, is_causal, schedule, device_info(q.device().index()).sm_count);
  const codegen::GeneratedKernel& kernel = kernel_for(spec);
  ParamPacker p;
  const int64_t blocks = pack_attention_arguments(p, spec, q, k, v, mask, out, scale);
  OnDevice on(q.device());
  launch(kernel, kernel.name, q.device(), blocks, 1, 32 * spec.warps, p, nullptr);
  return out;
}

}  // namespace runtime
}  // namespace torchfuse
