#include "runtime/launchers.h"

#include <algorithm>
#include <limits>

#include <ATen/ATen.h>

#include "codegen/column_passes.h"
#include "codegen/cuda_types.h"
#include "codegen/reduction_common.h"
#include "codegen/schedule.h"
#include "runtime/driver_api.h"
#include "runtime/hot_path_clock.h"
#include "runtime/launch_util.h"
#include "runtime/plan_memo.h"
#include "src/error.h"

namespace torchfuse {
namespace runtime {
namespace {

using codegen::Access;

bool has_strides(Access a) { return a == Access::InnerContig || a == Access::InnerBroadcast || a == Access::Strided; }

// Input k's first element: the tensor's data pointer moved by the offset its views take
// (OperandShape::offset: a slice or select of the input). Kernels and alignment checks see this.
void* input_ptr(const CallInputs& c, size_t k) {
  const at::Tensor& t = c.values[k].toTensor();
  return static_cast<char*>(t.data_ptr()) + c.shapes[k].offset * static_cast<int64_t>(t.element_size());
}

// Is input k's first element aligned to `vec` of its elements?
bool input_aligned(const CallInputs& c, size_t k, int vec) {
  return aligned(input_ptr(c, k), vec * c.values[k].toTensor().element_size());
}

// Row schedule's vector loads need each row start and pointer aligned to the vector.
bool row_vectors_fit(const codegen::ReductionLayout& l, const CallInputs& c) {
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    if (l.inputs[k].access != Access::InnerContig) continue;
    if (!input_aligned(c, k, l.vec)) return false;
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
    if (!input_aligned(c, k, l.vec)) return false;
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
  // A vector must not straddle two pieces of a cat along the innermost dim.
  for (const auto& cat : l.cats) {
    if (cat.dim + 1 != static_cast<int64_t>(l.sizes.size())) continue;
    for (int64_t b : cat.bounds)
      if (b % l.vec != 0) return false;
  }
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const auto& op = l.inputs[k];
    if (linear_only && op.access != Access::Linear && op.access != Access::Uniform && op.access != Access::Scalar)
      return false;
    if (op.access != Access::Linear && op.access != Access::InnerContig) continue;
    if (!input_aligned(c, k, l.vec)) return false;
    for (size_t d = 0; d + 1 < op.strides.size(); ++d)
      if (op.strides[d] % l.vec != 0) return false;
  }
  for (const auto& t : out)
    if (!aligned(t.data_ptr(), l.vec * t.element_size())) return false;
  return true;
}

// A tiled layout's vector path (codegen emit_tile_body): both tile dims hold whole vectors, and
// the transposed inputs (along the tile dim) and the inputs and outputs read along the innermost
// dim start aligned, with every other stride a whole number of vectors.
bool tiled_vectors_fit(const codegen::PointwiseLayout& l, const CallInputs& c, const std::vector<at::Tensor>& out) {
  const int v = l.vec;
  if (v <= 1 || l.sizes.back() % v != 0 || l.sizes[l.tile_dim] % v != 0) return false;
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const auto& op = l.inputs[k];
    const size_t along = op.tiled ? static_cast<size_t>(l.tile_dim) : op.strides.size() - 1;
    if (!op.tiled && op.access != Access::Linear && op.access != Access::InnerContig) continue;
    if (!input_aligned(c, k, v)) return false;
    for (size_t d = 0; d < op.strides.size(); ++d)
      if (d != along && op.strides[d] % v != 0) return false;
  }
  for (const auto& t : out)
    if (!aligned(t.data_ptr(), v * t.element_size())) return false;
  return true;
}

// A tiled pointwise layout's tiles: one block's work each.
int64_t tiles(const codegen::PointwiseLayout& l) {
  const int64_t st = l.sizes[l.tile_dim];
  const int64_t sl = l.sizes.back();
  return l.numel() / (st * sl) * ((st + l.tile - 1) / l.tile) * ((sl + l.tile - 1) / l.tile);
}

// More float elements than any device holds (512 TiB): what an injected out-of-memory fault asks for.
constexpr int64_t kImpossibleElements = int64_t{1} << 47;

std::vector<at::Tensor> allocate_outputs(const FusedKernel& fk, const CallInputs& c) {
  std::vector<std::vector<int64_t>> computed;
  if (c.output_sizes.empty()) computed = output_sizes(fk.group(), fk.analysis(), c.domain);
  const auto& sizes = c.output_sizes.empty() ? computed : c.output_sizes;
  // debug_fail_kernels "oom:": the caching allocator is asked for an impossible output, so that it
  // throws its own c10::OutOfMemoryError, as it does when the device is full.
  if (fk.inject_oom()) new_output({kImpossibleElements}, c10::ScalarType::Float, c.device, false);
  std::vector<at::Tensor> out;
  for (size_t k = 0; k < sizes.size(); ++k) {
    // (An output over a dying input: that input's tensor, which this call holds alone.)
    if (!c.taken.empty() && c.taken[k] >= 0) {
      out.push_back(c.values[c.taken[k]].toTensor());
      continue;
    }
    out.push_back(new_output(sizes[k], fk.group().outputs[k]->type.dtype, c.device, fk.poison_outputs()));
  }
  return out;
}

// n partial results of reduction r: its accumulator's type, or an online sum's pair of floats
// (tf_max_sum).
at::Tensor partials(const codegen::ReductionAnalysis& a, const ir::Node& r, int64_t n, const c10::Device& device) {
  if (a.online_sum(&r)) return at::empty({n, 2}, at::TensorOptions().dtype(at::kFloat).device(device));
  return at::empty({n}, at::TensorOptions().dtype(codegen::accumulator_dtype(r, true)).device(device));
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Packs input k's number or its pointer (input_ptr); true when the operand's strides follow.
bool pack_operand(ParamPacker& p, Access access, const CallInputs& c, size_t k) {
  if (access == Access::Scalar) {
    p.scalar(c.values[k]);
    return false;
  }
  p.ptr(input_ptr(c, k));
  return access != Access::Uniform;
}

// The tf_fast_div dividers of a size array (as long as its `array` packing; sizes of 0 or 1
// divide nothing the kernel reaches, and pack the divider of 1).
void pack_dividers(ParamPacker& p, const std::vector<int64_t>& sizes) {
  if (sizes.empty()) p.i64(static_cast<int64_t>(codegen::fast_divider(1)));
  for (int64_t s : sizes) p.i64(static_cast<int64_t>(codegen::fast_divider(std::max<int64_t>(s, 1))));
}

// ---- each schedule's launch: arguments and grid ----

// What a launch of one schedule needs beyond the unit's plan: whether the call's pointers and
// strides allow the planned vectors (else it is planned again without), whether there is work,
// and the arguments and grid of the kernel.
struct Launch {
  FusedKernel& fk;
  const CallInputs& c;
  const codegen::GeneratedKernel& kernel;
  const std::vector<at::Tensor>& out;
  const DeviceInfo& info;
};

class ScheduleLauncher {
 public:
  virtual ~ScheduleLauncher() = default;
  // Row and column schedules plan their vector width for the call: false asks for a plan
  // without vectors. (Pointwise and full kernels check at launch and pass vec_ok.)
  virtual bool vectors_fit(const codegen::KernelLayout&, const CallInputs&) const { return true; }
  virtual bool has_work(const codegen::KernelLayout& layout) const = 0;
  virtual void launch(const Launch& x, const codegen::KernelLayout& layout) const = 0;
};

class PointwiseLauncher : public ScheduleLauncher {
 public:
  bool has_work(const codegen::KernelLayout& layout) const override {
    return std::get<codegen::PointwiseLayout>(layout).numel() > 0;
  }
  void launch(const Launch& x, const codegen::KernelLayout& layout) const override {
    const auto& l = std::get<codegen::PointwiseLayout>(layout);
    const int64_t numel = l.numel();
    const bool tiled = l.tile_dim >= 0;
    const bool vec_ok = tiled ? tiled_vectors_fit(l, x.c, x.out) : pointwise_vectors_fit(l, x.c, x.out, false);
    ParamPacker p;
    p.i64(numel);
    p.i64(vec_ok ? 1 : 0);
    for (int64_t s : l.sizes) p.i64(s);
    if (!l.index64) pack_dividers(p, l.sizes);
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      const auto& op = l.inputs[k];
      if (pack_operand(p, op.access, x.c, k) && has_strides(op.access)) p.array(op.strides, 0);
    }
    for (const auto& cat : l.cats)
      for (int64_t b : cat.bounds) p.i64(b);
    for (const auto& t : x.out) p.ptr(t.data_ptr());
    const int64_t work = vec_ok ? ceil_div(ceil_div(numel, l.vec), l.unroll) : numel;
    // `pointwise_waves` grid-stride rounds of a full device (0: as many blocks as the work needs).
    const int64_t waves = x.fk.tuning().pointwise_waves;
    const int block = x.kernel.block_size;
    const int64_t full_device = int64_t{x.info.sm_count} * (2048 / block);
    const int64_t max_blocks = std::min<int64_t>(waves == 0 ? kMaxGridThreads : full_device * waves, kMaxGridThreads / block);
    const int64_t blocks = std::max<int64_t>(1, std::min(tiled ? tiles(l) : ceil_div(work, block), max_blocks));
    runtime::launch(x.kernel, x.kernel.name, x.c.device, blocks, 1, block, p, x.fk.counters());
  }
};

class RowLauncher : public ScheduleLauncher {
 public:
  bool vectors_fit(const codegen::KernelLayout& layout, const CallInputs& c) const override {
    const auto& l = std::get<codegen::ReductionLayout>(layout);
    return l.vec <= 1 || row_vectors_fit(l, c);
  }
  bool has_work(const codegen::KernelLayout& layout) const override {
    return std::get<codegen::ReductionLayout>(layout).outer() > 0;
  }
  void launch(const Launch& x, const codegen::KernelLayout& layout) const override {
    const auto& l = std::get<codegen::ReductionLayout>(layout);
    const auto& c = x.c;
    const int64_t rows = l.outer();
    ParamPacker p;
    p.i64(rows);
    p.i64(l.reduced());
    p.array(l.outer_sizes, 1);
    if (!l.index64) pack_dividers(p, l.outer_sizes);
    p.array(l.red_sizes, 1);
    if (l.fast_red_offsets()) pack_dividers(p, l.red_sizes);
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      const auto& op = l.inputs[k];
      if (!pack_operand(p, op.access, c, k)) continue;
      p.array(op.outer_strides, 0);
      if (op.access == Access::InnerContig || op.access == Access::Strided) p.array(op.red_strides, 0);
    }
    for (const auto& t : x.out) p.ptr(t.data_ptr());
    const int rows_per_block = l.block / l.threads_per_row;
    // Looped rows are re-read by every pass: few blocks per multiprocessor keep the rows in flight
    // small enough for the re-reads to hit L2. Cached rows: `row_waves` grid-stride rounds of a
    // full device, or (0) l.rounds teams of rows per block, the hardware balancing the tail.
    const int row_waves = x.fk.tuning().row_waves;
    const int sm_count = x.info.sm_count;
    const int64_t full_device = int64_t{sm_count} * (2048 / l.block);
    const int64_t teams = ceil_div(rows, rows_per_block);
    const int64_t max_blocks = !l.cached         ? int64_t{sm_count} * l.looped_blocks_per_sm
                               : row_waves == 0 ? ceil_div(teams, int64_t{l.rounds})
                                                : full_device * row_waves;
    const auto& kernel = x.kernel;
    if (l.ring_chunk > 0) {
      // Ringed rows: as many blocks as the device holds at once (one per multiprocessor: the ring
      // takes its shared memory), each taking its rows in turn.
      const int64_t smem = l.ring_block_bytes();
      const int per_sm = resident_blocks(kernel, c.device, l.block, smem, x.fk.counters());
      const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(rows, int64_t{sm_count} * per_sm));
      runtime::launch(kernel, kernel.name, c.device, blocks, 1, l.block, p, x.fk.counters(), smem);
    } else if (l.stages > 0) {
      // Staged rows with one buffer: a block per row group, the hardware overlapping one block's
      // copy with another's work. With a ring of buffers: as many blocks as the device holds at
      // once (times `row_waves`, where set), each taking its row groups in turn.
      const int64_t smem = l.staged_block_bytes();
      int64_t blocks = std::min<int64_t>(teams, std::numeric_limits<int32_t>::max());  // the kernel strides over the rest
      if (l.stages > 1) {
        const int per_sm = resident_blocks(kernel, c.device, l.block, smem, x.fk.counters());
        blocks = std::min(blocks, int64_t{sm_count} * per_sm * std::max(1, row_waves));
      }
      blocks = std::max<int64_t>(1, blocks);
      runtime::launch(kernel, kernel.name, c.device, blocks, 1, l.block, p, x.fk.counters(), smem);
    } else if (l.cluster > 1) {
      // A cluster per row (the kernel strides over rows by the grid's clusters).
      const int64_t clusters = std::min<int64_t>(rows, std::numeric_limits<int32_t>::max() / l.cluster);
      launch_clustered(kernel, c.device, clusters * l.cluster, l.cluster, l.block, p, x.fk.counters());
    } else {
      const int64_t blocks = std::max<int64_t>(1, std::min(teams, max_blocks));
      runtime::launch(kernel, kernel.name, c.device, blocks, 1, l.block, p, x.fk.counters());
    }
  }
};

class ColumnLauncher : public ScheduleLauncher {
 public:
  bool vectors_fit(const codegen::KernelLayout& layout, const CallInputs& c) const override {
    const auto& l = std::get<codegen::ReductionLayout>(layout);
    return l.vec <= 1 || column_vectors_fit(l, c);
  }
  bool has_work(const codegen::KernelLayout& layout) const override {
    const auto& l = std::get<codegen::ReductionLayout>(layout);
    return l.outer() * l.inner() > 0;
  }
  void launch(const Launch& x, const codegen::KernelLayout& layout) const override {
    const auto& l = std::get<codegen::ReductionLayout>(layout);
    const auto& c = x.c;
    // (Online sums change the passes and so the launches of a launch per pass.)
    const auto& a = x.fk.group_analysis().for_layout(l);
    const int64_t O = l.outer(), R = l.reduced(), I = l.inner();
    const int64_t tiles = ceil_div(I, int64_t{l.tile_threads} * l.vec) * O;
    // Split column passes wait for each other between passes: every block resident at once, or
    // a launch per pass (phased).
    const bool phased = a.passes > 1 && l.phased();
    const bool cooperative = a.passes > 1 && l.split > 1 && !phased;
    // (A cooperative grid takes the tiles in waves of l.wave_tiles: the kernel loops over the rest.)
    const int64_t grid_x = cooperative && l.wave_tiles > 0 ? std::min(l.wave_tiles, tiles) : tiles;
    const int64_t split = cooperative ? pass_split(x, l, grid_x) : l.split;
    std::vector<at::Tensor> parts;
    for (const ir::Node* r : a.reductions) {
      if (l.split > 1) parts.push_back(partials(a, *r, split * O * I, c.device));
    }
    ParamPacker p;
    p.i64(O);
    p.i64(R);
    p.i64(I);
    p.i64(split);
    p.array(l.outer_sizes, 1);
    p.array(l.red_sizes, 1);
    p.array(l.inner_sizes, 1);
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      const auto& op = l.inputs[k];
      if (!pack_operand(p, op.access, c, k)) continue;
      p.array(op.outer_strides, 0);
      p.array(op.red_strides, 0);
      p.array(op.inner_strides, 0);
    }
    for (const auto& t : x.out) p.ptr(t.data_ptr());
    for (size_t r = 0; r < a.reductions.size(); ++r) p.ptr(l.split > 1 ? parts[r].data_ptr() : nullptr);
    // (A launch per pass counts no blocks.)
    p.ptr(l.split > 1 && !phased ? stream_counters(c.device, cooperative ? tiles * codegen::kTileCounterStride : tiles) : nullptr);
    if (phased) {
      const size_t phase_word = p.size();
      p.i64(0);
      const int launches = codegen::column_pass_launches(a);
      for (int phase = 0; phase < launches; ++phase) {
        p.set_i64(phase_word, phase);
        runtime::launch(x.kernel, x.kernel.name, c.device, tiles, split, l.block, p, x.fk.counters());
      }
      x.fk.count_launches(launches - 1);  // (launch_group counts one)
      return;
    }
    // (A split of 1 waits for no other block: a plain launch.)
    if (cooperative && split > 1) {
      launch_cooperative(x.kernel, c.device, grid_x, split, l.block, p, x.fk.counters());
      return;
    }
    runtime::launch(x.kernel, x.kernel.name, c.device, tiles, split, l.block, p, x.fk.counters());
  }

 private:
  // The planned split of a tile's rows, at most what the device keeps resident with the grid's
  // tiles (those of one wave; the kernel's occupancy, read off the driver); 1 still runs a looped
  // split kernel correctly.
  // A cached layout holds the rows of the planned split in each thread's registers: with fewer
  // blocks some rows would go unread, so the group runs its ATen ops instead (the kernel's launch
  // bounds ask for the planned blocks per multiprocessor, so this is not expected).
  static int64_t pass_split(const Launch& x, const codegen::ReductionLayout& l, int64_t tiles) {
    const int per_sm = resident_blocks(x.kernel, x.c.device, l.block, 0, x.fk.counters());
    const int64_t resident = static_cast<int64_t>(per_sm) * device_info(x.c.device.index()).sm_count;
    const int64_t split = std::max<int64_t>(1, std::min<int64_t>(l.split, resident / tiles));
    if (l.cached && split < l.split) {
      throw KernelFailure("torchfuse: " + x.kernel.name + " splits each column over " + std::to_string(l.split) +
                              " blocks, but the device keeps only " + std::to_string(resident) + " of its blocks resident for " +
                              std::to_string(tiles) + " tiles",
                          x.kernel.source);
    }
    return split;
  }
};

class FullLauncher : public ScheduleLauncher {
 public:
  // (An empty input still writes the reduction's identity.)
  bool has_work(const codegen::KernelLayout&) const override { return true; }
  void launch(const Launch& x, const codegen::KernelLayout& layout) const override {
    const auto& l = std::get<codegen::PointwiseLayout>(layout);
    const auto& c = x.c;
    const auto& a = *x.fk.analysis();
    std::vector<at::Tensor> element_outputs;
    for (size_t k = 0; k < x.out.size(); ++k)
      if (!a.is_row(x.fk.group().outputs[k])) element_outputs.push_back(x.out[k]);
    const bool vec_ok = pointwise_vectors_fit(l, c, element_outputs, true);
    const int64_t numel = l.numel();
    const int64_t work = vec_ok ? ceil_div(ceil_div(numel, l.vec), l.unroll) : numel;
    const int64_t blocks =
        std::max<int64_t>(1, std::min(ceil_div(work, codegen::kFullBlock), int64_t{x.info.sm_count} * 4));
    std::vector<at::Tensor> parts;
    for (const ir::Node* r : a.reductions) parts.push_back(partials(a, *r, blocks, c.device));
    ParamPacker p;
    p.i64(numel);
    p.i64(vec_ok ? 1 : 0);
    for (int64_t s : l.sizes) p.i64(s);
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      const auto& op = l.inputs[k];
      if (pack_operand(p, op.access, c, k) && op.access != Access::Linear) p.array(op.strides, 0);
    }
    for (const auto& t : x.out) p.ptr(t.data_ptr());
    for (const auto& t : parts) p.ptr(t.data_ptr());
    p.ptr(blocks > 1 ? stream_counters(c.device, 1) : nullptr);
    runtime::launch(x.kernel, x.kernel.name, c.device, blocks, 1, codegen::kFullBlock, p, x.fk.counters());
  }
};

const ScheduleLauncher& launcher_for(Schedule s) {
  static const PointwiseLauncher pointwise;
  static const RowLauncher row;
  static const ColumnLauncher column;
  static const FullLauncher full;
  return by_schedule<ScheduleLauncher>(s, pointwise, row, column, full);
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

namespace {

// Both layouts a call of this shape may take, planned once per shape (PlanMemo).
std::shared_ptr<const MemoPlan> plan_for(FusedKernel& fk, const CallInputs& call, const DeviceInfo& info) {
  std::vector<int64_t> key = PlanMemo::key_of(call);
  if (std::shared_ptr<const MemoPlan> known = fk.plan_memo().find(key)) return known;
  const FusionGroup& g = fk.group();
  const codegen::ScheduleUnit& unit = codegen::schedule_unit(g.schedule);
  const codegen::DeviceTarget target = target_of(info, fk.tuning());
  codegen::PlanRequest request{g, fk.group_analysis(), call.shapes, call.domain, target, fk.tuning(), true};
  request.cat_starts = &call.cat_starts;
  auto plan = std::make_shared<MemoPlan>();
  plan->layout = unit.plan(request);
  plan->key = codegen::variant_key(g.schedule, plan->layout);
  request.allow_vector = false;
  plan->scalar_layout = unit.plan(request);
  plan->scalar_key = codegen::variant_key(g.schedule, plan->scalar_layout);
  fk.plan_memo().store(std::move(key), plan);
  return plan;
}

}  // namespace

std::vector<at::Tensor> launch_group(FusedKernel& fk, const CallInputs& call) {
  const FusionGroup& g = fk.group();
  const ScheduleLauncher& launcher = launcher_for(g.schedule);
  const DeviceInfo& info = device_info(call.device.index());
  const std::shared_ptr<const MemoPlan> plan = plan_for(fk, call, info);
  // Alignment of this call's pointers: the vector layout, or the one planned without vectors.
  const bool vectors = launcher.vectors_fit(plan->layout, call);
  const codegen::KernelLayout& layout = vectors ? plan->layout : plan->scalar_layout;
  HotPathClock::mark(HotPhase::plan);
  auto out = allocate_outputs(fk, call);
  HotPathClock::mark(HotPhase::allocate);
  if (!launcher.has_work(layout)) return out;
  const auto& kernel = fk.kernel_for(vectors ? plan->key : plan->scalar_key, [&] {
    return codegen::schedule_unit(g.schedule).generate(g, fk.group_analysis(), layout);
  });
  HotPathClock::mark(HotPhase::kernel);
  launcher.launch({fk, call, kernel, out, info}, layout);
  fk.count_launches(1);
  return out;
}

}  // namespace runtime
}  // namespace torchfuse
