#include "codegen/column_passes.h"

#include <algorithm>
#include <optional>

#include "codegen/column_common.h"
#include "codegen/kernel_name.h"
#include "src/error.h"

namespace torchfuse {
namespace codegen {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// A thread takes ReductionLayout::vec adjacent columns (lanes). Per-column values of lane j carry
// the suffix lane_suffix (none with one column a thread), its accumulator element is
// lane_element, and lane_offset adds it to the thread's first column i.
std::string lane_suffix(const ReductionLayout& l, int j) { return l.vec == 1 ? "" : "_l" + str(j); }
std::string lane_element(const ReductionLayout& l, int j) { return l.vec == 1 ? "" : "[" + str(j) + "]"; }
std::string lane_offset(const ReductionLayout& l, int j) { return l.vec == 1 ? "" : " + " + str(j); }

// Per lane: the names of the per-column values (reduction results, row inputs and row nodes).
using LaneNames = std::vector<ValueNames>;

// The reductions pass `pass` accumulates into accumulators of their own.
std::vector<const ir::Node*> pass_accumulators(const ReductionAnalysis& a, int pass) {
  std::vector<const ir::Node*> rs;
  for (const ir::Node* r : a.reductions)
    if (a.accumulate_pass(r) == pass && a.has_accumulator(r)) rs.push_back(r);
  return rs;
}

// Split layouts: the passes whose partials the tile's blocks exchange (those with accumulators).
int exchange_rounds(const ReductionAnalysis& a) {
  int rounds = 0;
  for (int pass = 0; pass < a.passes; ++pass) rounds += !pass_accumulators(a, pass).empty();
  return rounds;
}

// The read of one of another block's partial results of `r`, through L2.
std::string partial_load(const ReductionAnalysis& a, const ir::Node* r) { return a.online_sum(r) ? "tf_ldcg_max_sum" : "__ldcg"; }

// The online sums `pass` accumulates, in group order.
std::vector<const ir::Node*> online_sums(const ReductionAnalysis& a, int pass) {
  std::vector<const ir::Node*> rs;
  for (const ir::Node* r : pass_accumulators(a, pass))
    if (a.online_sum(r)) rs.push_back(r);
  return rs;
}

// The thread's first column in its tile's shared-memory rows.
std::string thread_column(const ReductionLayout& l) { return l.vec == 1 ? "tx" : "tx * " + str(l.vec); }

// Each lane's total of reductions `rs` from the block's rows of smem_acc<k>, added in row (ty)
// order; `declare` declares the totals.
void emit_rows_in_order(SourceBuilder& b, const ReductionAnalysis& a, const ReductionLayout& l,
                        const std::vector<const ir::Node*>& rs, bool declare) {
  const std::string RY = str(l.block / 32);
  for (const ir::Node* r : rs) {
    const std::string acc = accumulator_name(a, r);
    const std::string type = declare ? accumulator_type(a, r, true) + " " : "";
    for (int j = 0; j < l.vec; ++j) {
      const std::string total = "total_" + acc + lane_suffix(l, j);
      const std::string slot = "[" + thread_column(l) + lane_offset(l, j) + "]";
      b.line(type + total + " = smem_" + acc + "[0]" + slot + ";");
      b.line("for (int y = 1; y < " + RY + "; ++y) " + total + " = " + accumulator_functor(a, r) + "(" + total + ", smem_" + acc +
             "[y]" + slot + ");");
    }
  }
}

// The element of `ptr` at `offset`, through the hinted loads where `hint` asks.
std::string scalar_load(const std::string& ptr, const std::string& offset, LoadHint hint) {
  return hint == LoadHint::None ? ptr + "[" + offset + "]" : hinted_load(ptr + " + " + offset, hint);
}

// The barrier of a split tile's blocks (generate_column_normalization with a split layout). Each
// tile's counter sits on a 128-byte line of its own and the waits back off from 32 to 512 ns, so
// that the tens of blocks of a tile (vectors of columns make the tiles few) spinning on one line
// crowd the arrivals they wait for less (not measured apart from the vectors).
// Each block's thread 0 counts the block in after the block's partial results are written
// (tf_count_arrival releases them) and waits until `target` arrivals, acquiring the other
// blocks' partials for its block's threads (the __syncthreads after it). Every block of the
// grid is resident (a cooperative launch), so the wait ends.
void emit_tile_barrier(SourceBuilder& b) {
  b.line("// Waits until the tile's counter holds `target` arrivals, this block's included.");
  auto f = b.scope("__device__ __forceinline__ void " + kNamePlaceholder + "_tile_barrier(unsigned* counter, unsigned target)");
  b.line("__syncthreads();");
  {
    auto t0 = b.scope("if (threadIdx.x == 0)");
    b.line("tf_count_arrival(counter);");
    b.line("unsigned seen;");
    b.line("unsigned wait = 32;");
    auto spin = b.scope("for (;;)");
    b.line("asm volatile(\"ld.acquire.gpu.global.u32 %0, [%1];\" : \"=r\"(seen) : \"l\"(counter) : \"memory\");");
    b.line("if (seen >= target) break;");
    b.line("__nanosleep(wait);");
    b.line("if (wait < 512) wait *= 2;");
  }
  b.line("__syncthreads();");
}

// Split layouts, after pass `pass`'s block totals: ty 0 writes them as block y's partials.
void emit_partials_write(SourceBuilder& b, const ReductionAnalysis& a, const ReductionLayout& l, int pass) {
  const std::string at = "((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i";
  for (const ir::Node* r : pass_accumulators(a, pass)) {
    const std::string acc = accumulator_name(a, r);
    for (int j = 0; j < l.vec; ++j) {
      b.line("if (ty == 0 && ok) p.part_" + acc + "[" + at + lane_offset(l, j) + "] = total_" + acc + lane_suffix(l, j) + ";");
    }
  }
}

// The tile's totals of pass `pass` from every block's partials, in block order (see
// emit_split_exchange). `declare`: the totals and their shared rows are declared here (a launch
// after the one that wrote the partials), else emit_block_totals declared them.
void emit_partials_sum(SourceBuilder& b, const ReductionAnalysis& a, const ReductionLayout& l, int pass, bool declare) {
  const std::vector<const ir::Node*> rs = pass_accumulators(a, pass);
  const std::string RY = str(l.block / 32);
  for (const ir::Node* r : rs) {
    const std::string acc = accumulator_name(a, r);
    const std::string type = accumulator_type(a, r, true);
    if (declare) b.line("__shared__ " + type + " smem_" + acc + "[" + RY + "][" + str(32 * l.vec) + "];");
    for (int j = 0; j < l.vec; ++j) {
      b.line((declare ? type + " " : "") + "total_" + acc + lane_suffix(l, j) + " = " + accumulator_identity(a, r, true) + ";");
    }
  }
  {
    auto blocks = b.scope("for (tf_index s = ty; ok && s < (tf_index)p.split; s += " + RY + ")");
    for (const ir::Node* r : rs) {
      const std::string acc = accumulator_name(a, r);
      for (int j = 0; j < l.vec; ++j) {
        const std::string total = "total_" + acc + lane_suffix(l, j);
        b.line(total + " = " + accumulator_functor(a, r) + "(" + total + ", " + partial_load(a, r) +
               "(p.part_" + acc + " + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i" + lane_offset(l, j) + "));");
      }
    }
  }
  // (The barrier's last __syncthreads came after every thread had read the block totals.)
  for (const ir::Node* r : rs) {
    const std::string acc = accumulator_name(a, r);
    for (int j = 0; j < l.vec; ++j) {
      b.line("smem_" + acc + "[ty][" + thread_column(l) + lane_offset(l, j) + "] = total_" + acc + lane_suffix(l, j) + ";");
    }
  }
  b.line("__syncthreads();");
  emit_rows_in_order(b, a, l, rs, false);
}

// One launch: the block writes its partials, the tile's blocks meet at barrier `round`, then the
// block adds the tile's partials: thread (ty, tx) those of blocks ty, ty + RY, ... in order, and
// the RY sums combine in ty order through shared memory, so every block gets the same totals (and
// no block reads each partial once a warp). After the last barrier each block counts itself out
// once more; the last one out puts the counter back to zero for the stream's next launch (every
// block has passed every wait by then).
void emit_split_exchange(SourceBuilder& b, const ReductionAnalysis& a, const ReductionLayout& l, int pass, int round,
                         bool last_round) {
  emit_partials_write(b, a, l, pass);
  b.line(kNamePlaceholder + "_tile_barrier(tile_counter, (unsigned)p.split * " + str(round) + "u);");
  emit_partials_sum(b, a, l, pass, false);
  if (!last_round) return;
  b.line("if (threadIdx.x == 0 && tf_count_arrival(tile_counter) == (unsigned)p.split * " + str(round + 1) +
         "u - 1u) *tile_counter = 0u;");
}

// The element values of `pass` for the thread's columns at row `r`: one column, or each lane in
// a scope of its own (`lane`, the accumulators' index) with that lane's names. With lanes the
// pass's element outputs collect into a vector each, stored whole. `load(k)`: group input k.
// Online sums put their values at `online_slot` of their arrays (emit_split_looped_pass).
template <typename Load>
void emit_lanes(SourceBuilder& b, const FusionGroup& g, const ReductionAnalysis& a, const ReductionLayout& l,
                const LaneNames& names, int pass, const Load& load, const std::string& online_slot = "") {
  const std::string at = "(o * (tf_index)p.red + r) * (tf_index)p.inner + i";
  if (l.vec == 1) {
    ValueNames pass_names = names[0];  // element values of this pass stay in the loop's scope
    PassEmitter pe{b, g, a, pass_names, l.fast_math, load, nullptr, Reuse::None, "", true};
    pe.online_slot = online_slot;
    pe.emit(pass, [&](size_t k, const std::string& e) {
      const auto dtype = g.outputs[k]->type.dtype;
      if (l.hints.evict_stores) {
        b.line("tf_store_once<" + storage_type(dtype) + ">(" + output_name(k) + " + " + at + ", " + store_convert(e, dtype) + ");");
        return;
      }
      b.line(output_name(k) + "[" + at + "] = " + store_convert(e, dtype) + ";");
    });
    return;
  }
  const auto vector_type = [&](size_t k) { return "tf_vec<" + storage_type(g.outputs[k]->type.dtype) + ", " + str(l.vec) + ">"; };
  // The pass's element outputs (PassEmitter::emit stores these).
  std::vector<size_t> stored;
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    if (!a.is_row(g.outputs[k]) && a.level_of(g.outputs[k]) == pass) stored.push_back(k);
  }
  for (size_t k : stored) b.line(vector_type(k) + " s" + str(static_cast<int64_t>(k)) + ";");
  for (int j = 0; j < l.vec; ++j) {
    auto lane = b.scope("/* column i + " + str(j) + " */");
    b.line("const int lane = " + str(j) + ";");
    ValueNames pass_names = names[static_cast<size_t>(j)];
    PassEmitter pe{b, g, a, pass_names, l.fast_math, load, nullptr, Reuse::None, "[lane]", true};
    pe.online_slot = online_slot;
    pe.emit(pass, [&](size_t k, const std::string& e) {
      TORCHFUSE_INTERNAL_ASSERT(std::count(stored.begin(), stored.end(), k) == 1, "column pass ", pass, " of group ", g.id,
                                " stores output ", k, ", which is not an element output of that pass");
      b.line("s" + str(static_cast<int64_t>(k)) + ".v[lane] = " + store_convert(e, g.outputs[k]->type.dtype) + ";");
    });
  }
  for (size_t k : stored) {
    b.line(vector_store(vector_type(k), output_name(k) + " + " + at, "s" + str(static_cast<int64_t>(k)), l.hints.evict_stores));
  }
}

// One pass of a looped split layout over the block's rows [r0, r1): steps of `unroll` rows a
// thread, each step's loads issued first (at rows clamped into the range, so that no branch
// separates them), then the pass computed from them. Odd passes go from r1 down, so that they
// start on the rows the pass before read last. With lanes, inputs whose inner dim is contiguous
// load a vector a row.
template <typename Load>
void emit_split_looped_pass(SourceBuilder& b, const FusionGroup& g, const ReductionAnalysis& a, const ReductionLayout& l,
                            const LaneNames& names, int pass, const Load& cached_load) {
  const std::string RY = str(l.block / 32);
  const std::string U = str(l.unroll);
  const bool backwards = pass % 2 == 1;
  auto step = b.scope(backwards ? "for (tf_index rb = r1 - 1 - ty; ok && rb >= r0; rb -= " + str(l.block / 32 * l.unroll) + ")"
                                : "for (tf_index rb = r0 + ty; ok && rb < r1; rb += " + str(l.block / 32 * l.unroll) + ")");
  const std::string row = backwards ? "rb - (tf_index)u * " + RY : "rb + (tf_index)u * " + RY;
  const auto vector_type = [&](size_t k) { return "tf_vec<" + storage_type(l.inputs[k].dtype) + ", " + str(l.vec) + ">"; };
  // (Waves: the first pass's rows stay in L2 for the later passes; the last pass's go first.)
  const LoadHint hint = l.hints.keep_loads && pass + 1 < a.passes  ? LoadHint::EvictLast
                        : l.hints.evict_loads && pass + 1 == a.passes ? LoadHint::EvictFirst
                                                                      : LoadHint::None;
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    if (!column_element_input(l, k)) continue;
    const std::string type = column_vector_input(l, k) ? vector_type(k) : register_type(l.inputs[k].dtype);
    b.line(type + " c" + str(static_cast<int64_t>(k)) + "[" + U + "];");
  }
  {
    b.line("#pragma unroll");
    auto loads = b.scope("for (int u = 0; u < " + U + "; ++u)");
    b.line("const tf_index r = " + std::string(backwards ? "max(" + row + ", r0);" : "min(" + row + ", r1 - 1);"));
    emit_segment(b, l, l.red_sizes, "red", "r", "r");
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      if (!column_element_input(l, k)) continue;
      const std::string kk = str(static_cast<int64_t>(k));
      if (column_vector_input(l, k)) {
        b.line("c" + kk + "[u] = " + vector_load(vector_type(k), input_name(k) + " + ooff" + kk + " + ioff" + kk + " + roff" + kk, hint) + ";");
        continue;
      }
      // (With lanes, an element input not contiguous along the inner dim is the same for every
      // lane: its inner stride is 0, column_pass_vector.)
      b.line("c" + kk + "[u] = " + load_convert(scalar_load(input_name(k), "ooff" + kk + " + ioff" + kk + " + roff" + kk, hint), l.inputs[k].dtype) + ";");
    }
  }
  // Online sums: the step's values of each column, -inf for rows past the range (they add
  // exp(-inf) = 0), folded in after the step with one rescale (tf_online_add).
  const std::vector<const ir::Node*> online = online_sums(a, pass);
  const std::string lanes = l.vec == 1 ? "" : "[" + str(l.vec) + "]";
  for (const ir::Node* r : online) {
    const std::string ol = online_values(a, r);
    b.line("float " + ol + lanes + "[" + U + "];");
    b.line("#pragma unroll");
    b.line("for (int u = 0; u < " + U + "; ++u) " + (l.vec == 1 ? ol + "[u]" : "for (int lane = 0; lane < " + str(l.vec) + "; ++lane) " + ol + "[lane][u]") +
           " = __int_as_float(0xff800000);");
  }
  {
    b.line("#pragma unroll");
    auto rows = b.scope("for (int u = 0; u < " + U + "; ++u)");
    b.line("const tf_index r = " + row + ";");
    auto in_range = b.scope(backwards ? "if (r >= r0)" : "if (r < r1)");
    emit_lanes(b, g, a, l, names, pass, cached_load, l.vec == 1 ? "[u]" : "[lane][u]");
  }
  for (const ir::Node* r : online) {
    const std::string acc = accumulator_name(a, r);
    const std::string ol = online_values(a, r);
    if (l.vec == 1) {
      b.line("tf_online_add(" + acc + ", " + ol + ");");
      continue;
    }
    b.line("#pragma unroll");
    b.line("for (int lane = 0; lane < " + str(l.vec) + "; ++lane) tf_online_add(" + acc + "[lane], " + ol + "[lane]);");
  }
}

// The block's totals of the reductions accumulated in `pass`: each warp row's accumulators in
// shared memory, added in row order by every thread for its columns (total_acc<k><lane>).
void emit_block_totals(SourceBuilder& b, const ReductionAnalysis& a, const ReductionLayout& l, int pass) {
  const std::vector<const ir::Node*> rs = pass_accumulators(a, pass);
  for (const ir::Node* r : rs) {
    const std::string acc = accumulator_name(a, r);
    b.line("__shared__ " + accumulator_type(a, r, true) + " smem_" + acc + "[" + str(l.block / 32) + "][" + str(32 * l.vec) + "];");
    for (int j = 0; j < l.vec; ++j) {
      b.line("smem_" + acc + "[ty][" + thread_column(l) + lane_offset(l, j) + "] = " + acc + lane_element(l, j) + ";");
    }
  }
  b.line("__syncthreads();");
  emit_rows_in_order(b, a, l, rs, true);
}

// Several passes over each column, in the blocks of a tile of 32 x vec columns (vec adjacent
// columns a thread, the lanes), block / 32 threads along the reduced dim: each pass goes over the
// column's rows, the block combines the pass's reductions in shared memory in a fixed order, and
// every thread takes the totals into the next pass; the last pass writes the full-size outputs.
// Cached layouts (ReductionLayout::cached, one column a thread) load each thread's rows once into
// registers (chunks_per_thread rows of every element input) and take the later passes from
// there; the others loop over the rows from global memory in every pass (L2 holding the block's
// tile for the later passes), a vector of columns a row where the inner dim is contiguous.
// Softmax, log_softmax and variance normalizations over a leading or middle dim.
// Split layouts (ReductionLayout::split > 1): block y of a tile takes rows [r0, r1); after each
// pass with reductions it writes its totals as partials, waits at the tile's barrier, and adds
// every block's partials in block order (so every block gets the same totals). Looped passes
// alternate their direction over the rows, so that each pass starts on the rows the last one
// read most recently (still in L2).
void emit_column_passes(SourceBuilder& b, const FusionGroup& g, const ReductionAnalysis& a, const ReductionLayout& l,
                        LaneNames& names) {
  const std::string RY = str(l.block / 32);
  const std::string N = str(l.chunks_per_thread);
  const bool split = l.split > 1;
  const bool phased = l.phased();
  const std::string first = split ? "r0 + " : "";
  const std::string end = split ? "r1" : "(tf_index)p.red";
  // Split: the passes that meet at a barrier, and how many have so far.
  const int rounds = exchange_rounds(a);
  int round_now = 0;
  if (l.cached) {
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      if (column_element_input(l, k)) b.line(register_type(l.inputs[k].dtype) + " c" + str(static_cast<int64_t>(k)) + "[" + N + "];");
    }
  }
  // Inputs of a pass computed from registers: the element inputs from the rows loaded there; an
  // input the same along the reduced dims (InnerBroadcast: its reduced strides are all zero) at its
  // column's offset, since no row offset is in scope there (fuzz seed 7, programs 784 and 789:
  // expanded inputs built kernels NVRTC rejected).
  const auto cached_load = [&](size_t k) {
    const std::string kk = str(static_cast<int64_t>(k));
    if (column_element_input(l, k)) {
      return column_vector_input(l, k) ? load_convert("c" + kk + "[u].v[lane]", l.inputs[k].dtype) : "c" + kk + "[u]";
    }
    if (l.inputs[k].access == Access::InnerBroadcast) {
      std::string lane;
      if (l.vec > 1 && !l.inputs[k].inner_strides.empty()) lane = " + lane * (tf_index)p." + input_name(k) + "_inner_stride[0]";
      return load_convert(input_name(k) + "[ooff" + kk + " + ioff" + kk + lane + "]", l.inputs[k].dtype);
    }
    return column_load(l, k, "");
  };
  // A launch per pass (phased): launch p.phase runs the pass after `phase` exchanges, the ones
  // before it taking their totals from the partials the earlier launches wrote.
  const auto this_launch = [&] { return "p.phase == " + str(round_now); };
  for (int pass = 0; pass <= a.passes; ++pass) {
    for (int j = 0; j < l.vec; ++j) {
      PassEmitter pe{b, g, a, names[static_cast<size_t>(j)], l.fast_math, nullptr, nullptr, Reuse::None};
      pe.emit_row_phase(pass, [&](size_t k, const std::string& e) {
        const std::string who = phased ? "if (" + this_launch() + " && ty == 0 && blockIdx.y == 0 && ok) "
                                : split ? "if (ty == 0 && blockIdx.y == 0 && ok) "
                                        : "if (ty == 0 && ok) ";
        b.line(who + output_name(k) + "[o * (tf_index)p.inner + i" + lane_offset(l, j) + "] = " +
               store_convert(e, g.outputs[k]->type.dtype) + ";");
      });
    }
    if (pass == a.passes) return;
    const bool exchanges = split && !pass_accumulators(a, pass).empty();
    std::optional<SourceBuilder::Scope> launch;
    if (phased) launch.emplace(b, "if (" + this_launch() + ")");
    for (const ir::Node* r : pass_accumulators(a, pass)) {
      const std::string type = accumulator_type(a, r, true);
      const std::string acc = accumulator_name(a, r);
      if (l.vec == 1) {
        b.line(type + " " + acc + " = " + accumulator_identity(a, r, true) + ";");
        continue;
      }
      b.line(type + " " + acc + "[" + str(l.vec) + "];");
      b.line("#pragma unroll");
      b.line("for (int lane = 0; lane < " + str(l.vec) + "; ++lane) " + acc + "[lane] = " + accumulator_identity(a, r, true) + ";");
    }
    if (l.cached && pass == 0) {
      // Every load first, back to back: rows past the column's end load its last row (unused).
      auto any = b.scope(split ? "if (r1 > r0)" : "if ((tf_index)p.red > 0)");
      b.line("#pragma unroll");
      auto loop = b.scope("for (int u = 0; u < " + N + "; ++u)");
      b.line("const tf_index r = min(" + first + "ty + (tf_index)u * " + RY + ", " + end + " - 1);");
      emit_segment(b, l, l.red_sizes, "red", "r", "r");
      for (size_t k = 0; k < l.inputs.size(); ++k) {
        if (column_element_input(l, k)) b.line("c" + str(static_cast<int64_t>(k)) + "[u] = " + column_load(l, k, "") + ";");
      }
    }
    if (l.cached) {
      b.line("#pragma unroll");
      auto loop = b.scope("for (int u = 0; u < " + N + "; ++u)");
      b.line("const tf_index r = " + first + "ty + (tf_index)u * " + RY + ";");
      auto in_range = b.scope("if (ok && r < " + end + ")");
      emit_lanes(b, g, a, l, names, pass, cached_load);
    } else if (split) {
      emit_split_looped_pass(b, g, a, l, names, pass, cached_load);
    } else {
      b.line("#pragma unroll 4");
      auto loop = b.scope("for (tf_index r = " + first + "ty; ok && r < " + end + "; r += " + RY + ")");
      emit_segment(b, l, l.red_sizes, "red", "r", "r");
      for (size_t k = 0; k < l.inputs.size(); ++k) {
        if (!column_vector_input(l, k)) continue;
        const std::string kk = str(static_cast<int64_t>(k));
        const std::string vt = "tf_vec<" + storage_type(l.inputs[k].dtype) + ", " + str(l.vec) + ">";
        b.line("const " + vt + " v" + kk + " = " + vector_load(vt, input_name(k) + " + ooff" + kk + " + ioff" + kk + " + roff" + kk, LoadHint::None) + ";");
      }
      emit_lanes(b, g, a, l, names, pass, [&](size_t k) { return column_load(l, k, ""); });
    }
    emit_block_totals(b, a, l, pass);
    if (phased && exchanges) {
      // (The next tile's block totals overwrite the shared rows read above.)
      emit_partials_write(b, a, l, pass);
      b.line("__syncthreads();");
      b.line("continue;");
      launch.reset();
      ++round_now;
      emit_partials_sum(b, a, l, pass, true);
    } else if (exchanges) {
      ++round_now;
      emit_split_exchange(b, a, l, pass, round_now, round_now == rounds);
    }
    launch.reset();
    for (const ir::Node* r : pass_accumulators(a, pass)) {
      for (int j = 0; j < l.vec; ++j) {
        const std::string total = "total_" + accumulator_name(a, r) + lane_suffix(l, j);
        if (a.online_sum(r)) {
          emit_online_results(b, a, r, total, total + "_max", total + "_sum", names[static_cast<size_t>(j)]);
          continue;
        }
        names[static_cast<size_t>(j)][r->output()] = result_in_register_type(b, *r, total);
      }
    }
    for (const ir::Node* r : a.reductions) {
      if (a.accumulate_pass(r) != pass || !a.duplicate_of(r)) continue;
      for (auto& lane : names) lane[r->output()] = lane.at(a.duplicate_of(r)->output());
    }
  }
}

}  // namespace

int column_pass_launches(const ReductionAnalysis& a) { return exchange_rounds(a) + 1; }

GeneratedKernel generate_column_normalization(const FusionGroup& g, const ReductionAnalysis& a, const ReductionLayout& l) {
  TORCHFUSE_INTERNAL_ASSERT(l.unroll == 1 || (l.split > 1 && !l.cached), "column passes of group ", g.id,
                            " unroll only where looped over a split");
  TORCHFUSE_INTERNAL_ASSERT(l.vec == 1 || !l.cached, "column passes of group ", g.id, " keep one column a thread in registers");
  const bool split = l.split > 1;
  const bool phased = l.phased();
  TORCHFUSE_INTERNAL_ASSERT(!phased || !l.cached, "column passes of group ", g.id, " keep no registers across launches");
  TORCHFUSE_INTERNAL_ASSERT(!l.online || (split && !l.cached), "column passes of group ", g.id,
                            " take online sums only where a split loops over its rows");
  const std::string W = str(32 * l.vec);
  SourceBuilder b;
  b.raw(prelude());
  b.line("");
  b.line("// torchfuse fusion group " + str(g.id) + " (column reduction, " + str(a.passes) + " passes): " + g.describe());
  b.line("// " + (l.vec == 1 ? std::string("32 columns") : "32 x " + str(l.vec) + " columns (" + str(l.vec) + " a thread)") +
         " along the kept inner dims, " + str(l.block / 32) + " threads along the reduced dim; " +
         (phased  ? "the tile's rows split over p.split blocks (blockIdx.y) that exchange each pass's partials through a launch per pass (p.phase)"
          : split ? "the tile's rows split over p.split blocks (blockIdx.y) that exchange each pass's partials at a barrier"
                  : "one block per tile") +
         (l.cached ? "; each thread keeps its " + str(l.chunks_per_thread) + " rows of the element inputs in registers" : "") +
         (l.online ? "; softmax sums accumulate with their max (online), a step of rows at a time" : "") + ";");
  b.line("// compiled with --fmad=false: every pass computes the element values the same way");
  b.line(std::string("typedef ") + (l.index64 ? "long long" : "int") + " tf_index;");
  b.line("");
  emit_column_params(b, g, l, a);
  b.line("");
  if (split && !phased) {
    emit_tile_barrier(b);
    b.line("");
  }
  {
    // (Split: registers for the blocks a multiprocessor the split aims at, at least
    // kColumnBlocksPerSm; a launch per pass: the blocks it aims at.)
    const int split_blocks = std::max(l.split_blocks, kColumnBlocksPerSm);
    const std::string bounds = split ? str(l.block) + ", " + str(phased ? l.phased_blocks : split_blocks) : str(l.block);
    auto k = b.scope("extern \"C\" __global__ void __launch_bounds__(" + bounds + ") " + kNamePlaceholder + "(const " +
                     kNamePlaceholder + "_params p)");
    emit_grid_dependency(b);
    emit_restrict_pointers(b, g, l.inputs);
    b.line("const int tx = threadIdx.x & 31;");
    b.line("const int ty = threadIdx.x >> 5;");
    b.line("const tf_index tiles = ((tf_index)p.inner + " + str(32 * l.vec - 1) + ") / " + W + ";");
    // Split: the grid's blocks along x take the tiles in waves (ReductionLayout::wave_tiles), the
    // blocks of one x taking the same tiles in the same order.
    std::optional<SourceBuilder::Scope> waves;
    if (split) waves.emplace(b, "for (tf_index tile = blockIdx.x; tile < tiles * (tf_index)p.outer; tile += gridDim.x)");
    const std::string tile = split ? "tile" : "(tf_index)blockIdx.x";
    b.line("const tf_index o = " + tile + " / tiles;");
    b.line("const tf_index i = (" + tile + " % tiles) * " + W + " + tx" + (l.vec == 1 ? "" : " * " + str(l.vec)) + ";");
    b.line("const bool ok = i < (tf_index)p.inner;");
    emit_segment(b, l, l.outer_sizes, "outer", "o", "o");
    emit_segment(b, l, l.inner_sizes, "inner", "ok ? i : 0", "i");
    if (split) {
      b.line("const tf_index rows_per_block = ((tf_index)p.red + (tf_index)p.split - 1) / (tf_index)p.split;");
      b.line("const tf_index r0 = (tf_index)blockIdx.y * rows_per_block;");
      b.line("const tf_index r1 = min(r0 + rows_per_block, (tf_index)p.red);");
      if (!phased) b.line("unsigned* const tile_counter = p.counters + tile * " + str(kTileCounterStride) + ";");
    }
    LaneNames names(static_cast<size_t>(l.vec));
    for (int j = 0; j < l.vec; ++j) {
      ValueNames& lane = names[static_cast<size_t>(j)];
      lane[nullptr] = "(double)p.red";  // N
      for (size_t k = 0; k < g.inputs.size(); ++k) {
        if (!a.is_row(g.inputs[k])) continue;
        const auto& in = l.inputs[k];
        const std::string kk = str(static_cast<int64_t>(k));
        std::string at = "ooff" + kk + " + ioff" + kk;
        if (j > 0 && !in.inner_strides.empty()) at += " + " + str(j) + " * (tf_index)p." + input_name(k) + "_inner_stride[0]";
        const std::string e = in.access == Access::Scalar    ? "p." + input_name(k)
                              : in.access == Access::Uniform ? load_convert(input_name(k) + "[0]", in.dtype)
                                                             : load_convert(input_name(k) + "[" + at + "]", in.dtype);
        const std::string name = "rin" + kk + lane_suffix(l, j);
        b.line(register_type(g.inputs[k]->type.dtype) + " " + name + " = ok ? " + e + " : (" +
               register_type(g.inputs[k]->type.dtype) + ")0;");
        lane[g.inputs[k]] = name;
      }
    }
    emit_column_passes(b, g, a, l, names);
    // (The next tile's block totals overwrite the shared rows this one's last exchange read; a
    // last pass without reductions ended on emit_block_totals' barrier after those reads.)
    if (split && !pass_accumulators(a, a.passes - 1).empty()) b.line("__syncthreads();");
  }
  GeneratedKernel k = name_kernel(b.str(), g.pattern, l.block);
  k.fmad = false;
  return k;
}

}  // namespace codegen
}  // namespace torchfuse
