#include "codegen/layout.h"

#include <algorithm>
#include <limits>

#include "codegen/cuda_types.h"
#include "codegen/tuning.h"
#include "src/error.h"
#include "src/ir.h"

namespace torchfuse {
namespace codegen {

const char* access_name(Access a) {
  switch (a) {
    case Access::Linear: return "linear";
    case Access::InnerContig: return "inner_contiguous";
    case Access::InnerBroadcast: return "inner_broadcast";
    case Access::Strided: return "strided";
    case Access::Uniform: return "uniform";
    case Access::Scalar: return "scalar";
  }
  return "?";
}

int64_t PointwiseLayout::numel() const {
  int64_t n = 1;
  for (auto s : sizes) n *= s;
  return n;
}

std::string PointwiseLayout::key() const {
  const std::string tiled = tile_dim < 0 ? "" : ";tile=" + std::to_string(tile_dim) + "/" + std::to_string(tile);
  std::string k = "rank=" + std::to_string(sizes.size()) + ";vec=" + std::to_string(vec) +
                  ";unroll=" + std::to_string(unroll) +
                  ";idx=" + (index64 ? "64" : "32") + ";fast=" + std::to_string(fast_math) + ";hints=" + std::to_string(hints.evict_loads) +
                  std::to_string(hints.evict_stores) + ";in=";
  for (const auto& in : inputs) {
    k += std::string(access_name(in.access)) + ":" + c10::toString(in.dtype) + (in.shared ? ":shared" : "") +
         (in.tiled ? ":tiled," : ",");
  }
  k += ";out=";
  for (auto o : outputs) k += std::string(c10::toString(o)) + ",";
  if (!cats.empty()) {
    k += ";cats=";
    for (const auto& c : cats) k += std::to_string(c.dim) + "/" + std::to_string(c.bounds.size()) + ",";
  }
  return k + tiled;
}

namespace {

// Strides of an operand over the (uncoalesced) domain: right-aligned, broadcast dims 0.
std::vector<int64_t> expand_strides(const std::vector<int64_t>& domain, const OperandShape& op) {
  std::vector<int64_t> out(domain.size(), 0);
  const size_t offset = domain.size() - op.sizes.size();
  for (size_t i = 0; i < op.sizes.size(); ++i) {
    out[offset + i] = op.sizes[i] == 1 ? 0 : op.strides[i];
  }
  return out;
}

int64_t max_offset(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  int64_t m = 0;
  for (size_t d = 0; d < sizes.size(); ++d) m += (sizes[d] - 1) * std::abs(strides[d]);
  return m;
}

}  // namespace

void coalesce_dims(const std::vector<int64_t>& domain, int64_t lo, int64_t hi,
                   const std::vector<std::vector<int64_t>>& strides, std::vector<int64_t>& sizes_out,
                   std::vector<std::vector<int64_t>>& strides_out, const std::vector<int64_t>& keep_apart,
                   std::vector<int64_t>* coalesced_of) {
  strides_out.assign(strides.size(), {});
  if (coalesced_of) coalesced_of->assign(domain.size(), -1);
  for (int64_t d = lo; d < hi; ++d) {
    if (domain[d] == 1) continue;
    bool merge = !sizes_out.empty() && std::find(keep_apart.begin(), keep_apart.end(), d) == keep_apart.end();
    if (coalesced_of) (*coalesced_of)[d] = static_cast<int64_t>(sizes_out.size()) - (merge ? 1 : 0);
    for (size_t k = 0; merge && k < strides.size(); ++k) merge = strides_out[k].back() == strides[k][d] * domain[d];
    if (merge) {
      sizes_out.back() *= domain[d];
      for (size_t k = 0; k < strides.size(); ++k) strides_out[k].back() = strides[k][d];
      continue;
    }
    sizes_out.push_back(domain[d]);
    for (size_t k = 0; k < strides.size(); ++k) strides_out[k].push_back(strides[k][d]);
  }
}

bool has_broadcast_dim(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  for (size_t d = 0; d < sizes.size() && d < strides.size(); ++d)
    if (strides[d] == 0 && sizes[d] > 1) return true;
  return false;
}

int choose_vector_width(const std::vector<OperandLayout>& inputs, const std::vector<c10::ScalarType>& outputs) {
  size_t widest = 1;
  for (const auto& in : inputs) {
    if (in.access == Access::Linear || in.access == Access::InnerContig)
      widest = std::max(widest, c10::elementSize(in.dtype));
  }
  for (auto o : outputs) widest = std::max(widest, c10::elementSize(o));
  return static_cast<int>(std::min<size_t>(8, 16 / widest));
}

PointwiseLayout plan_pointwise_layout(const std::vector<int64_t>& domain, const std::vector<OperandShape>& inputs,
                                      const std::vector<c10::ScalarType>& outputs, int64_t max_threads,
                                      const Tuning& tune, const std::vector<CatSplit>& cats) {
  // Operand strides over the domain; the outputs' contiguous strides take part in coalescing.
  std::vector<std::vector<int64_t>> strides;
  for (const auto& in : inputs) {
    if (in.is_tensor) strides.push_back(expand_strides(domain, in));
  }
  strides.push_back(ir::contiguous_strides(domain));

  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> cs;
  std::vector<int64_t> keep_apart, coalesced_of;
  for (const auto& c : cats) keep_apart.push_back(c.dim);
  coalesce_dims(domain, 0, static_cast<int64_t>(domain.size()), strides, sizes, cs, keep_apart, &coalesced_of);
  if (sizes.empty()) {
    sizes.push_back(1);
    for (auto& s : cs) s.push_back(0);
  }
  const std::vector<int64_t>& out_strides = cs.back();

  PointwiseLayout layout;
  layout.sizes = sizes;
  layout.outputs = outputs;
  size_t t = 0;
  int64_t largest_offset = layout.numel();
  for (const auto& in : inputs) {
    OperandLayout ol;
    ol.dtype = in.dtype;
    if (!in.is_tensor) {
      ol.access = Access::Scalar;
      layout.inputs.push_back(ol);
      continue;
    }
    const auto& s = cs[t++];
    const bool all_zero = std::all_of(s.begin(), s.end(), [](int64_t v) { return v == 0; });
    if (all_zero) ol.access = Access::Uniform;
    else if (s == out_strides) ol.access = Access::Linear;
    else if (s.back() == 1) ol.access = Access::InnerContig;
    else if (s.back() == 0) ol.access = Access::InnerBroadcast;
    else ol.access = Access::Strided;
    if (ol.access != Access::Linear && ol.access != Access::Uniform) ol.strides = s;
    ol.shared = has_broadcast_dim(sizes, s);
    largest_offset = std::max(largest_offset, max_offset(sizes, s) + 1);
    layout.inputs.push_back(ol);
  }
  for (const auto& c : cats) {
    CatLayout cl;
    const int64_t d = c.dim;
    TORCHFUSE_INTERNAL_ASSERT(d >= 0 && d < static_cast<int64_t>(domain.size()), "cat dim ", d, " outside the domain ",
                              ir::shape_str(domain));
    // (A dim of size 1 or 0 holds no boundary that an element crosses: numel 0 launches nothing.)
    const int64_t at = coalesced_of[d] >= 0 ? coalesced_of[d] : 0;
    const int64_t inner = domain[d] > 1 && coalesced_of[d] >= 0 ? sizes[at] / domain[d] : 1;
    cl.dim = at;
    for (int64_t s : c.starts) cl.bounds.push_back(s * inner);
    layout.cats.push_back(std::move(cl));
  }
  layout.vec = choose_vector_width(layout.inputs, outputs);
  // Several independent loads per thread keep enough bytes in flight to cover DRAM latency.
  // Strided operands are read lane by lane inside the computation, so they get no unroll.
  const bool strided = std::any_of(layout.inputs.begin(), layout.inputs.end(),
                                   [](const OperandLayout& in) { return in.access == Access::Strided; });
  layout.unroll = layout.vec > 1 && !strided && cats.empty() ? tune.pointwise_unroll : 1;
  layout.fast_math = tune.fast_math != 0;
  // 32-bit indices when every offset, and the grid-stride loop's last step, fit in int.
  const int64_t slack = max_threads * std::max(layout.vec, layout.unroll);
  layout.index64 = largest_offset + slack >= std::numeric_limits<int32_t>::max();
  return layout;
}

bool tile_transposed_inputs(PointwiseLayout& layout, const Tuning& tune) {
  constexpr int64_t kTileSharedBytes = 48 * 1024;  // static shared memory a block may declare
  const int64_t rank = static_cast<int64_t>(layout.sizes.size());
  const int tile = tune.pointwise_tile;
  if (tile <= 0 || rank < 2 || !layout.cats.empty() || layout.sizes.back() < tile / 2) return false;
  // Bytes of transposed inputs contiguous along each dim.
  std::vector<int64_t> bytes(rank - 1, 0);
  for (const auto& in : layout.inputs) {
    if (in.access != Access::Strided) continue;
    for (int64_t d = 0; d + 1 < rank; ++d) {
      if (in.strides[d] == 1 && layout.sizes[d] >= tile / 2) bytes[d] += static_cast<int64_t>(c10::elementSize(in.dtype));
    }
  }
  const auto best = std::max_element(bytes.begin(), bytes.end());  // the first of equals: deterministic
  if (*best == 0) return false;
  layout.tile_dim = static_cast<int>(best - bytes.begin());
  for (auto& in : layout.inputs) in.tiled = in.access == Access::Strided && in.strides[layout.tile_dim] == 1;
  // Each tiled input has a tile of registers' type in static shared memory: smaller tiles where
  // those would pass a block's 48 KiB (three fp16 inputs at 64 x 65 floats do), none where even
  // tiles of 16 would.
  int64_t per_element = 0;
  for (const auto& in : layout.inputs)
    if (in.tiled) per_element += static_cast<int64_t>(c10::elementSize(register_dtype(in.dtype)));
  layout.tile = tile;
  while (layout.tile > 16 && per_element * layout.tile * (layout.tile + 1) > kTileSharedBytes) layout.tile /= 2;
  if (per_element * layout.tile * (layout.tile + 1) > kTileSharedBytes) {
    layout.tile_dim = -1;
    layout.tile = 0;
    for (auto& in : layout.inputs) in.tiled = false;
    return false;
  }
  // Elements a thread takes along the contiguous dims (vector accesses where the launch finds
  // them aligned): 8 bytes of the widest operand, 1 where one is 8 bytes wide. (Tiles of 16 have
  // too few elements for a block's threads to take more than one.)
  size_t widest = 1;
  for (const auto& in : layout.inputs)
    if (in.access != Access::Scalar) widest = std::max(widest, c10::elementSize(in.dtype));
  for (auto o : layout.outputs) widest = std::max(widest, c10::elementSize(o));
  layout.vec = layout.tile >= 32 ? static_cast<int>(std::max<size_t>(1, std::min<size_t>(4, 8 / widest))) : 1;
  layout.unroll = 1;
  return true;
}

}  // namespace codegen
}  // namespace torchfuse
