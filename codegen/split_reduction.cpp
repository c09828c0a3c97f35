#include "codegen/split_reduction.h"

#include <algorithm>
#include <functional>

#include "codegen/cuda_types.h"
#include "codegen/kernel_name.h"
#include "codegen/reduction_common.h"
#include "src/error.h"

namespace torchfuse {
namespace codegen {
namespace {

std::string str(int64_t v) { return std::to_string(v); }


void emit_outputs_and_partials(SourceBuilder& b, const FusionGroup& g, const ReductionAnalysis& a) {
  for (size_t k = 0; k < g.outputs.size(); ++k) b.line(storage_type(g.outputs[k]->type.dtype) + "* " + output_name(k) + ";");
  for (const ir::Node* r : a.reductions) {
    b.line(register_type(accumulator_dtype(*r, true)) + "* part_" + accumulator_name(a, r) + ";  // partial results");
  }
  b.line("unsigned int* counters;  // finished blocks per split reduction (zero between launches)");
}

// Local __restrict__ copies of the params' pointers. `Inputs`: the layout's operands (each with
// .access and .dtype).
template <typename Inputs>
void emit_restrict_pointers(SourceBuilder& b, const FusionGroup& g, const Inputs& inputs) {
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].access == Access::Scalar) continue;
    b.line("const " + storage_type(inputs[k].dtype) + "* __restrict__ " + input_name(k) + " = p." + input_name(k) + ";");
  }
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    b.line(storage_type(g.outputs[k]->type.dtype) + "* __restrict__ " + output_name(k) + " = p." + output_name(k) + ";");
  }
}

// The name of reduction `r`'s result in the register type of its output dtype: a wide
// accumulator (double for f32 sums) rounds as eager's result does, and the epilogue's operations
// see operands of the types they were generated for (tf_minimum(float, double) does not compile).
std::string result_in_register_type(SourceBuilder& b, const ir::Node& r, const std::string& accumulated) {
  const std::string acc_t = register_type(accumulator_dtype(r, true));
  const std::string out_t = register_type(register_dtype(r.output()->type.dtype));
  const std::string rounded = eager_rounded(r.output(), acc_t == out_t ? accumulated : "(" + out_t + ")" + accumulated, true, Rounding::Always);
  if (rounded == accumulated) return accumulated;
  const std::string name = accumulated + "_out";
  b.line("const " + out_t + " " + name + " = " + rounded + ";");
  return name;
}

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

void emit_column_params(SourceBuilder& b, const FusionGroup& g, const ReductionLayout& l, const ReductionAnalysis& a) {
  const auto rank = [](const std::vector<int64_t>& v) { return str(static_cast<int64_t>(std::max<size_t>(v.size(), 1))); };
  b.open("struct " + kNamePlaceholder + "_params");
  b.line("long long outer, red, inner;  // O, R, I: the domain is [O, R, I]");
  b.line("long long split;");
  b.line("long long outer_size[" + rank(l.outer_sizes) + "];");
  b.line("long long red_size[" + rank(l.red_sizes) + "];");
  b.line("long long inner_size[" + rank(l.inner_sizes) + "];");
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const auto& in = l.inputs[k];
    emit_operand_param(b, k, in.access == Access::Scalar, in.dtype);
    if (in.access == Access::Scalar || in.access == Access::Uniform) continue;
    b.line("long long " + input_name(k) + "_outer_stride[" + rank(l.outer_sizes) + "];");
    b.line("long long " + input_name(k) + "_red_stride[" + rank(l.red_sizes) + "];");
    b.line("long long " + input_name(k) + "_inner_stride[" + rank(l.inner_sizes) + "];");
  }
  emit_outputs_and_partials(b, g, a);
  b.close(";");
}

// "off += coord * stride" terms of one segment, decomposing `index` over the segment's sizes.
void emit_segment(SourceBuilder& b, const ReductionLayout& l, const std::vector<int64_t>& sizes, const std::string& seg,
                  const std::string& index, const std::string& prefix) {
  b.line("tf_index " + prefix + "rem = " + index + ";");
  for (size_t d = sizes.size(); d-- > 0;) {
    const std::string dd = str(static_cast<int64_t>(d));
    const std::string c = prefix + "c" + dd;
    if (d == 0) {
      b.line("const tf_index " + c + " = " + prefix + "rem;");
    } else {
      b.line("const tf_index " + c + " = " + prefix + "rem % (tf_index)p." + seg + "_size[" + dd + "];");
      b.line(prefix + "rem /= (tf_index)p." + seg + "_size[" + dd + "];");
    }
  }
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const auto acc = l.inputs[k].access;
    if (acc == Access::Scalar || acc == Access::Uniform) continue;
    std::string off;
    for (size_t d = 0; d < sizes.size(); ++d) {
      off += " + " + prefix + "c" + str(static_cast<int64_t>(d)) + " * (tf_index)p." + input_name(k) + "_" + seg +
             "_stride[" + str(static_cast<int64_t>(d)) + "]";
    }
    b.line("const tf_index " + prefix + "off" + str(static_cast<int64_t>(k)) + " = 0" + off + ";");
  }
}

// Input k for lane `lane` of the thread's columns: a vector element when the inner dim is
// contiguous, else a load at the lane's column.
// `slot` indexes the per-unroll vector arrays ("" without unroll).
bool column_vector_input(const ReductionLayout& l, size_t k) {
  const auto& in = l.inputs[k];
  if (l.vec == 1 || in.access == Access::Scalar || in.access == Access::Uniform) return false;
  return in.inner_strides.size() == 1 && in.inner_strides[0] == 1;
}

std::string column_load(const ReductionLayout& l, size_t k, const std::string& slot) {
  const auto& in = l.inputs[k];
  const std::string kk = str(static_cast<int64_t>(k));
  if (in.access == Access::Scalar) return "p." + input_name(k);
  if (in.access == Access::Uniform) return load_convert(input_name(k) + "[0]", in.dtype);
  if (column_vector_input(l, k)) return load_convert("v" + kk + slot + ".v[lane]", in.dtype);
  std::string lane_off;
  if (l.vec > 1 && !in.inner_strides.empty()) lane_off = " + lane * (tf_index)p." + input_name(k) + "_inner_stride[0]";
  return load_convert(input_name(k) + "[ooff" + kk + " + ioff" + kk + " + roff" + kk + lane_off + "]", in.dtype);
}

// The reduced rows of one thread's columns: rows r = blockIdx.y * 8 + ty, then every
// split * 8 rows; with unroll, the vector loads of `unroll` such rows come before their use.
template <typename RowInputs>
void emit_column_element_loop(SourceBuilder& b, const FusionGroup& g, const ReductionLayout& l, const ReductionAnalysis& a,
                              const RowInputs& row_inputs) {
  const std::string vec = str(l.vec);
  const std::string U = str(l.unroll);
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
    pe.emit(0, [&](size_t k, const std::string& e) {
      b.line(output_name(k) + "[(o * (tf_index)p.red + r) * (tf_index)p.inner + i + lane] = " +
             store_convert(e, g.outputs[k]->type.dtype) + ";");
    });
  };
  if (l.unroll == 1) {
    b.line("#pragma unroll 4");
    auto loop = b.scope("for (tf_index r = (tf_index)blockIdx.y * 8 + ty; ok && r < (tf_index)p.red; r += (tf_index)p.split * 8)");
    emit_segment(b, l, l.red_sizes, "red", "r", "r");
    vector_loads(true);
    accumulate();
    return;
  }
  auto loop = b.scope("for (tf_index rb = (tf_index)blockIdx.y * 8 + ty; ok && rb < (tf_index)p.red; rb += (tf_index)p.split * " +
                      str(8 * l.unroll) + ")");
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    if (!column_vector_input(l, k)) continue;
    b.line("tf_vec<" + storage_type(l.inputs[k].dtype) + ", " + vec + "> v" + str(static_cast<int64_t>(k)) + "[" + U + "];");
  }
  // (Float sums of the unrolled rows before the double accumulator, as full reductions do for
  // 16-bit inputs, measured slower here: H200 bf16 col_sum 51.3 -> 53.0 us.)
  for (int phase = 0; phase < 2; ++phase) {
    b.line("#pragma unroll");
    auto u = b.scope("for (int u = 0; u < " + U + "; ++u)");
    b.line("const tf_index r = rb + (tf_index)u * (tf_index)p.split * 8;");
    b.line("if (r >= (tf_index)p.red) break;");
    emit_segment(b, l, l.red_sizes, "red", "r", "r");
    if (phase == 0) vector_loads(false);
    else accumulate();
  }
}

// The last block's sum of the split partial rows, each thread's rows loaded a batch at a time
// (a split of up to 8 x batch rows in one) so that the block waits on L2 once per batch, not once
// per row: the combine runs after every other block has finished.
void emit_column_partials_sum(SourceBuilder& b, const ReductionAnalysis& a, const ReductionLayout& l) {
  int acc_bytes = 0;
  for (const ir::Node* r : a.reductions) acc_bytes += static_cast<int>(c10::elementSize(accumulator_dtype(*r, true)));
  // At most 128 bytes of loaded partials per thread: half of the 64 registers the kernel has at
  // kColumnBlocksPerSm blocks of 256 threads (256 bytes spilled).
  const int batch = std::max(1, std::min(8, 128 / (l.vec * acc_bytes)));
  const std::string vec = str(l.vec), B = str(batch);
  auto rows = b.scope("for (tf_index s0 = ty; ok && s0 < (tf_index)p.split; s0 += " + str(8 * batch) + ")");
  for (const ir::Node* r : a.reductions) {
    const std::string acc = accumulator_name(a, r);
    b.line(register_type(accumulator_dtype(*r, true)) + " pv_" + acc + "[" + B + "][" + vec + "];");
  }
  for (int phase = 0; phase < 2; ++phase) {
    b.line("#pragma unroll");
    auto k = b.scope("for (int k = 0; k < " + B + "; ++k)");
    b.line("const tf_index s = s0 + (tf_index)k * 8;");
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

// Is input k read per element of a column-passes kernel (not per column, not one value)?
bool column_element_input(const ReductionLayout& l, size_t k) {
  const Access acc = l.inputs[k].access;
  return acc == Access::InnerContig || acc == Access::Strided;
}

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
  const auto cached_load = [&](size_t k) {
    return column_element_input(l, k) ? "c" + str(static_cast<int64_t>(k)) + "[u]" : column_load(l, k, "");
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

GeneratedKernel generate_column_reduction(const FusionGroup& g, const ReductionAnalysis& a, const ReductionLayout& l) {
  TORCHFUSE_INTERNAL_ASSERT(a.passes <= 1, "column reductions take one pass, group ", g.id, " needs ", a.passes);
  const std::string vec = str(l.vec);
  SourceBuilder b;
  b.raw(prelude());
  b.line("");
  b.line("// torchfuse fusion group " + str(g.id) + " (column reduction): " + g.describe());
  b.line("// 32 threads x " + vec + " columns along the kept inner dims, 8 threads along the reduced dim; " +
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
    auto k = b.scope("extern \"C\" __global__ void __launch_bounds__(256, " + str(kColumnBlocksPerSm) + ") " + kNamePlaceholder +
                     "(const " + kNamePlaceholder + "_params p)");
    emit_restrict_pointers(b, g, l.inputs);
    b.line("const int tx = threadIdx.x & 31;");
    b.line("const int ty = threadIdx.x >> 5;");
    b.line("const tf_index tiles = ((tf_index)p.inner + " + str(32 * l.vec - 1) + ") / " + str(32 * l.vec) + ";");
    b.line("const tf_index o = (tf_index)blockIdx.x / tiles;");
    b.line("const tf_index i = ((tf_index)blockIdx.x % tiles) * " + str(32 * l.vec) + " + tx * " + vec + ";");
    b.line("const bool ok = i < (tf_index)p.inner;");
    emit_segment(b, l, l.outer_sizes, "outer", "o", "o");
    emit_segment(b, l, l.inner_sizes, "inner", "ok ? i : 0", "i");
    for (const ir::Node* r : a.reductions) {
      const std::string acc = accumulator_name(a, r);
      b.line(register_type(accumulator_dtype(*r, true)) + " " + acc + "[" + vec + "];");
      b.line("#pragma unroll");
      b.line("for (int lane = 0; lane < " + vec + "; ++lane) " + acc + "[lane] = " + reduction_identity(*r, true) + ";");
    }
    emit_column_element_loop(b, g, l, a, row_inputs);
    // Combine the block's 8 partial rows in order.
    for (const ir::Node* r : a.reductions) {
      const std::string acc = accumulator_name(a, r);
      const std::string t = register_type(accumulator_dtype(*r, true));
      b.line("__shared__ " + t + " smem_" + acc + "[8][" + str(32 * l.vec) + "];");
      b.line("#pragma unroll");
      b.line("for (int lane = 0; lane < " + vec + "; ++lane) smem_" + acc + "[ty][tx * " + vec + " + lane] = " + acc + "[lane];");
    }
    b.line("__syncthreads();");
    // Thread (0, tx) adds the block's 8 partial rows of its columns in order, then `finish`es
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
        b.line("for (int y = 1; y < 8; ++y) total_" + acc + " = " + reduction_functor(*r) + "(total_" + acc + ", smem_" + acc +
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
    // The tile's last block adds the split partial rows: thread (ty, tx) those of rows ty, ty + 8,
    // ... in order, then the 8 sums combine in order as above.
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
  return name_kernel(b.str(), g.pattern, 256);
}

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
