#include "runtime/launchers.h"

#include <algorithm>
#include <limits>

#include <ATen/ATen.h>

#include "codegen/cuda_types.h"
#include "codegen/pointwise.h"
#include "codegen/reduction_common.h"
#include "codegen/reduction_layout.h"
#include "codegen/row_reduction.h"
#include "codegen/split_reduction.h"
#include "codegen/tuning.h"
#include "runtime/driver_api.h"
#include "runtime/launch_util.h"
#include "src/error.h"

namespace torchfuse {
namespace runtime {
namespace {

using codegen::Access;

constexpr int kFullBlock = 512;

std::vector<c10::ScalarType> element_output_dtypes(const FusionGroup& g, const codegen::ReductionAnalysis* a) {
  std::vector<c10::ScalarType> out;
  for (const ir::Value* v : g.outputs)
    if (!a || !a->is_row(v)) out.push_back(v->type.dtype);
  return out;
}

bool has_strides(Access a) { return a == Access::InnerContig || a == Access::InnerBroadcast || a == Access::Strided; }

// Every input a kernel streams (element by element, no element shared between threads) is 16-bit.
template <typename Operand>
bool streams_16bit(const std::vector<Operand>& inputs) {
  bool any = false;
  for (const auto& in : inputs) {
    if (in.access == Access::Scalar || in.access == Access::Uniform || in.access == Access::InnerBroadcast || in.shared)
      continue;
    if (c10::elementSize(in.dtype) != 2) return false;
    any = true;
  }
  return any;
}

codegen::PointwiseLayout pointwise_layout(const FusionGroup& g, const codegen::ReductionAnalysis* a, const CallInputs& c) {
  const auto outputs = element_output_dtypes(g, a);
  auto l = codegen::plan_pointwise_layout(c.domain, c.shapes, outputs, kMaxGridThreads);
  l.hints = codegen::choose_cache_hints({false, !outputs.empty(), streams_16bit(l.inputs)});
  return l;
}

// A full reduction iterates like a pointwise kernel, with its own unroll.
codegen::PointwiseLayout full_layout(const FusionGroup& g, const codegen::ReductionAnalysis& a, const CallInputs& c) {
  auto l = pointwise_layout(g, &a, c);
  // The vector path reads whole vectors of linear inputs alone (pointwise_vectors_fit with
  // linear_only): with a strided or broadcast input it could never run, and is not generated.
  for (const auto& in : l.inputs) {
    if (in.access != Access::Linear && in.access != Access::Uniform && in.access != Access::Scalar) l.vec = 1;
  }
  // (The grid stays far below kMaxGridThreads, so the index width planned for it still holds.)
  const int unroll = codegen::tuning().full_unroll;
  l.unroll = l.vec == 1 ? 1 : unroll > 0 ? unroll : streams_16bit(l.inputs) ? 2 : 1;
  return l;
}

codegen::ReductionLayout reduction_layout(const FusionGroup& g, const codegen::ReductionAnalysis& a, const CallInputs& c,
                                          const codegen::DeviceTarget& target, bool allow_vector) {
  auto l = codegen::plan_reduction_layout(g.schedule, c.domain, a.rd.dims, c.shapes, a.cache_needs,
                                          a.online_cache_needs ? &*a.online_cache_needs : nullptr, target, allow_vector);
  const bool rows = g.schedule == Schedule::RowReduction;
  const bool looped = rows && !l.cached;
  // Rows a block keeps on chip for its later passes: in registers (cached), shared memory
  // (staged) or a ring of shared-memory chunks.
  const bool keeps = l.cached || l.ring_chunk > 0;
  const int64_t held = rows && keeps && a.passes > 1 ? l.reduced() : 0;
  // Inputs several rows read, and whether one of them differs between rows (a nonzero stride
  // over a row dim: an attention mask's query dim, unlike a layer norm's weights; the planner's
  // coalesced row dims all have sizes > 1).
  const auto differs = [](const codegen::SegmentedOperand& in) {
    return std::any_of(in.outer_strides.begin(), in.outer_strides.end(), [](int64_t s) { return s != 0; });
  };
  const bool shared = rows && std::any_of(l.inputs.begin(), l.inputs.end(), [](const auto& in) { return in.shared; });
  const bool shared_differ =
      rows && std::any_of(l.inputs.begin(), l.inputs.end(), [&](const auto& in) { return in.shared && differs(in); });
  l.hints = codegen::choose_cache_hints({looped, !element_output_dtypes(g, &a).empty(), streams_16bit(l.inputs), held,
                                         l.stages > 0 || l.ring_chunk > 0, shared, shared_differ});
  return l;
}

// Row schedule's vector loads need each row start and pointer aligned to the vector.
bool row_vectors_fit(const codegen::ReductionLayout& l, const CallInputs& c) {
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    if (l.inputs[k].access != Access::InnerContig) continue;
    const at::Tensor& t = c.values[k].toTensor();
    if (!aligned(t.data_ptr(), l.vec * t.element_size())) return false;
    for (int64_t s : l.inputs[k].outer_strides)
      if (s % l.vec != 0) return false;
  }
  return true;
}

// Column vector loads along the contiguous inner dim: aligned pointers and row starts.
bool column_vectors_fit(const codegen::ReductionLayout& l, const CallInputs& c) {
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const auto& op = l.inputs[k];
    if (op.access == Access::Scalar || op.access == Access::Uniform) continue;
    if (op.inner_strides.size() != 1 || op.inner_strides[0] != 1) continue;
    const at::Tensor& t = c.values[k].toTensor();
    if (!aligned(t.data_ptr(), l.vec * t.element_size())) return false;
    for (int64_t s : op.outer_strides)
      if (s % l.vec != 0) return false;
    for (int64_t s : op.red_strides)
      if (s % l.vec != 0) return false;
  }
  return true;
}

// The pointwise/full vector path needs whole vectors per innermost row and aligned accesses.
bool pointwise_vectors_fit(const codegen::PointwiseLayout& l, const CallInputs& c, const std::vector<at::Tensor>& out,
                           bool linear_only) {
  if (l.vec <= 1 || l.sizes.back() % l.vec != 0) return false;
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const auto& op = l.inputs[k];
    if (linear_only && op.access != Access::Linear && op.access != Access::Uniform && op.access != Access::Scalar)
      return false;
    if (op.access != Access::Linear && op.access != Access::InnerContig) continue;
    const at::Tensor& t = c.values[k].toTensor();
    if (!aligned(t.data_ptr(), l.vec * t.element_size())) return false;
    for (size_t d = 0; d + 1 < op.strides.size(); ++d)
      if (op.strides[d] % l.vec != 0) return false;
  }
  for (const auto& t : out)
    if (!aligned(t.data_ptr(), l.vec * t.element_size())) return false;
  return true;
}

std::vector<at::Tensor> allocate_outputs(const FusedKernel& fk, const CallInputs& c) {
  const auto sizes = output_sizes(fk.group(), fk.analysis(), c.domain);
  std::vector<at::Tensor> out;
  for (size_t k = 0; k < sizes.size(); ++k) {
    out.push_back(new_output(sizes[k], fk.group().outputs[k]->type.dtype, c.device, fk.poison_outputs()));
  }
  return out;
}

at::Tensor partials(const ir::Node& r, int64_t n, const c10::Device& device) {
  return at::empty({n}, at::TensorOptions().dtype(codegen::accumulator_dtype(r, true)).device(device));
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Packs a number's value or a tensor's pointer; true when the operand's strides follow.
bool pack_operand(ParamPacker& p, Access access, const c10::IValue& v) {
  if (access == Access::Scalar) {
    p.scalar(v);
    return false;
  }
  p.ptr(v.toTensor().data_ptr());
  return access != Access::Uniform;
}

// The tf_fast_div dividers of a size array (as long as its `array` packing; sizes of 0 or 1
// divide nothing the kernel reaches, and pack the divider of 1).
void pack_dividers(ParamPacker& p, const std::vector<int64_t>& sizes) {
  if (sizes.empty()) p.i64(static_cast<int64_t>(codegen::fast_divider(1)));
  for (int64_t s : sizes) p.i64(static_cast<int64_t>(codegen::fast_divider(std::max<int64_t>(s, 1))));
}

// ---- pointwise ----

std::vector<at::Tensor> launch_pointwise(FusedKernel& fk, const CallInputs& c) {
  const auto l = pointwise_layout(fk.group(), nullptr, c);
  auto out = allocate_outputs(fk, c);
  const int64_t numel = l.numel();
  if (numel == 0) return out;
  const auto& kernel = fk.kernel_for("pw;" + l.key(), [&] { return codegen::generate_pointwise(fk.group(), l); });
  const bool vec_ok = pointwise_vectors_fit(l, c, out, false);
  ParamPacker p;
  p.i64(numel);
  p.i64(vec_ok ? 1 : 0);
  for (int64_t s : l.sizes) p.i64(s);
  if (!l.index64) pack_dividers(p, l.sizes);
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const auto& op = l.inputs[k];
    if (pack_operand(p, op.access, c.values[k]) && has_strides(op.access)) p.array(op.strides, 0);
  }
  for (const auto& t : out) p.ptr(t.data_ptr());
  const DeviceInfo& info = device_info(c.device.index());
  const int64_t work = vec_ok ? ceil_div(ceil_div(numel, l.vec), l.unroll) : numel;
  // `pointwise_waves` grid-stride rounds of a full device (0: as many blocks as the work needs).
  const int64_t waves = codegen::tuning().pointwise_waves;
  const int64_t full_device = int64_t{info.sm_count} * (2048 / kernel.block_size);
  const int64_t max_blocks = std::min<int64_t>(waves == 0 ? kMaxGridThreads : full_device * waves,
                                               kMaxGridThreads / kernel.block_size);
  const int64_t blocks = std::max<int64_t>(1, std::min(ceil_div(work, kernel.block_size), max_blocks));
  launch(kernel, kernel.name, c.device, blocks, 1, kernel.block_size, p, fk.counters());
  fk.count_launches(1);
  return out;
}

// ---- row ----

std::vector<at::Tensor> launch_row(FusedKernel& fk, const CallInputs& c) {
  const auto& a = *fk.analysis();
  const DeviceInfo& info = device_info(c.device.index());
  const codegen::DeviceTarget target = target_of(info);
  auto l = reduction_layout(fk.group(), a, c, target, true);
  if (l.vec > 1 && !row_vectors_fit(l, c)) l = reduction_layout(fk.group(), a, c, target, false);
  auto out = allocate_outputs(fk, c);
  const int64_t rows = l.outer();
  if (rows == 0) return out;
  const auto& kernel = fk.kernel_for("row;" + l.key(), [&] { return codegen::generate_row_reduction(fk.group(), l); });
  ParamPacker p;
  p.i64(rows);
  p.i64(l.reduced());
  p.array(l.outer_sizes, 1);
  if (!l.index64) pack_dividers(p, l.outer_sizes);
  p.array(l.red_sizes, 1);
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const auto& op = l.inputs[k];
    if (!pack_operand(p, op.access, c.values[k])) continue;
    p.array(op.outer_strides, 0);
    if (op.access == Access::InnerContig || op.access == Access::Strided) p.array(op.red_strides, 0);
  }
  for (const auto& t : out) p.ptr(t.data_ptr());
  const int rows_per_block = l.block / l.threads_per_row;
  // Looped rows are re-read by every pass: few blocks per multiprocessor keep the rows in flight
  // small enough for the re-reads to hit L2. Cached rows: `row_waves` grid-stride rounds of a
  // full device, or (0) l.rounds teams of rows per block, the hardware balancing the tail.
  const codegen::Tuning& tune = codegen::tuning();
  const int64_t full_device = int64_t{info.sm_count} * (2048 / l.block);
  const int64_t teams = ceil_div(rows, rows_per_block);
  const int64_t max_blocks = !l.cached          ? int64_t{info.sm_count} * l.looped_blocks_per_sm
                             : tune.row_waves == 0 ? ceil_div(teams, int64_t{l.rounds})
                                                   : full_device * tune.row_waves;
  if (l.ring_chunk > 0) {
    // Ringed rows: as many blocks as the device holds at once (one per multiprocessor: the ring
    // takes its shared memory), each taking its rows in turn.
    const int64_t smem = l.ring_block_bytes();
    const int per_sm = resident_blocks(kernel, c.device, l.block, smem, fk.counters());
    const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(rows, int64_t{info.sm_count} * per_sm));
    launch(kernel, kernel.name, c.device, blocks, 1, l.block, p, fk.counters(), smem);
  } else if (l.stages > 0) {
    // Staged rows with one buffer: a block per row group, the hardware overlapping one block's
    // copy with another's work. With a ring of buffers: as many blocks as the device holds at
    // once (times `row_waves`, where set), each taking its row groups in turn.
    const int64_t smem = l.staged_block_bytes();
    int64_t blocks = std::min<int64_t>(teams, std::numeric_limits<int32_t>::max());  // the kernel strides over the rest
    if (l.stages > 1) {
      const int per_sm = resident_blocks(kernel, c.device, l.block, smem, fk.counters());
      blocks = std::min(blocks, int64_t{info.sm_count} * per_sm * std::max(1, tune.row_waves));
    }
    blocks = std::max<int64_t>(1, blocks);
    launch(kernel, kernel.name, c.device, blocks, 1, l.block, p, fk.counters(), smem);
  } else if (l.cluster > 1) {
    // A cluster per row (the kernel strides over rows by the grid's clusters).
    const int64_t clusters = std::min<int64_t>(rows, std::numeric_limits<int32_t>::max() / l.cluster);
    launch_clustered(kernel, c.device, clusters * l.cluster, l.cluster, l.block, p, fk.counters());
  } else {
    const int64_t blocks = std::max<int64_t>(1, std::min(teams, max_blocks));
    launch(kernel, kernel.name, c.device, blocks, 1, l.block, p, fk.counters());
  }
  fk.count_launches(1);
  return out;
}

// ---- column ----

std::vector<at::Tensor> launch_column(FusedKernel& fk, const CallInputs& c) {
  const auto& a = *fk.analysis();
  const DeviceInfo& info = device_info(c.device.index());
  auto l = reduction_layout(fk.group(), a, c, target_of(info), true);
  if (l.vec > 1 && !column_vectors_fit(l, c)) l = reduction_layout(fk.group(), a, c, target_of(info), false);
  auto out = allocate_outputs(fk, c);
  const int64_t O = l.outer(), R = l.reduced(), I = l.inner();
  if (O * I == 0) return out;
  const auto& kernel = fk.kernel_for("col;" + l.key(), [&] { return codegen::generate_column_reduction(fk.group(), l); });
  std::vector<at::Tensor> parts;
  for (const ir::Node* r : a.reductions) {
    if (l.split > 1) parts.push_back(partials(*r, l.split * O * I, c.device));
  }
  ParamPacker p;
  p.i64(O);
  p.i64(R);
  p.i64(I);
  p.i64(l.split);
  p.array(l.outer_sizes, 1);
  p.array(l.red_sizes, 1);
  p.array(l.inner_sizes, 1);
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const auto& op = l.inputs[k];
    if (!pack_operand(p, op.access, c.values[k])) continue;
    p.array(op.outer_strides, 0);
    p.array(op.red_strides, 0);
    p.array(op.inner_strides, 0);
  }
  for (const auto& t : out) p.ptr(t.data_ptr());
  for (size_t r = 0; r < a.reductions.size(); ++r) p.ptr(l.split > 1 ? parts[r].data_ptr() : nullptr);
  const int64_t tiles = ceil_div(I, 32 * l.vec) * O;
  p.ptr(l.split > 1 ? stream_counters(c.device, tiles) : nullptr);
  launch(kernel, kernel.name, c.device, tiles, l.split, 256, p, fk.counters());
  fk.count_launches(1);
  return out;
}

// ---- full ----

std::vector<at::Tensor> launch_full(FusedKernel& fk, const CallInputs& c) {
  const auto& a = *fk.analysis();
  const auto l = full_layout(fk.group(), a, c);
  auto out = allocate_outputs(fk, c);
  const auto& kernel = fk.kernel_for("full;" + l.key(), [&] { return codegen::generate_full_reduction(fk.group(), l, kFullBlock); });
  std::vector<at::Tensor> element_outputs;
  for (size_t k = 0; k < out.size(); ++k)
    if (!a.is_row(fk.group().outputs[k])) element_outputs.push_back(out[k]);
  const bool vec_ok = pointwise_vectors_fit(l, c, element_outputs, true);
  const int64_t numel = l.numel();
  const DeviceInfo& info = device_info(c.device.index());
  const int64_t blocks = std::max<int64_t>(
      1, std::min(ceil_div(vec_ok ? ceil_div(ceil_div(numel, l.vec), l.unroll) : numel, kFullBlock), int64_t{info.sm_count} * 4));
  std::vector<at::Tensor> parts;
  for (const ir::Node* r : a.reductions) parts.push_back(partials(*r, blocks, c.device));
  ParamPacker p;
  p.i64(numel);
  p.i64(vec_ok ? 1 : 0);
  for (int64_t s : l.sizes) p.i64(s);
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const auto& op = l.inputs[k];
    if (pack_operand(p, op.access, c.values[k]) && op.access != Access::Linear) p.array(op.strides, 0);
  }
  for (const auto& t : out) p.ptr(t.data_ptr());
  for (const auto& t : parts) p.ptr(t.data_ptr());
  p.ptr(blocks > 1 ? stream_counters(c.device, 1) : nullptr);
  launch(kernel, kernel.name, c.device, blocks, 1, kFullBlock, p, fk.counters());
  fk.count_launches(1);
  return out;
}

}  // namespace

std::vector<std::vector<int64_t>> output_sizes(const FusionGroup& g, const codegen::ReductionAnalysis* a,
                                               const std::vector<int64_t>& domain) {
  std::vector<std::vector<int64_t>> sizes;
  for (const ir::Value* v : g.outputs) {
    if (!a || !a->is_row(v)) {
      sizes.push_back(domain);
      continue;
    }
    const ReductionDomain actual{domain, a->rd.dims};
    sizes.push_back(v->type.sizes == a->rd.keep_shape() ? actual.keep_shape() : actual.squeezed_shape());
  }
  return sizes;
}

PlannedKernel plan_and_generate(const FusionGroup& g, const codegen::ReductionAnalysis* a, const CallInputs& call,
                                const codegen::DeviceTarget& target, bool allow_vector) {
  switch (g.schedule) {
    case Schedule::Pointwise: {
      const auto l = pointwise_layout(g, nullptr, call);
      return {"pw;" + l.key(), codegen::generate_pointwise(g, l)};
    }
    case Schedule::RowReduction: {
      const auto l = reduction_layout(g, *a, call, target, allow_vector);
      return {"row;" + l.key(), codegen::generate_row_reduction(g, l)};
    }
    case Schedule::ColumnReduction: {
      const auto l = reduction_layout(g, *a, call, target, allow_vector);
      return {"col;" + l.key(), codegen::generate_column_reduction(g, l)};
    }
    case Schedule::FullReduction: {
      const auto l = full_layout(g, *a, call);
      return {"full;" + l.key(), codegen::generate_full_reduction(g, l, kFullBlock)};
    }
  }
  TORCHFUSE_INTERNAL_ASSERT(false, "unknown schedule");
}

std::vector<at::Tensor> launch_group(FusedKernel& fk, const CallInputs& call) {
  switch (fk.group().schedule) {
    case Schedule::Pointwise: return launch_pointwise(fk, call);
    case Schedule::RowReduction: return launch_row(fk, call);
    case Schedule::ColumnReduction: return launch_column(fk, call);
    case Schedule::FullReduction: return launch_full(fk, call);
  }
  TORCHFUSE_INTERNAL_ASSERT(false, "unknown schedule");
}

}  // namespace runtime
}  // namespace torchfuse
