#include "codegen/split_reduction.h"

#include <algorithm>
#include <functional>

#include "codegen/cuda_types.h"
#include "codegen/column_common.h"
#include "codegen/kernel_name.h"
#include "codegen/reduction_common.h"
#include "src/error.h"

namespace torchfuse {
namespace codegen {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// Block-wide reduction of every accumulator (acc<k><suffix>) into red<id><suffix> (all threads get it).
void emit_block_reduce(SourceBuilder& b, const ReductionAnalysis& a, ValueNames& names, int block,
                       const std::string& suffix = "") {
  for (const ir::Node* r : a.reductions) {
    const std::string acc = accumulator_name(a, r) + suffix;
    const std::string t = register_type(accumulator_dtype(*r, true));
    b.line("__shared__ " + t + " smem_" + acc + "[" + str(block / 32) + "];");
    const std::string name = result_name(a, r) + suffix;
    b.line("const " + t + " " + name + " = tf_block_reduce<" + str(block / 32) + ">(" + acc + ", " +
           reduction_functor(*r) + ", smem_" + acc + ");");
    names[r->output()] = result_in_register_type(b, *r, name);
  }
}

// Blocks sharing one reduction count themselves in `counter` after writing their partials; all
// but the last to arrive return. The last one sees every partial (tf_count_arrival releases the
// writes before the first __syncthreads and acquires the earlier blocks') and puts the counter
// back to zero for the next launch on the stream (runtime::stream_counters). The last block's
// work runs after every other block has finished, so it is kept short: one thread's
// acquire-release atomic instead of a fence in every thread, and (column kernels) the partials
// loaded in batches, not one round trip per row. H200 suite, three runs each: bf16 col_sum
// 42.6-42.8 -> 40.5-40.6 us, bf16 mean_sq_full 41.0-41.2 -> 40.1-40.5, f32 74.7-74.8 -> 73.8-73.9.
void emit_last_block_gate(SourceBuilder& b, const std::string& counter, const std::string& arrivals) {
  b.line("__shared__ bool tf_last;");
  b.line("__syncthreads();");
  b.line("if (threadIdx.x == 0) tf_last = tf_count_arrival(" + counter + ") == " + arrivals + " - 1u;");
  b.line("__syncthreads();");
  b.line("if (!tf_last) return;");
  b.line("if (threadIdx.x == 0) *(" + counter + ") = 0u;");
}

void emit_row_outputs(SourceBuilder& b, const FusionGroup& g, const ReductionAnalysis& a, ValueNames& names, bool fast_math,
                      const std::string& guard, const std::string& index) {
  PassEmitter pe{b, g, a, names, fast_math, nullptr, nullptr, Reuse::None};
  const auto store = [&](size_t k, const std::string& e) {
    b.line("if (" + guard + ") " + output_name(k) + "[" + index + "] = " + store_convert(e, g.outputs[k]->type.dtype) + ";");
  };
  // Level 0's row nodes (computed from per-row inputs alone) were emitted with the row inputs.
  pe.store_row_outputs(0, store);
  for (int level = 1; level <= a.passes; ++level) pe.emit_row_phase(level, store);
}

// Per-row inputs of a full reduction are numbers or single-element tensors.
void emit_row_inputs_full(SourceBuilder& b, const FusionGroup& g, const PointwiseLayout& l, const ReductionAnalysis& a,
                          ValueNames& names) {
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const auto& in = l.inputs[k];
    if (in.access != Access::Scalar && in.access != Access::Uniform) continue;
    const std::string e = in.access == Access::Scalar ? "p." + input_name(k) : load_convert(input_name(k) + "[0]", in.dtype);
    b.line(register_type(g.inputs[k]->type.dtype) + " rin" + str(static_cast<int64_t>(k)) + " = " + e + ";");
    if (a.is_row(g.inputs[k])) names[g.inputs[k]] = "rin" + str(static_cast<int64_t>(k));
  }
  PassEmitter pe{b, g, a, names, l.fast_math, nullptr, nullptr, Reuse::None};
  pe.emit_row_phase(0, [&](size_t, const std::string&) {});
}

void emit_full_params(SourceBuilder& b, const FusionGroup& g, const PointwiseLayout& l, const ReductionAnalysis& a) {
  const std::string R = str(static_cast<int64_t>(l.sizes.size()));
  b.open("struct " + kNamePlaceholder + "_params");
  b.line("long long numel;");
  b.line("long long vec_ok;");
  b.line("long long size[" + R + "];");
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const auto& in = l.inputs[k];
    emit_operand_param(b, k, in.access == Access::Scalar, in.dtype);
    if (in.access != Access::Scalar && in.access != Access::Linear && in.access != Access::Uniform) b.line("long long " + input_name(k) + "_stride[" + R + "];");
  }
  emit_outputs_and_partials(b, g, a);
  b.close(";");
}

// Every element input of a full reduction is 16-bit (fp16/bf16). Float sums of one vector's lanes
// before the double accumulator then save a float-to-double conversion per element at an error
// far below the inputs' own rounding; 32-bit inputs keep per-element double sums (f32 column
// chunks strayed from eager on col_sum).
bool sixteen_bit_elements(const std::vector<OperandLayout>& inputs) {
  bool any = false;
  for (const auto& in : inputs) {
    if (in.access == Access::Scalar || in.access == Access::Uniform) continue;
    if (c10::elementSize(in.dtype) != 2) return false;
    any = true;
  }
  return any;
}

// `slot` indexes the per-unroll vector arrays ("" without unroll).
std::string full_load(const PointwiseLayout& l, size_t k, bool vector_path, const std::string& slot) {
  const auto& in = l.inputs[k];
  const std::string kk = str(static_cast<int64_t>(k));
  switch (in.access) {
    case Access::Scalar:
    case Access::Uniform: return "rin" + kk;
    case Access::Linear: return load_convert(vector_path ? "v" + kk + slot + ".v[lane]" : input_name(k) + "[i]", in.dtype);
    default: return load_convert(input_name(k) + "[off" + kk + "]", in.dtype);
  }
}

void emit_full_element_loop(SourceBuilder& b, const FusionGroup& g, const PointwiseLayout& l, const ReductionAnalysis& a,
                            ValueNames& names, bool vector_path) {
  const std::string vec = str(l.vec);
  std::vector<size_t> element_outputs;
  for (size_t k = 0; k < g.outputs.size(); ++k)
    if (!a.is_row(g.outputs[k])) element_outputs.push_back(k);
  const std::string slot = vector_path ? "[u]" : "";
  PassEmitter pe{b, g, a, names, l.fast_math, [&](size_t k) { return full_load(l, k, vector_path, slot); }, nullptr, Reuse::None};
  pe.wide_sums = true;
  pe.chunk_sums = vector_path && sixteen_bit_elements(l.inputs);
  if (vector_path) {
    // Each thread loads `unroll` vectors a block apart before accumulating them in order.
    const std::string U = str(l.unroll);
    const std::string nvec = "(tf_index)(p.numel / " + vec + ")";
    auto loop = b.scope("for (tf_index vb = (tf_index)blockIdx.x * (tf_index)blockDim.x * " + U +
                        " + (tf_index)threadIdx.x; vb < " + nvec + "; vb += step * " + U + ")");
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      if (l.inputs[k].access != Access::Linear) continue;
      b.line("tf_vec<" + storage_type(l.inputs[k].dtype) + ", " + vec + "> v" + str(static_cast<int64_t>(k)) + "[" + U + "];");
    }
    for (int phase = 0; phase < 2; ++phase) {
      b.line("#pragma unroll");
      auto u = b.scope("for (int u = 0; u < " + U + "; ++u)");
      b.line("const tf_index v = vb + (tf_index)u * (tf_index)blockDim.x;");
      b.line("if (v >= " + nvec + ") break;");
      b.line("const tf_index i0 = v * " + vec + ";");
      if (phase == 0) {
        for (size_t k = 0; k < l.inputs.size(); ++k) {
          if (l.inputs[k].access != Access::Linear) continue;
          const std::string kk = str(static_cast<int64_t>(k));
          const std::string vt = "tf_vec<" + storage_type(l.inputs[k].dtype) + ", " + vec + ">";
          b.line("v" + kk + "[u] = " + vector_load(vt, input_name(k) + " + i0", l.hints.evict_loads ? LoadHint::EvictFirst : LoadHint::None) + ";");
        }
        continue;
      }
      if (pe.chunk_sums) declare_chunk_sums(b, a, 0);
      {
        b.line("#pragma unroll");
        auto lanes = b.scope("for (int lane = 0; lane < " + vec + "; ++lane)");
        b.line("const tf_index i = i0 + lane;");
        b.line("(void)i;");
        pe.emit(0, [&](size_t k, const std::string& e) {
          b.line(output_name(k) + "[i] = " + store_convert(e, g.outputs[k]->type.dtype) + ";");
        });
      }
      if (pe.chunk_sums) flush_chunk_sums(b, a, 0);
    }
    return;
  }
  auto loop = b.scope("for (tf_index i = first; i < (tf_index)p.numel; i += step)");
  bool coords = false;
  for (const auto& in : l.inputs) coords = coords || (in.access != Access::Linear && in.access != Access::Uniform && in.access != Access::Scalar);
  if (coords) {
    b.line("tf_index rem = i;");
    for (size_t d = l.sizes.size(); d-- > 0;) {
      const std::string dd = str(static_cast<int64_t>(d));
      if (d == 0) {
        b.line("const tf_index c0 = rem;");
      } else {
        b.line("const tf_index c" + dd + " = rem % (tf_index)p.size[" + dd + "];");
        b.line("rem /= (tf_index)p.size[" + dd + "];");
      }
    }
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      const auto a_k = l.inputs[k].access;
      if (a_k == Access::Linear || a_k == Access::Uniform || a_k == Access::Scalar) continue;
      std::string off;
      for (size_t d = 0; d < l.sizes.size(); ++d) {
        off += (d ? " + " : "") + std::string("c") + str(static_cast<int64_t>(d)) + " * (tf_index)p." + input_name(k) +
               "_stride[" + str(static_cast<int64_t>(d)) + "]";
      }
      b.line("const tf_index off" + str(static_cast<int64_t>(k)) + " = " + off + ";");
    }
  }
  pe.emit(0, [&](size_t k, const std::string& e) {
    b.line(output_name(k) + "[i] = " + store_convert(e, g.outputs[k]->type.dtype) + ";");
  });
}

}  // namespace

GeneratedKernel generate_full_reduction(const FusionGroup& g, const ReductionAnalysis& a, const PointwiseLayout& l,
                                        int block) {
  TORCHFUSE_INTERNAL_ASSERT(a.passes <= 1, "full reductions take one pass, group ", g.id, " needs ", a.passes);
  SourceBuilder b;
  b.raw(prelude());
  b.line("");
  b.line("// torchfuse fusion group " + str(g.id) + " (full reduction): " + g.describe());
  b.line("// blocks reduce grid-strided slices to partials; the last block to finish adds them in block order"
         " (one block: finished in place)");
  b.line(std::string("typedef ") + (l.index64 ? "long long" : "int") + " tf_index;");
  b.line("");
  emit_full_params(b, g, l, a);
  b.line("");
  {
    auto k = b.scope("extern \"C\" __global__ void __launch_bounds__(" + str(block) + ") " + kNamePlaceholder + "(const " +
                     kNamePlaceholder + "_params p)");
    emit_grid_dependency(b);
    emit_restrict_pointers(b, g, l.inputs);
    ValueNames names;
    names[nullptr] = "(double)p.numel";  // N
    emit_row_inputs_full(b, g, l, a, names);
    for (const ir::Node* r : a.reductions) {
      b.line(register_type(accumulator_dtype(*r, true)) + " " + accumulator_name(a, r) + " = " + reduction_identity(*r, true) + ";");
    }
    b.line("const tf_index step = (tf_index)gridDim.x * (tf_index)blockDim.x;");
    b.line("const tf_index first = (tf_index)blockIdx.x * (tf_index)blockDim.x + (tf_index)threadIdx.x;");
    if (l.vec > 1) {
      b.open("if (p.vec_ok)");
      emit_full_element_loop(b, g, l, a, names, true);
      b.close();
      b.open("else");
    }
    emit_full_element_loop(b, g, l, a, names, false);
    if (l.vec > 1) b.close();
    emit_block_reduce(b, a, names, block);
    b.open("if (gridDim.x == 1)");
    emit_row_outputs(b, g, a, names, l.fast_math, "threadIdx.x == 0", "0");
    b.line("return;");
    b.close();
    for (const ir::Node* r : a.reductions) {
      b.line("if (threadIdx.x == 0) p.part_" + accumulator_name(a, r) + "[blockIdx.x] = " + result_name(a, r) + ";");
    }
    emit_last_block_gate(b, "p.counters", "gridDim.x");
    // The last block adds every block's partial, in a fixed order.
    for (const ir::Node* r : a.reductions) {
      const std::string acc = accumulator_name(a, r);
      b.line(register_type(accumulator_dtype(*r, true)) + " " + acc + "_all = " + reduction_identity(*r, true) + ";");
      b.line("#pragma unroll 4");  // the loads of a thread's partials in flight together
      b.line("for (unsigned q = threadIdx.x; q < gridDim.x; q += blockDim.x) " + acc + "_all = " + reduction_functor(*r) + "(" +
             acc + "_all, __ldcg(p.part_" + acc + " + q));");
    }
    emit_block_reduce(b, a, names, block, "_all");
    emit_row_outputs(b, g, a, names, l.fast_math, "threadIdx.x == 0", "0");
  }
  return name_kernel(b.str(), g.pattern, block);
}

// ---- column ----

namespace {

// Threads along the reduced dim: the block is l.tile_threads wide (columns) and this many tall.
int column_rows(const ReductionLayout& l) { return l.block / l.tile_threads; }

int log2_of(int v) {
  int n = 0;
  while ((1 << n) < v) ++n;
  return n;
}

// The reduced rows of one thread's columns: rows r = blockIdx.y * RY + ty, then every
// split * RY rows (RY: the block's threads along the reduced dim); with unroll, the vector loads
// of `unroll` such rows come before their use.
template <typename RowInputs>
void emit_column_element_loop(SourceBuilder& b, const FusionGroup& g, const ReductionLayout& l, const ReductionAnalysis& a,
                              const RowInputs& row_inputs) {
  const std::string vec = str(l.vec);
  const std::string U = str(l.unroll);
  const std::string RY = str(column_rows(l));
  const std::string slot = l.unroll > 1 ? "[u]" : "";
  auto vector_loads = [&](bool declare) {
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      if (!column_vector_input(l, k)) continue;
      const auto& in = l.inputs[k];
      const std::string kk = str(static_cast<int64_t>(k));
      const std::string vt = "tf_vec<" + storage_type(in.dtype) + ", " + vec + ">";
      const std::string addr = input_name(k) + " + ooff" + kk + " + ioff" + kk + " + roff" + kk;
      b.line((declare ? "const " + vt + " v" + kk : "v" + kk + slot) + " = " +
             vector_load(vt, addr, l.hints.evict_loads && !in.shared ? LoadHint::EvictFirst : LoadHint::None) + ";");
    }
  };
  auto accumulate = [&] {
    b.line("#pragma unroll");
    auto lanes = b.scope("for (int lane = 0; lane < " + vec + "; ++lane)");
    ValueNames names;
    names[nullptr] = "(double)p.red";  // N
    row_inputs(names, "lane");
    PassEmitter pe{b, g, a, names, l.fast_math, [&](size_t k) { return column_load(l, k, slot); }, nullptr, Reuse::None, "[lane]", true};
    pe.float_sums = l.float_sums;
    pe.emit(0, [&](size_t k, const std::string& e) {
      b.line(output_name(k) + "[(o * (tf_index)p.red + r) * (tf_index)p.inner + i + lane] = " +
             store_convert(e, g.outputs[k]->type.dtype) + ";");
    });
  };
  if (l.unroll == 1) {
    b.line("#pragma unroll 4");
    auto loop = b.scope("for (tf_index r = (tf_index)blockIdx.y * " + RY + " + ty; ok && r < (tf_index)p.red; r += (tf_index)p.split * " + RY +
                        ")");
    emit_segment(b, l, l.red_sizes, "red", "r", "r");
    vector_loads(true);
    accumulate();
    return;
  }
  // Steps whose `unroll` rows are all in range take no bounds check a row; the step that
  // crosses the column's end (or the split's last rows) checks each. Measured H200 (a
  // hand-written copy of this loop, f32 sums of [64, 512, 256] over dim 1 / [8, 1000, 512]):
  // 12.8 / 13.8 us checked every row, 12.2 / 11.8 checked a step; bf16: 14.1 -> 10.4.
  const std::string step = "(tf_index)p.split * " + str(column_rows(l) * l.unroll);
  const std::string last_row = "rb + (tf_index)" + str(l.unroll - 1) + " * (tf_index)p.split * " + RY;
  b.line("tf_index rb = (tf_index)blockIdx.y * " + RY + " + ty;");
  for (bool checked : {false, true}) {
    auto loop = b.scope(checked ? "for (; ok && rb < (tf_index)p.red; rb += " + step + ")"
                                : "for (; ok && " + last_row + " < (tf_index)p.red; rb += " + step + ")");
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      if (!column_vector_input(l, k)) continue;
      b.line("tf_vec<" + storage_type(l.inputs[k].dtype) + ", " + vec + "> v" + str(static_cast<int64_t>(k)) + "[" + U + "];");
    }
    // (Float sums of the unrolled rows before the double accumulator, as full reductions do for
    // 16-bit inputs, measured slower here: H200 bf16 col_sum 51.3 -> 53.0 us.)
    for (int phase = 0; phase < 2; ++phase) {
      b.line("#pragma unroll");
      auto u = b.scope("for (int u = 0; u < " + U + "; ++u)");
      b.line("const tf_index r = rb + (tf_index)u * (tf_index)p.split * " + RY + ";");
      if (checked) b.line("if (r >= (tf_index)p.red) break;");
      emit_segment(b, l, l.red_sizes, "red", "r", "r");
      if (phase == 0) vector_loads(false);
      else accumulate();
    }
  }
}

// The last block's sum of the split partial rows, each thread's rows loaded a batch at a time
// (a split of up to RY x batch rows in one) so that the block waits on L2 once per batch, not once
// per row: the combine runs after every other block has finished.
void emit_column_partials_sum(SourceBuilder& b, const ReductionAnalysis& a, const ReductionLayout& l) {
  int acc_bytes = 0;
  for (const ir::Node* r : a.reductions) acc_bytes += static_cast<int>(c10::elementSize(accumulator_dtype(*r, true)));
  // At most 128 bytes of loaded partials per thread: half of the 64 registers the kernel has at
  // kColumnBlocksPerSm blocks of 256 threads (256 bytes spilled).
  const int batch = std::max(1, std::min(8, 128 / (l.vec * acc_bytes)));
  const std::string vec = str(l.vec), B = str(batch), RY = str(column_rows(l));
  auto rows = b.scope("for (tf_index s0 = ty; ok && s0 < (tf_index)p.split; s0 += " + str(column_rows(l) * batch) + ")");
  for (const ir::Node* r : a.reductions) {
    const std::string acc = accumulator_name(a, r);
    b.line(register_type(accumulator_dtype(*r, true)) + " pv_" + acc + "[" + B + "][" + vec + "];");
  }
  for (int phase = 0; phase < 2; ++phase) {
    b.line("#pragma unroll");
    auto k = b.scope("for (int k = 0; k < " + B + "; ++k)");
    b.line("const tf_index s = s0 + (tf_index)k * " + RY + ";");
    b.line("if (s >= (tf_index)p.split) break;");
    for (const ir::Node* r : a.reductions) {
      const std::string acc = accumulator_name(a, r);
      if (phase == 0) {
        b.line("tf_load_partials(pv_" + acc + "[k], p.part_" + acc + " + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i);");
        continue;
      }
      b.line("#pragma unroll");
      b.line("for (int lane = 0; lane < " + vec + "; ++lane) " + acc + "[lane] = " + reduction_functor(*r) + "(" + acc +
             "[lane], pv_" + acc + "[k][lane]);");
    }
  }
}

}  // namespace

GeneratedKernel generate_column_reduction(const FusionGroup& g, const ReductionAnalysis& a, const ReductionLayout& l) {
  TORCHFUSE_INTERNAL_ASSERT(a.passes <= 1, "column reductions take one pass, group ", g.id, " needs ", a.passes);
  const std::string vec = str(l.vec);
  const std::string RY = str(column_rows(l));
  const int64_t width = int64_t{l.tile_threads} * l.vec;  // columns a tile
  SourceBuilder b;
  b.raw(prelude());
  b.line("");
  b.line("// torchfuse fusion group " + str(g.id) + " (column reduction): " + g.describe());
  b.line("// " + str(l.tile_threads) + " threads x " + vec + " columns along the kept inner dims, " + RY + " threads along the reduced dim; " +
         std::string(l.split > 1 ? "blocks split the reduced dim, the last block of each tile adds the partials in order"
                                 : "one block per output tile"));
  b.line(std::string("typedef ") + (l.index64 ? "long long" : "int") + " tf_index;");
  b.line("");
  emit_column_params(b, g, l, a);
  b.line("");
  // Per-(outer, inner) inputs and the row phase before the element pass, for one column `i`.
  auto row_inputs = [&](ValueNames& names, const std::string& lane_off) {
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      if (!a.is_row(g.inputs[k])) continue;
      const auto& in = l.inputs[k];
      const std::string kk = str(static_cast<int64_t>(k));
      std::string lo;
      if (!lane_off.empty() && !in.inner_strides.empty()) lo = " + " + lane_off + " * (tf_index)p." + input_name(k) + "_inner_stride[0]";
      std::string e = in.access == Access::Scalar   ? "p." + input_name(k)
                      : in.access == Access::Uniform ? load_convert(input_name(k) + "[0]", in.dtype)
                                                     : load_convert(input_name(k) + "[ooff" + kk + " + ioff" + kk + lo + "]", in.dtype);
      b.line(register_type(g.inputs[k]->type.dtype) + " rin" + kk + " = " + e + ";");
      names[g.inputs[k]] = "rin" + kk;
    }
    PassEmitter pe{b, g, a, names, l.fast_math, nullptr, nullptr, Reuse::None};
    pe.emit_row_phase(0, [&](size_t, const std::string&) {});
  };
  {
    auto k = b.scope("extern \"C\" __global__ void __launch_bounds__(" + str(l.block) + ", " +
                     str(std::max(1, kColumnBlocksPerSm * 256 / l.block)) + ") " + kNamePlaceholder +
                     "(const " + kNamePlaceholder + "_params p)");
    emit_grid_dependency(b);
    emit_restrict_pointers(b, g, l.inputs);
    TORCHFUSE_INTERNAL_ASSERT(l.tile_threads == 1 << log2_of(l.tile_threads), "column tiles of ", l.tile_threads, " threads");
    b.line("const int tx = threadIdx.x & " + str(l.tile_threads - 1) + ";");
    b.line("const int ty = threadIdx.x >> " + str(log2_of(l.tile_threads)) + ";");
    b.line("const tf_index tiles = ((tf_index)p.inner + " + str(width - 1) + ") / " + str(width) + ";");
    b.line("const tf_index o = (tf_index)blockIdx.x / tiles;");
    b.line("const tf_index i = ((tf_index)blockIdx.x % tiles) * " + str(width) + " + tx * " + vec + ";");
    b.line("const bool ok = i < (tf_index)p.inner;");
    emit_segment(b, l, l.outer_sizes, "outer", "o", "o");
    emit_segment(b, l, l.inner_sizes, "inner", "ok ? i : 0", "i");
    for (const ir::Node* r : a.reductions) {
      const std::string acc = accumulator_name(a, r);
      b.line(register_type(accumulator_dtype(*r, true)) + " " + acc + "[" + vec + "];");
      b.line("#pragma unroll");
      b.line("for (int lane = 0; lane < " + vec + "; ++lane) " + acc + "[lane] = " + reduction_identity(*r, true) + ";");
    }
    if (l.float_sums != 0) declare_float_sums(b, a, l.vec, l.float_sums == 1);
    emit_column_element_loop(b, g, l, a, row_inputs);
    if (l.float_sums != 0) fold_float_sums(b, a, l.vec, l.float_sums == 1);
    // Combine the block's RY partial rows in order.
    for (const ir::Node* r : a.reductions) {
      const std::string acc = accumulator_name(a, r);
      const std::string t = register_type(accumulator_dtype(*r, true));
      b.line("__shared__ " + t + " smem_" + acc + "[" + RY + "][" + str(width) + "];");
      b.line("#pragma unroll");
      b.line("for (int lane = 0; lane < " + vec + "; ++lane) smem_" + acc + "[ty][tx * " + vec + " + lane] = " + acc + "[lane];");
    }
    b.line("__syncthreads();");
    // Thread (0, tx) adds the block's RY partial rows of its columns in order, then `finish`es
    // each lane with the totals.
    auto totals = [&](const std::function<void(ValueNames&)>& finish) {
      auto guard = b.scope("if (ty == 0 && ok)");
      b.line("#pragma unroll");
      auto lanes = b.scope("for (int lane = 0; lane < " + vec + "; ++lane)");
      ValueNames names;
      names[nullptr] = "(double)p.red";  // N
      for (const ir::Node* r : a.reductions) {
        const std::string acc = accumulator_name(a, r);
        const std::string t = register_type(accumulator_dtype(*r, true));
        b.line(t + " total_" + acc + " = " + acc + "[lane];");
        b.line("for (int y = 1; y < " + RY + "; ++y) total_" + acc + " = " + reduction_functor(*r) + "(total_" + acc + ", smem_" + acc +
               "[y][tx * " + vec + " + lane]);");
        names[r->output()] = result_in_register_type(b, *r, "total_" + acc);
      }
      finish(names);
    };
    auto outputs = [&](ValueNames& names) {
      row_inputs(names, "lane");
      emit_row_outputs(b, g, a, names, l.fast_math, "true", "o * (tf_index)p.inner + i + lane");
    };
    b.open("if (p.split == 1)");
    totals(outputs);
    b.line("return;");
    b.close();
    totals([&](ValueNames&) {
      for (const ir::Node* r : a.reductions) {
        const std::string acc = accumulator_name(a, r);
        b.line("p.part_" + acc + "[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + lane] = total_" + acc + ";");
      }
    });
    emit_last_block_gate(b, "(p.counters + blockIdx.x)", "(unsigned)p.split");
    // The tile's last block adds the split partial rows: thread (ty, tx) those of rows ty, ty + RY,
    // ... in order, then the RY sums combine in order as above.
    for (const ir::Node* r : a.reductions) {
      const std::string acc = accumulator_name(a, r);
      b.line("#pragma unroll");
      b.line("for (int lane = 0; lane < " + vec + "; ++lane) " + acc + "[lane] = " + reduction_identity(*r, true) + ";");
    }
    emit_column_partials_sum(b, a, l);
    b.line("__syncthreads();");
    for (const ir::Node* r : a.reductions) {
      const std::string acc = accumulator_name(a, r);
      b.line("#pragma unroll");
      b.line("for (int lane = 0; lane < " + vec + "; ++lane) smem_" + acc + "[ty][tx * " + vec + " + lane] = " + acc + "[lane];");
    }
    b.line("__syncthreads();");
    totals(outputs);
  }
  return name_kernel(b.str(), g.pattern, l.block);
}

}  // namespace codegen
}  // namespace torchfuse
