#include "codegen/column_passes.h"

#include <algorithm>

#include "codegen/column_common.h"
#include "codegen/kernel_name.h"
#include "src/error.h"

namespace torchfuse {
namespace codegen {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// The barrier of a split tile's blocks (generate_column_normalization with a split layout):
// each block's thread 0 counts the block in after the block's partial results are written
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
    auto spin = b.scope("for (;;)");
    b.line("asm volatile(\"ld.acquire.gpu.global.u32 %0, [%1];\" : \"=r\"(seen) : \"l\"(counter) : \"memory\");");
    b.line("if (seen >= target) break;");
    b.line("__nanosleep(32);");
  }
  b.line("__syncthreads();");
}

// Split layouts, after pass `pass`'s block totals: ty 0 writes them as block y's partials, the
// tile's blocks meet at barrier `round`, and every thread adds the tile's partials in block order
// into its totals. After the last barrier each block counts itself out once more; the last one
// out puts the counter back to zero for the stream's next launch (every block has passed every
// wait by then).
void emit_split_exchange(SourceBuilder& b, const ReductionAnalysis& a, int pass, int round, bool last_round) {
  std::vector<const ir::Node*> rs;
  for (const ir::Node* r : a.reductions)
    if (a.accumulate_pass(r) == pass && a.has_accumulator(r)) rs.push_back(r);
  const std::string at = "((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i";
  for (const ir::Node* r : rs) {
    const std::string acc = accumulator_name(a, r);
    b.line("if (ty == 0 && ok) p.part_" + acc + "[" + at + "] = total_" + acc + ";");
  }
  b.line(kNamePlaceholder + "_tile_barrier(tile_counter, (unsigned)p.split * " + str(round) + "u);");
  for (const ir::Node* r : rs) {
    const std::string acc = accumulator_name(a, r);
    b.line("total_" + acc + " = " + reduction_identity(*r, true) + ";");
  }
  {
    auto blocks = b.scope("for (tf_index s = 0; ok && s < (tf_index)p.split; ++s)");
    for (const ir::Node* r : rs) {
      const std::string acc = accumulator_name(a, r);
      b.line("total_" + acc + " = " + reduction_functor(*r) + "(total_" + acc + ", __ldcg(p.part_" + acc +
             " + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i));");
    }
  }
  if (!last_round) return;
  b.line("if (threadIdx.x == 0 && tf_count_arrival(tile_counter) == (unsigned)p.split * " + str(round + 1) +
         "u - 1u) *tile_counter = 0u;");
}

// One pass of a looped split layout over the block's rows [r0, r1): steps of `unroll` rows a
// thread, each step's loads issued first (at rows clamped into the range, so that no branch
// separates them), then the pass computed from them. Odd passes go from r1 down, so that they
// start on the rows the pass before read last.
template <typename Load, typename Store>
void emit_split_looped_pass(SourceBuilder& b, const FusionGroup& g, const ReductionAnalysis& a, const ReductionLayout& l,
                            const ValueNames& names, int pass, const Load& cached_load, const Store& store) {
  const std::string RY = str(l.block / 32);
  const std::string U = str(l.unroll);
  const bool backwards = pass % 2 == 1;
  auto step = b.scope(backwards ? "for (tf_index rb = r1 - 1 - ty; ok && rb >= r0; rb -= " + str(l.block / 32 * l.unroll) + ")"
                                : "for (tf_index rb = r0 + ty; ok && rb < r1; rb += " + str(l.block / 32 * l.unroll) + ")");
  const std::string row = backwards ? "rb - (tf_index)u * " + RY : "rb + (tf_index)u * " + RY;
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    if (column_element_input(l, k)) b.line(register_type(l.inputs[k].dtype) + " c" + str(static_cast<int64_t>(k)) + "[" + U + "];");
  }
  {
    b.line("#pragma unroll");
    auto loads = b.scope("for (int u = 0; u < " + U + "; ++u)");
    b.line("const tf_index r = " + std::string(backwards ? "max(" + row + ", r0);" : "min(" + row + ", r1 - 1);"));
    emit_segment(b, l, l.red_sizes, "red", "r", "r");
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      if (column_element_input(l, k)) b.line("c" + str(static_cast<int64_t>(k)) + "[u] = " + column_load(l, k, "") + ";");
    }
  }
  b.line("#pragma unroll");
  auto rows = b.scope("for (int u = 0; u < " + U + "; ++u)");
  b.line("const tf_index r = " + row + ";");
  auto in_range = b.scope(backwards ? "if (r >= r0)" : "if (r < r1)");
  ValueNames pass_names = names;
  PassEmitter pe{b, g, a, pass_names, l.fast_math, cached_load, nullptr, Reuse::None, "", true};
  pe.emit(pass, store);
}

// Several passes over each column, in the blocks of a tile of 32 columns (vec 1),
// block / 32 threads along the reduced dim: each pass goes over the column's rows, the block
// combines the pass's reductions in shared memory in a fixed order, and every thread takes the
// totals into the next pass; the last pass writes the full-size outputs. Cached layouts
// (ReductionLayout::cached) load each thread's rows once into registers (chunks_per_thread rows
// of every element input) and take the later passes from there; the others loop over the rows
// from global memory in every pass (L2 holding the block's tile for the later passes). Softmax,
// log_softmax and variance normalizations over a leading or middle dim.
// Split layouts (ReductionLayout::split > 1): block y of a tile takes rows [r0, r1); after each
// pass with reductions it writes its totals as partials, waits at the tile's barrier, and adds
// every block's partials in block order (so every block gets the same totals). Looped passes
// alternate their direction over the rows, so that each pass starts on the rows the last one
// read most recently (still in L2).
void emit_column_passes(SourceBuilder& b, const FusionGroup& g, const ReductionAnalysis& a, const ReductionLayout& l,
                        ValueNames& names) {
  const std::string RY = str(l.block / 32);
  const std::string N = str(l.chunks_per_thread);
  const bool split = l.split > 1;
  const std::string first = split ? "r0 + " : "";
  const std::string end = split ? "r1" : "(tf_index)p.red";
  // Split: the passes that meet at a barrier (those with accumulators), and how many have so far.
  int rounds = 0, round_now = 0;
  for (int pass = 0; pass < a.passes; ++pass) {
    rounds += std::any_of(a.reductions.begin(), a.reductions.end(),
                          [&](const ir::Node* r) { return a.accumulate_pass(r) == pass && a.has_accumulator(r); });
  }
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
    if (column_element_input(l, k)) return "c" + kk + "[u]";
    if (l.inputs[k].access == Access::InnerBroadcast) {
      return load_convert(input_name(k) + "[ooff" + kk + " + ioff" + kk + "]", l.inputs[k].dtype);
    }
    return column_load(l, k, "");
  };
  const auto store = [&](size_t k, const std::string& e) {
    b.line(output_name(k) + "[(o * (tf_index)p.red + r) * (tf_index)p.inner + i] = " + store_convert(e, g.outputs[k]->type.dtype) + ";");
  };
  for (int pass = 0; pass <= a.passes; ++pass) {
    {
      PassEmitter pe{b, g, a, names, l.fast_math, nullptr, nullptr, Reuse::None};
      pe.emit_row_phase(pass, [&](size_t k, const std::string& e) {
        b.line(std::string(split ? "if (ty == 0 && blockIdx.y == 0 && ok) " : "if (ty == 0 && ok) ") + output_name(k) +
               "[o * (tf_index)p.inner + i] = " + store_convert(e, g.outputs[k]->type.dtype) + ";");
      });
    }
    if (pass == a.passes) return;
    for (const ir::Node* r : a.reductions) {
      if (a.accumulate_pass(r) != pass || !a.has_accumulator(r)) continue;
      b.line(register_type(accumulator_dtype(*r, true)) + " " + accumulator_name(a, r) + " = " + reduction_identity(*r, true) + ";");
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
      ValueNames pass_names = names;
      PassEmitter pe{b, g, a, pass_names, l.fast_math, cached_load, nullptr, Reuse::None, "", true};
      pe.emit(pass, store);
    } else if (split) {
      emit_split_looped_pass(b, g, a, l, names, pass, cached_load, store);
    } else {
      b.line("#pragma unroll 4");
      const bool backwards = split && pass % 2 == 1;
      auto loop = b.scope(backwards ? "for (tf_index r = r1 - 1 - ty; ok && r >= r0; r -= " + RY + ")"
                                     : "for (tf_index r = " + first + "ty; ok && r < " + end + "; r += " + RY + ")");
      emit_segment(b, l, l.red_sizes, "red", "r", "r");
      ValueNames pass_names = names;  // element values of this pass stay in the loop's scope
      PassEmitter pe{b, g, a, pass_names, l.fast_math, [&](size_t k) { return column_load(l, k, ""); }, nullptr, Reuse::None, "", true};
      pe.emit(pass, store);
    }
    for (const ir::Node* r : a.reductions) {
      if (a.accumulate_pass(r) != pass || !a.has_accumulator(r)) continue;
      const std::string acc = accumulator_name(a, r);
      b.line("__shared__ " + register_type(accumulator_dtype(*r, true)) + " smem_" + acc + "[" + RY + "][32];");
      b.line("smem_" + acc + "[ty][tx] = " + acc + ";");
    }
    b.line("__syncthreads();");
    bool any_accumulator = false;
    for (const ir::Node* r : a.reductions) {
      if (a.accumulate_pass(r) != pass || !a.has_accumulator(r)) continue;
      const std::string acc = accumulator_name(a, r);
      b.line(register_type(accumulator_dtype(*r, true)) + " total_" + acc + " = smem_" + acc + "[0][tx];");
      b.line("for (int y = 1; y < " + RY + "; ++y) total_" + acc + " = " + reduction_functor(*r) + "(total_" + acc + ", smem_" + acc + "[y][tx]);");
      any_accumulator = true;
    }
    if (split && any_accumulator) {
      ++round_now;
      emit_split_exchange(b, a, pass, round_now, round_now == rounds);
    }
    for (const ir::Node* r : a.reductions) {
      if (a.accumulate_pass(r) != pass || !a.has_accumulator(r)) continue;
      names[r->output()] = result_in_register_type(b, *r, "total_" + accumulator_name(a, r));
    }
    for (const ir::Node* r : a.reductions) {
      if (a.accumulate_pass(r) == pass && a.duplicate_of(r)) names[r->output()] = names.at(a.duplicate_of(r)->output());
    }
  }
}

}  // namespace

GeneratedKernel generate_column_normalization(const FusionGroup& g, const ReductionAnalysis& a, const ReductionLayout& l) {
  TORCHFUSE_INTERNAL_ASSERT(l.vec == 1 && (l.unroll == 1 || (l.split > 1 && !l.cached)), "column passes of group ", g.id,
                            " need vec 1, and no unroll unless looped over a split");
  const bool split = l.split > 1;
  SourceBuilder b;
  b.raw(prelude());
  b.line("");
  b.line("// torchfuse fusion group " + str(g.id) + " (column reduction, " + str(a.passes) + " passes): " + g.describe());
  b.line("// 32 columns along the kept inner dims, " + str(l.block / 32) + " threads along the reduced dim; " +
         (split ? "the tile's rows split over p.split blocks (blockIdx.y) that exchange each pass's partials at a barrier"
                : "one block per tile") +
         (l.cached ? "; each thread keeps its " + str(l.chunks_per_thread) + " rows of the element inputs in registers" : "") + ";");
  b.line("// compiled with --fmad=false: every pass computes the element values the same way");
  b.line(std::string("typedef ") + (l.index64 ? "long long" : "int") + " tf_index;");
  b.line("");
  emit_column_params(b, g, l, a);
  b.line("");
  if (split) {
    emit_tile_barrier(b);
    b.line("");
  }
  {
    // (Split: registers for kColumnBlocksPerSm blocks a multiprocessor, the most the split asks for.)
    const std::string bounds = split ? str(l.block) + ", " + str(kColumnBlocksPerSm) : str(l.block);
    auto k = b.scope("extern \"C\" __global__ void __launch_bounds__(" + bounds + ") " + kNamePlaceholder + "(const " +
                     kNamePlaceholder + "_params p)");
    emit_restrict_pointers(b, g, l.inputs);
    b.line("const int tx = threadIdx.x & 31;");
    b.line("const int ty = threadIdx.x >> 5;");
    b.line("const tf_index tiles = ((tf_index)p.inner + 31) / 32;");
    b.line("const tf_index o = (tf_index)blockIdx.x / tiles;");
    b.line("const tf_index i = ((tf_index)blockIdx.x % tiles) * 32 + tx;");
    b.line("const bool ok = i < (tf_index)p.inner;");
    emit_segment(b, l, l.outer_sizes, "outer", "o", "o");
    emit_segment(b, l, l.inner_sizes, "inner", "ok ? i : 0", "i");
    if (split) {
      b.line("const tf_index rows_per_block = ((tf_index)p.red + (tf_index)p.split - 1) / (tf_index)p.split;");
      b.line("const tf_index r0 = (tf_index)blockIdx.y * rows_per_block;");
      b.line("const tf_index r1 = min(r0 + rows_per_block, (tf_index)p.red);");
      b.line("unsigned* const tile_counter = p.counters + blockIdx.x;");
    }
    ValueNames names;
    names[nullptr] = "(double)p.red";  // N
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      if (!a.is_row(g.inputs[k])) continue;
      const auto& in = l.inputs[k];
      const std::string kk = str(static_cast<int64_t>(k));
      const std::string e = in.access == Access::Scalar    ? "p." + input_name(k)
                            : in.access == Access::Uniform ? load_convert(input_name(k) + "[0]", in.dtype)
                                                           : load_convert(input_name(k) + "[ooff" + kk + " + ioff" + kk + "]", in.dtype);
      b.line(register_type(g.inputs[k]->type.dtype) + " rin" + kk + " = ok ? " + e + " : (" +
             register_type(g.inputs[k]->type.dtype) + ")0;");
      names[g.inputs[k]] = "rin" + kk;
    }
    emit_column_passes(b, g, a, l, names);
  }
  GeneratedKernel k = name_kernel(b.str(), g.pattern, l.block);
  k.fmad = false;
  return k;
}

}  // namespace codegen
}  // namespace torchfuse
