// The parts of a row kernel's source around its body (codegen/row_prologue.h).
#include "codegen/row_prologue.h"

#include <algorithm>
#include <string>
#include <vector>

#include "codegen/cuda_types.h"
#include "codegen/kernel_name.h"

namespace torchfuse {
namespace codegen {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

bool reads_elements(Access a) { return a == Access::InnerContig || a == Access::Strided; }

// The bulk copy of staged or ringed rows: evict-last where the rows a block keeps on chip for its
// later passes take that hint (codegen/cache_hints.cpp).
std::string bulk_load(const ReductionLayout& l) { return l.hints.hold_loads ? "tf_bulk_load_keep" : "tf_bulk_load"; }

}  // namespace

void emit_row_params(SourceBuilder& b, const FusionGroup& g, const ReductionLayout& l) {
  const std::string A = str(std::max<size_t>(l.outer_sizes.size(), 1));
  const std::string R = str(l.red_sizes.size());
  b.open("struct " + kNamePlaceholder + "_params");
  b.line("long long rows;");
  b.line("long long cols;");
  b.line("long long outer_size[" + A + "];");
  if (!l.index64) b.line("unsigned long long outer_div[" + A + "];  // tf_fast_div of each outer size");
  b.line("long long red_size[" + R + "];");
  if (l.fast_red_offsets()) b.line("unsigned long long red_div[" + R + "];  // tf_fast_div of each reduced size");
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const auto& in = l.inputs[k];
    emit_operand_param(b, k, in.access == Access::Scalar, in.dtype);
    if (in.access == Access::Scalar || in.access == Access::Uniform) continue;
    b.line("long long " + input_name(k) + "_outer_stride[" + A + "];");
    if (reads_elements(in.access)) b.line("long long " + input_name(k) + "_red_stride[" + R + "];");
  }
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    b.line(storage_type(g.outputs[k]->type.dtype) + "* " + output_name(k) + ";");
  }
  b.close(";");
}

void emit_row_header(SourceBuilder& b, const FusionGroup& g, const ReductionLayout& l, const ReductionAnalysis& a) {
  b.line("// torchfuse fusion group " + str(g.id) + " (row reduction): " + g.describe());
  b.line(std::string("// ") + (l.cached ? "cached" : "looped") + " mode: " + str(int64_t{l.threads_per_row} * l.cluster) +
         " threads per row" + (l.cluster > 1 ? " (a cluster of " + str(l.cluster) + " blocks)" : "") + ", block " + str(l.block) +
         ", vector width " + str(l.vec) +
         (l.cached ? ", " + str(l.chunks_per_thread) + " vectors per thread" : "") +
         (l.cached && l.cache_inputs ? " (inputs kept as loaded, values recomputed)" : "") +
         (l.cached && l.cache_first_pass ? " (first-pass values kept, later ones recomputed)" : "") + "; " + str(a.passes) +
         " pass(es) over each row; " + (l.index64 ? "64" : "32") + "-bit indices");
  if (l.ring_chunk > 0) {
    b.line("// ringed: the inputs read again stream through a ring of " + str(l.ring_slots) + " chunks of " + str(l.ring_chunk) +
           " columns in shared memory, one bulk copy per chunk and input; a chunk freed by the last pass takes the one a ring ahead");
  } else if (l.stages > 0) {
    b.line("// staged: the inputs read again are copied into shared memory, one bulk copy per row and input; " +
           str(l.stages) + " buffer(s), the block's next " + str(l.stages - 1) + " row group(s) loading while it works on one");
  } else if (l.cached && l.cluster == 1) {
    b.line("// each block takes " + str(l.rounds) + " row team(s) in turn" +
           (l.prefetch ? ", prefetching the next one's row into L2" : ""));
  }
  if (l.shared_rounds) b.line("// the reductions of a pass share one block round");
  for (const ir::Node* r : a.reductions) {
    if (const ir::Node* d = a.duplicate_of(r)) {
      b.line("// %" + str(r->output()->id) + " is %" + str(d->output()->id) + " again (the same reduction of the same values)");
    }
    if (const OnlineSum* o = a.online_sum(r)) {
      b.line("// %" + str(o->max->output()->id) + " and %" + str(r->output()->id) +
             " accumulate together: a running max and the sum of exp(v - max)");
    }
  }
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    b.line("// " + input_name(k) + " = %" + str(g.inputs[k]->id) + " " + ir::dtype_short_name(l.inputs[k].dtype) + ", " +
           access_name(l.inputs[k].access));
  }
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    b.line("// " + output_name(k) + " = %" + str(g.outputs[k]->id) + " " + ir::dtype_short_name(g.outputs[k]->type.dtype) +
           (a.is_row(g.outputs[k]) ? ", one per row" : ", per element"));
  }
}

void emit_row_offsets(SourceBuilder& b, const ReductionLayout& l, const std::string& row, const std::string& prefix) {
  const size_t A = l.outer_sizes.size();
  b.line("tf_index " + prefix + "rem = " + row + ";");
  std::vector<std::string> coords(std::max<size_t>(A, 1), "0");
  for (size_t d = A; d-- > 0;) {
    const std::string c = prefix + "a" + str(static_cast<int64_t>(d));
    if (d == 0) {
      b.line("const tf_index " + c + " = " + prefix + "rem;");
    } else {
      const std::string dd = str(static_cast<int64_t>(d));
      emit_divmod(b, l.index64, c, "(tf_index)p.outer_size[" + dd + "]", "p.outer_div[" + dd + "]", prefix + "rem");
    }
    coords[d] = c;
  }
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const auto& in = l.inputs[k];
    if (in.access == Access::Scalar || in.access == Access::Uniform) continue;
    std::string off;
    for (size_t d = 0; d < A; ++d) {
      off += (d ? " + " : "") + coords[d] + " * (tf_index)p." + input_name(k) + "_outer_stride[" + str(static_cast<int64_t>(d)) + "]";
    }
    b.line("const tf_index " + prefix + "ro" + str(static_cast<int64_t>(k)) + " = " + (off.empty() ? "0" : off) + ";");
  }
}

// Row prefetch (ReductionLayout::prefetch): lane 0 of each team starts bringing the row it takes
// next into L2 (one bulk prefetch per row-contiguous input), so that its loads find it there.
void emit_next_row_prefetch(SourceBuilder& b, const ReductionLayout& l, const std::string& row_step) {
  b.line("// L2 prefetch of the row this team takes next");
  auto s = b.scope("if (tl == 0 && row + " + row_step + " < (tf_index)p.rows)");
  emit_row_offsets(b, l, "row + " + row_step, "n");
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    if (l.inputs[k].access != Access::InnerContig) continue;
    const std::string kk = str(static_cast<int64_t>(k));
    b.line("tf_prefetch_l2(" + input_name(k) + " + nro" + kk + ", (unsigned)p.cols * " +
           str(static_cast<int64_t>(c10::elementSize(l.inputs[k].dtype))) + "u);");
  }
}

// Staged rows: each input's byte offset inside a team's shared-memory row (the staged inputs'
// rows one after the other, in input order), as an expression of p.cols.
std::string staged_offset(const ReductionLayout& l, size_t k) {
  return "(unsigned)p.cols * " + str(l.staged_bytes_before(k)) + "u";
}

// Staged rows: the device function that starts copying the rows of the row teams that begin at
// row0 into one buffer (`buf`, a block's teams one after the other), announcing their bytes on its
// barrier. Run by one thread.
void emit_stage_function(SourceBuilder& b, const FusionGroup& g, const ReductionLayout& l) {
  if (l.stages == 0) return;
  const int rpb = l.block / l.threads_per_row;
  auto f = b.scope("__device__ __forceinline__ void " + kNamePlaceholder + "_stage(const " + kNamePlaceholder +
                   "_params& p, tf_index row0, unsigned char* buf, unsigned long long* bar)");
  b.line("const unsigned team_bytes = (unsigned)p.cols * " + str(l.staged_bytes_per_column()) + "u;");
  b.line("const tf_index left = (tf_index)p.rows - row0;");
  b.line("const int teams = left < " + str(rpb) + " ? (int)left : " + str(rpb) + ";");
  b.line("tf_mbar_expect_bytes(bar, (unsigned)teams * team_bytes);");
  b.line("tf_bulk_fence();");
  auto t = b.scope("for (int t = 0; t < teams; ++t)");
  emit_row_offsets(b, l, "row0 + t", "s");
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    if (!l.inputs[k].staged) continue;
    const std::string kk = str(static_cast<int64_t>(k));
    b.line(bulk_load(l) + "(buf + (unsigned)t * team_bytes + " + staged_offset(l, k) + ", p." + input_name(k) + " + sro" + kk +
           ", (unsigned)p.cols * " + str(static_cast<int64_t>(c10::elementSize(l.inputs[k].dtype))) + "u, bar);");
  }
}

// Ringed rows: the device function that starts copying chunk q of the block's chunks (chunk
// q % chunks of its q / chunks-th row) into one ring slot, announcing its bytes on the slot's
// barrier. Run by one thread, after every read of the slot ended.
void emit_ring_function(SourceBuilder& b, const FusionGroup& g, const ReductionLayout& l) {
  if (l.ring_chunk == 0) return;
  const std::string chunk = str(l.ring_chunk);
  auto f = b.scope("__device__ __forceinline__ void " + kNamePlaceholder + "_ring(const " + kNamePlaceholder +
                   "_params& p, unsigned q, unsigned chunks, unsigned char* slot, unsigned long long* bar)");
  b.line("const tf_index row = (tf_index)blockIdx.x + (tf_index)(q / chunks) * (tf_index)gridDim.x;");
  b.line("const tf_index j = (tf_index)(q % chunks) * " + chunk + ";");
  b.line("const unsigned n = (unsigned)((tf_index)p.cols - j < " + chunk + " ? (tf_index)p.cols - j : " + chunk + ");  // columns");
  b.line("tf_mbar_expect_bytes(bar, n * " + str(l.staged_bytes_per_column()) + "u);");
  b.line("tf_bulk_fence();");
  emit_row_offsets(b, l, "row", "s");
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    if (!l.inputs[k].staged) continue;
    const std::string kk = str(static_cast<int64_t>(k));
    b.line(bulk_load(l) + "(slot + " + str(l.ring_chunk * l.staged_bytes_before(k)) + "u, p." + input_name(k) + " + sro" + kk +
           " + j, n * " + str(static_cast<int64_t>(c10::elementSize(l.inputs[k].dtype))) + "u, bar);");
  }
}

std::string red_offset(const ReductionLayout& l, size_t k, const std::string& j) {
  const auto& in = l.inputs[k];
  if (in.access == Access::InnerContig) return j;
  if (l.red_sizes.size() == 1) return j + " * (tf_index)p." + input_name(k) + "_red_stride[0]";
  return "tf_red_offset_" + str(static_cast<int64_t>(k)) + "(p, " + j + ")";
}

// For reduced blocks that did not coalesce to one dim: the offset of column j, decomposed. With
// 32-bit indices by tf_fast_div (a multiply-high and a shift; the group norm's rows over [C/G,
// H * W], whose per-channel weights keep the two dims apart, spent most of their time in the
// divisions of every element's offsets). The outermost dim takes what is left of j (j < cols).
void emit_red_offset_helpers(SourceBuilder& b, const FusionGroup& g, const ReductionLayout& l) {
  if (l.red_sizes.size() == 1) return;
  const bool fast = l.fast_red_offsets();
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    if (!reads_elements(l.inputs[k].access)) continue;
    auto s = b.scope("__device__ __forceinline__ tf_index tf_red_offset_" + str(static_cast<int64_t>(k)) + "(const " +
                     kNamePlaceholder + "_params& p, tf_index j)");
    b.line("tf_index off = 0;");
    for (size_t d = l.red_sizes.size(); d-- > 1;) {
      const std::string dd = str(static_cast<int64_t>(d));
      const std::string stride = "(tf_index)p." + input_name(k) + "_red_stride[" + dd + "]";
      if (fast) {
        b.line("const tf_index q" + dd + " = (tf_index)tf_fast_div((unsigned)j, p.red_div[" + dd + "]);");
        b.line("off += (j - q" + dd + " * (tf_index)p.red_size[" + dd + "]) * " + stride + ";");
        b.line("j = q" + dd + ";");
      } else {
        b.line("off += (j % (tf_index)p.red_size[" + dd + "]) * " + stride + ";");
        b.line("j /= (tf_index)p.red_size[" + dd + "];");
      }
    }
    b.line("off += j * (tf_index)p." + input_name(k) + "_red_stride[0];");
    b.line("return off;");
  }
}

}  // namespace codegen
}  // namespace torchfuse
