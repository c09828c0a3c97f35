#include "codegen/pointwise.h"

#include "codegen/cuda_types.h"
#include "codegen/expr.h"
#include "codegen/kernel_name.h"
#include "codegen/source_builder.h"
#include "src/error.h"

namespace torchfuse {
namespace codegen {
namespace {

constexpr int kBlockSize = 256;


bool needs_coordinates(const PointwiseLayout& l) {
  if (!l.cats.empty()) return true;  // each cat picks its piece by the element's index
  for (const auto& in : l.inputs) {
    if (in.access == Access::InnerContig || in.access == Access::InnerBroadcast || in.access == Access::Strided)
      return true;
  }
  return false;
}

bool has_offset(Access a) {
  return a == Access::InnerContig || a == Access::InnerBroadcast || a == Access::Strided;
}

// Says what the kernel computes. Sizes stay out of the source (they are arguments), so one
// compiled kernel serves every size with the same layout key.
void emit_header_comment(SourceBuilder& b, const FusionGroup& g, const PointwiseLayout& l) {
  b.line("// torchfuse fusion group " + std::to_string(g.id) + " (pointwise): " + g.describe());
  b.line("// coalesced domain rank " + std::to_string(l.sizes.size()) + "; vector width " + std::to_string(l.vec) +
         "; " + (l.index64 ? "64" : "32") + "-bit indices");
  if (l.tile_dim >= 0) {
    b.line("// tiled: " + std::to_string(l.tile) + " x " + std::to_string(l.tile) + " tiles of dims " +
           std::to_string(l.tile_dim) + " and " + std::to_string(l.sizes.size() - 1) +
           "; transposed inputs are read along dim " + std::to_string(l.tile_dim) +
           " into shared memory, outputs written along the innermost dim");
  }
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    b.line("// " + input_name(k) + " = %" + std::to_string(g.inputs[k]->id) + " " +
           ir::dtype_short_name(l.inputs[k].dtype) + ", " + access_name(l.inputs[k].access) +
           (l.inputs[k].tiled ? ", tiled" : ""));
  }
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    b.line("// " + output_name(k) + " = %" + std::to_string(g.outputs[k]->id) + " " +
           ir::dtype_short_name(l.outputs[k]) + ", contiguous");
  }
}

// Kernel arguments, all 8 bytes wide so the host packs them without padding rules.
void emit_params(SourceBuilder& b, const FusionGroup& g, const PointwiseLayout& l) {
  const std::string rank = std::to_string(l.sizes.size());
  b.open("struct " + kNamePlaceholder + "_params");
  b.line("long long numel;");
  b.line("long long vec_ok;  // 1 when every vector access is aligned and rows hold whole vectors");
  b.line("long long size[" + rank + "];");
  if (!l.index64) b.line("unsigned long long size_div[" + rank + "];  // tf_fast_div of each size");
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const auto& in = l.inputs[k];
    emit_operand_param(b, k, in.access == Access::Scalar, in.dtype);
    if (has_offset(in.access)) b.line("long long " + input_name(k) + "_stride[" + rank + "];");
  }
  for (size_t c = 0; c < l.cats.size(); ++c) {
    b.line("long long cat" + std::to_string(c) + "_bound[" + std::to_string(l.cats[c].bounds.size()) +
           "];  // where each piece after the first starts");
  }
  for (size_t k = 0; k < l.outputs.size(); ++k) b.line(storage_type(l.outputs[k]) + "* " + output_name(k) + ";");
  b.close(";");
}

// "sel0 == 1" when input k is read through piece 1 of cat 0 (its loads are guarded by it: the
// input's pointer is only valid in the piece's range), else "".
std::string piece_guard(const FusionGroup& g, size_t k) {
  const auto [c, j] = g.cat_piece_of_input(k);
  return c < 0 ? "" : "sel" + std::to_string(c) + " == " + std::to_string(j);
}

// A cat: the piece whose range holds the element's index (selector sel<c>).
void emit_cat(SourceBuilder& b, const ir::Node& n, size_t c, ValueNames& names) {
  const c10::ScalarType out = n.output()->type.dtype;
  const std::string sel = "sel" + std::to_string(c);
  std::string expr = operand(n.inputs.back(), out, names);
  for (size_t j = n.inputs.size() - 1; j-- > 0;) {
    expr = "(" + sel + " == " + std::to_string(j) + " ? " + operand(n.inputs[j], out, names) + " : " + expr + ")";
  }
  std::string comment = "%" + std::to_string(n.output()->id) + " = cat(";
  for (size_t j = 0; j < n.inputs.size(); ++j) comment += (j ? ", %" : "%") + std::to_string(n.inputs[j]->id);
  const std::string name = b.fresh("t");
  b.line(register_type(out) + " " + name + " = " + expr + ";  // " + comment + ")");
  names[n.output()] = name;
}

void emit_compute(SourceBuilder& b, const FusionGroup& g, bool fast_math) {
  std::string sig = "__device__ __forceinline__ void " + kNamePlaceholder + "_compute(";
  ValueNames names;
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const auto* v = g.inputs[k];
    sig += (k ? ", " : "") + register_type(v->type.dtype) + " " + input_name(k);
    // The input, or the views that begin its path (FusionGroup::input_binds).
    const bool binds = k < g.input_binds.size() && !g.input_binds[k].empty();
    if (!binds) names[v] = input_name(k);
    for (size_t i = 0; binds && i < g.input_binds[k].size(); ++i) names[g.input_binds[k][i]] = input_name(k);
  }
  for (size_t c = 0; c < g.cats.size(); ++c) sig += std::string(c || !g.inputs.empty() ? ", " : "") + "int sel" + std::to_string(c);
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    sig += std::string(k || !g.inputs.empty() || !g.cats.empty() ? ", " : "") + register_type(g.outputs[k]->type.dtype) + "& " +
           output_name(k);
  }
  auto s = b.scope(sig + ")");
  for (const ir::Node* n : g.nodes) {
    if (n->kind != ir::OpKind::Cat) {
      emit_pointwise(b, *n, names, fast_math);
      continue;
    }
    size_t c = 0;
    while (c < g.cats.size() && g.cats[c].node != n) ++c;
    TORCHFUSE_INTERNAL_ASSERT(c < g.cats.size(), "cat %", n->output()->id, " is not among the group's cats");
    emit_cat(b, *n, c, names);
  }
  for (size_t k = 0; k < g.outputs.size(); ++k) b.line(output_name(k) + " = " + names.at(g.outputs[k]) + ";");
}

void emit_coordinates(SourceBuilder& b, const PointwiseLayout& l, const std::vector<OperandLayout>& inputs) {
  const size_t rank = l.sizes.size();
  b.line("tf_index rem = i;");
  for (size_t d = rank; d-- > 1;) {
    const std::string dd = std::to_string(d);
    emit_divmod(b, l.index64, "c" + dd, "(tf_index)p.size[" + dd + "]", "p.size_div[" + dd + "]");
  }
  b.line("const tf_index c0 = rem;");
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!has_offset(inputs[k].access)) continue;
    std::string off;
    for (size_t d = 0; d < rank; ++d) {
      off += (d ? " + " : "") + std::string("c") + std::to_string(d) + " * (tf_index)p." + input_name(k) + "_stride[" +
             std::to_string(d) + "]";
    }
    b.line("const tf_index off" + std::to_string(k) + " = " + off + ";");
  }
  // Each cat's piece: the last one whose start the element's index along the cat's dim reached.
  for (size_t c = 0; c < l.cats.size(); ++c) {
    const std::string cc = std::to_string(c);
    const std::string coord = "c" + std::to_string(l.cats[c].dim);
    b.line("int sel" + cc + " = 0;");
    for (size_t j = 0; j < l.cats[c].bounds.size(); ++j) {
      b.line("if (" + coord + " >= (tf_index)p.cat" + cc + "_bound[" + std::to_string(j) + "]) sel" + cc + " = " +
             std::to_string(j + 1) + ";");
    }
  }
}

// The value of input k for lane `lane` ("" on the one-element path). `slot` indexes the
// per-unroll arrays the vector loads went into ("" without unroll).
std::string lane_value_unguarded(const PointwiseLayout& l, size_t k, bool vector_path, const std::string& slot) {
  const auto& in = l.inputs[k];
  const std::string n = input_name(k);
  const std::string kk = std::to_string(k);
  if (l.tile_dim >= 0 && in.access != Access::Scalar && in.access != Access::Uniform) {
    // The tiled kernel's element (cl0 + tx, ct0 + j) of step q: from the tile, or loaded ahead.
    return in.tiled ? "tile" + kk + "[tx * V + v][j]" : "d" + kk + "[q][v]";
  }
  switch (in.access) {
    case Access::Scalar: return "p." + n;
    case Access::Uniform: return "u" + kk;
    case Access::Linear:
      return load_convert(vector_path ? "v" + kk + slot + ".v[lane]" : n + "[i]", in.dtype);
    case Access::InnerContig:
      return load_convert(vector_path ? "v" + kk + slot + ".v[lane]" : n + "[off" + kk + "]", in.dtype);
    case Access::InnerBroadcast:
      return vector_path ? "b" + kk + slot : load_convert(n + "[off" + kk + "]", in.dtype);
    case Access::Strided: {
      const std::string inner = "(tf_index)p." + n + "_stride[" + std::to_string(l.sizes.size() - 1) + "]";
      return load_convert(vector_path ? n + "[off" + kk + " + lane * " + inner + "]" : n + "[off" + kk + "]", in.dtype);
    }
  }
  return "";
}

// Input k's value as lane_value_unguarded reads it; for an input read through a cat's piece, 0
// where the element lies in another piece (the address is only valid in the piece's range; the
// vector loads are guarded where they are made).
std::string lane_value(const FusionGroup& g, const PointwiseLayout& l, size_t k, bool vector_path, const std::string& slot) {
  const std::string v = lane_value_unguarded(l, k, vector_path, slot);
  const std::string guard = piece_guard(g, k);
  const auto& in = l.inputs[k];
  const bool loads_here = !vector_path || in.access == Access::Strided;
  const bool loads = in.access != Access::Scalar && in.access != Access::Uniform;
  if (guard.empty() || !loads || !loads_here) return v;
  return "(" + guard + " ? " + v + " : (" + register_type(in.dtype) + ")0)";
}

std::string compute_call(const FusionGroup& g, const PointwiseLayout& l, bool vector_path, const std::string& slot = "") {
  std::string call = kNamePlaceholder + "_compute(";
  for (size_t k = 0; k < l.inputs.size(); ++k) call += (k ? ", " : "") + lane_value(g, l, k, vector_path, slot);
  for (size_t c = 0; c < l.cats.size(); ++c) call += std::string(c || !l.inputs.empty() ? ", " : "") + "sel" + std::to_string(c);
  for (size_t k = 0; k < l.outputs.size(); ++k) {
    call += std::string(k || !l.inputs.empty() || !l.cats.empty() ? ", " : "") + "r" + std::to_string(k) +
            (vector_path ? "[lane]" : "");
  }
  return call + ");";
}

// Vector loads of every input for vector index v (into `v<k><slot>` / `b<k><slot>`); `declare`
// says whether the statements declare those names or assign array slots declared earlier.
void emit_vector_loads(SourceBuilder& b, const FusionGroup& g, const PointwiseLayout& l, const std::string& slot,
                       bool declare) {
  const std::string vec = std::to_string(l.vec);
  if (needs_coordinates(l)) emit_coordinates(b, l, l.inputs);
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const auto& in = l.inputs[k];
    const std::string kk = std::to_string(k);
    const std::string vt = "tf_vec<" + storage_type(in.dtype) + ", " + vec + ">";
    std::string lhs;
    std::string rhs;
    if (in.access == Access::Linear || in.access == Access::InnerContig) {
      lhs = declare ? "const " + vt + " v" + kk : "v" + kk + slot;
      const std::string addr = input_name(k) + " + " + (in.access == Access::Linear ? "i" : "off" + kk);
      rhs = vector_load(vt, addr, l.hints.evict_loads && !in.shared ? LoadHint::EvictFirst : LoadHint::None);
      // A vector lies in one piece of a cat (the launcher checks that the pieces' starts are
      // whole vectors).
      if (!piece_guard(g, k).empty()) rhs = "(" + piece_guard(g, k) + " ? " + rhs + " : " + vt + "{})";
    } else if (in.access == Access::InnerBroadcast) {
      lhs = declare ? "const " + register_type(in.dtype) + " b" + kk : "b" + kk + slot;
      rhs = load_convert(input_name(k) + "[off" + kk + "]", in.dtype);
      if (!piece_guard(g, k).empty()) rhs = "(" + piece_guard(g, k) + " ? " + rhs + " : (" + register_type(in.dtype) + ")0)";
    } else {
      continue;
    }
    b.line(lhs + " = " + rhs + ";");
  }
}

// Computes the vec lanes of vector index v from the loaded values and stores the outputs.
void emit_vector_compute_store(SourceBuilder& b, const FusionGroup& g, const PointwiseLayout& l, const std::string& slot) {
  const std::string vec = std::to_string(l.vec);
  for (size_t k = 0; k < l.outputs.size(); ++k) b.line(register_type(l.outputs[k]) + " r" + std::to_string(k) + "[" + vec + "];");
  b.line("#pragma unroll");
  {
    auto s = b.scope("for (int lane = 0; lane < " + vec + "; ++lane)");
    b.line(compute_call(g, l, true, slot));
  }
  for (size_t k = 0; k < l.outputs.size(); ++k) {
    const std::string kk = std::to_string(k);
    const std::string vt = "tf_vec<" + storage_type(l.outputs[k]) + ", " + vec + ">";
    for (const auto& line : pack_vector("o" + kk, "r" + kk, l.outputs[k], l.vec)) b.line(line);
    b.line(vector_store(vt, output_name(k) + " + i", "o" + kk, l.hints.evict_stores));
  }
}

// The fast path: each thread handles `unroll` vectors a block apart per step of the grid-stride
// loop, issuing all their loads before any computation.
void emit_vector_loop(SourceBuilder& b, const FusionGroup& g, const PointwiseLayout& l) {
  const std::string vec = std::to_string(l.vec);
  b.line("const tf_index nvec = (tf_index)(p.numel / " + vec + ");");
  if (l.unroll == 1) {
    auto loop = b.scope("for (tf_index v = first; v < nvec; v += step)");
    b.line("const tf_index i = v * " + vec + ";");
    emit_vector_loads(b, g, l, "", true);
    emit_vector_compute_store(b, g, l, "");
    return;
  }
  const std::string U = std::to_string(l.unroll);
  // (The compute phase has no coordinates: cats, which need them, are planned without unroll.)
  TORCHFUSE_INTERNAL_ASSERT(l.cats.empty(), "a layout with cats is unrolled");
  auto loop = b.scope("for (tf_index vb = (tf_index)blockIdx.x * (tf_index)blockDim.x * " + U +
                      " + (tf_index)threadIdx.x; vb < nvec; vb += step * " + U + ")");
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const auto& in = l.inputs[k];
    const std::string kk = std::to_string(k);
    if (in.access == Access::Linear || in.access == Access::InnerContig) {
      b.line("tf_vec<" + storage_type(in.dtype) + ", " + vec + "> v" + kk + "[" + U + "];");
    } else if (in.access == Access::InnerBroadcast) {
      b.line(register_type(in.dtype) + " b" + kk + "[" + U + "];");
    }
  }
  for (int phase = 0; phase < 2; ++phase) {
    b.line("#pragma unroll");
    auto u = b.scope("for (int u = 0; u < " + U + "; ++u)");
    b.line("const tf_index v = vb + (tf_index)u * (tf_index)blockDim.x;");
    b.line("if (v >= nvec) break;");
    b.line("const tf_index i = v * " + vec + ";");
    if (phase == 0) emit_vector_loads(b, g, l, "[u]", false);
    else emit_vector_compute_store(b, g, l, "[u]");
  }
}

void emit_scalar_body(SourceBuilder& b, const FusionGroup& g, const PointwiseLayout& l) {
  if (needs_coordinates(l)) emit_coordinates(b, l, l.inputs);
  for (size_t k = 0; k < l.outputs.size(); ++k) b.line(register_type(l.outputs[k]) + " r" + std::to_string(k) + ";");
  b.line(compute_call(g, l, false));
  for (size_t k = 0; k < l.outputs.size(); ++k) {
    b.line(output_name(k) + "[i] = " + store_convert("r" + std::to_string(k), l.outputs[k]) + ";");
  }
}

void emit_pointers(SourceBuilder& b, const PointwiseLayout& l) {
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const auto& in = l.inputs[k];
    if (in.access == Access::Scalar) continue;
    b.line("const " + storage_type(in.dtype) + "* __restrict__ " + input_name(k) + " = p." + input_name(k) + ";");
    if (in.access == Access::Uniform) {
      b.line("const " + register_type(in.dtype) + " u" + std::to_string(k) + " = " +
             load_convert(input_name(k) + "[0]", in.dtype) + ";");
    }
  }
  for (size_t k = 0; k < l.outputs.size(); ++k) {
    b.line(storage_type(l.outputs[k]) + "* __restrict__ " + output_name(k) + " = p." + output_name(k) + ";");
  }
}

std::string kernel_signature() {
  return "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlockSize) + ") " + kNamePlaceholder +
         "(const " + kNamePlaceholder + "_params p)";
}

void emit_kernel(SourceBuilder& b, const FusionGroup& g, const PointwiseLayout& l) {
  auto s = b.scope(kernel_signature());
  emit_grid_dependency(b);
  emit_pointers(b, l);
  b.line("const tf_index step = (tf_index)gridDim.x * (tf_index)blockDim.x;");
  b.line("const tf_index first = (tf_index)blockIdx.x * (tf_index)blockDim.x + (tf_index)threadIdx.x;");
  if (l.vec > 1) {
    auto vs = b.scope("if (p.vec_ok)");
    emit_vector_loop(b, g, l);
    b.line("return;");
  }
  auto loop = b.scope("for (tf_index i = first; i < (tf_index)p.numel; i += step)");
  emit_scalar_body(b, g, l);
}

// "sum of c<d> * <stride>(d)" over the coalesced dims other than the tile's two, or "0".
template <typename Stride>
std::string tile_base(const PointwiseLayout& l, Stride stride) {
  std::string e;
  const size_t rank = l.sizes.size();
  for (size_t d = 0; d + 1 < rank; ++d) {
    if (static_cast<int>(d) == l.tile_dim) continue;
    e += (e.empty() ? "" : " + ") + std::string("c") + std::to_string(d) + " * " + stride(d);
  }
  return e.empty() ? "0" : e;
}

// One tile of the tiled layout, V elements a thread along the contiguous dims (V > 1: vector
// loads and stores, where the launch found every access aligned: p.vec_ok). Threads first read
// each transposed input's tile with consecutive threads along its own contiguous dim (ct), and
// load the other inputs' values of their elements ahead; then compute and write the tile with
// consecutive threads along the innermost dim (cl). Loads take coordinates clamped into the
// tensor (a partial tile's extra loads read an element that exists, and go unused), so that they
// issue back to back without branches; only the stores are guarded.
void emit_tile_body(SourceBuilder& b, const FusionGroup& g, const PointwiseLayout& l, int V) {
  const size_t rank = l.sizes.size();
  const int tx_count = l.tile / V;
  const std::string T = std::to_string(l.tile);
  const std::string Vs = std::to_string(V);
  const std::string rows = std::to_string(kBlockSize / tx_count);
  const std::string steps = std::to_string(l.tile * tx_count / kBlockSize);  // steps of `rows` rows per tile
  const std::string td = std::to_string(l.tile_dim);
  const std::string last = std::to_string(rank - 1);
  const auto stride = [](size_t k, const std::string& d) { return "(tf_index)p." + input_name(k) + "_stride[" + d + "]"; };
  const auto at = [&](size_t k) {
    if (l.inputs[k].access == Access::Linear) return "base + ct * os" + td + " + cl";
    const std::string kk = std::to_string(k);
    return "base" + kk + " + ct * " + stride(k, td) + " + cl * " + stride(k, last);
  };
  // Inputs read along cl a vector at a time (the others lane by lane).
  const auto vector_direct = [&](size_t k) {
    const Access a = l.inputs[k].access;
    return V > 1 && !l.inputs[k].tiled && (a == Access::Linear || a == Access::InnerContig);
  };
  const auto direct = [&](size_t k) {
    const Access a = l.inputs[k].access;
    return !l.inputs[k].tiled && a != Access::Scalar && a != Access::Uniform;
  };
  b.line("constexpr int V = " + Vs + ";");
  b.line("const int tx = threadIdx.x % " + std::to_string(tx_count) + ";");
  b.line("const int ty = threadIdx.x / " + std::to_string(tx_count) + ";");
  b.line("#pragma unroll");
  {
    auto j = b.scope("for (int j0 = 0; j0 < " + T + "; j0 += " + rows + ")");
    b.line("const int j = j0 + ty;");
    b.line("const tf_index ct = min(ct0 + tx * V, st - V);");
    b.line("const tf_index cl = min(cl0 + j, sl - 1);");
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      if (!l.inputs[k].tiled) continue;
      const std::string kk = std::to_string(k);
      const auto dt = l.inputs[k].dtype;
      if (V == 1) {
        b.line("tile" + kk + "[j][tx] = " + load_convert(input_name(k) + "[" + at(k) + "]", dt) + ";");
        continue;
      }
      const std::string vt = "tf_vec<" + storage_type(dt) + ", " + Vs + ">";
      b.line("const " + vt + " w" + kk + " = " + vector_load(vt, input_name(k) + " + " + at(k), LoadHint::None) + ";");
      b.line("#pragma unroll");
      b.line("for (int v = 0; v < V; ++v) tile" + kk + "[j][tx * V + v] = " + load_convert("w" + kk + ".v[v]", dt) + ";");
    }
  }
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    if (direct(k)) b.line(register_type(l.inputs[k].dtype) + " d" + std::to_string(k) + "[" + steps + "][V];");
  }
  b.line("#pragma unroll");
  {
    auto q = b.scope("for (int q = 0; q < " + steps + "; ++q)");
    b.line("const tf_index ct = min(ct0 + q * " + rows + " + ty, st - 1);");
    b.line("const tf_index cl = min(cl0 + tx * V, sl - V);");
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      if (!direct(k)) continue;
      const std::string kk = std::to_string(k);
      const auto dt = l.inputs[k].dtype;
      if (vector_direct(k)) {
        const std::string vt = "tf_vec<" + storage_type(dt) + ", " + Vs + ">";
        b.line("const " + vt + " w" + kk + " = " + vector_load(vt, input_name(k) + " + " + at(k), LoadHint::None) + ";");
        b.line("#pragma unroll");
        b.line("for (int v = 0; v < V; ++v) d" + kk + "[q][v] = " + load_convert("w" + kk + ".v[v]", dt) + ";");
        continue;
      }
      const std::string lane = V == 1 ? "" : " + v * " + stride(k, last);
      b.line("#pragma unroll");
      b.line("for (int v = 0; v < V; ++v) d" + kk + "[q][v] = " + load_convert(input_name(k) + "[" + at(k) + lane + "]", dt) + ";");
    }
  }
  b.line("__syncthreads();");
  b.line("#pragma unroll");
  auto q = b.scope("for (int q = 0; q < " + steps + "; ++q)");
  b.line("const int j = q * " + rows + " + ty;");
  b.line("const tf_index ct = ct0 + j;");
  b.line("const tf_index cl = cl0 + tx * V;");
  b.line("if (ct >= st || cl >= sl) continue;");
  b.line("const tf_index i = base + ct * os" + td + " + cl;");
  for (size_t k = 0; k < l.outputs.size(); ++k) b.line(register_type(l.outputs[k]) + " r" + std::to_string(k) + "[V];");
  std::string call = kNamePlaceholder + "_compute(";
  for (size_t k = 0; k < l.inputs.size(); ++k) call += (k ? ", " : "") + lane_value(g, l, k, false, "");
  for (size_t k = 0; k < l.outputs.size(); ++k) call += std::string(k || !l.inputs.empty() ? ", " : "") + "r" + std::to_string(k) + "[v]";
  b.line("#pragma unroll");
  b.line("for (int v = 0; v < V; ++v) " + call + ");");
  for (size_t k = 0; k < l.outputs.size(); ++k) {
    const std::string kk = std::to_string(k);
    if (V == 1) {
      b.line(output_name(k) + "[i] = " + store_convert("r" + kk + "[0]", l.outputs[k]) + ";");
      continue;
    }
    const std::string vt = "tf_vec<" + storage_type(l.outputs[k]) + ", " + Vs + ">";
    for (const auto& line : pack_vector("o" + kk, "r" + kk, l.outputs[k], V)) b.line(line);
    b.line(vector_store(vt, output_name(k) + " + i", "o" + kk, false));
  }
}

// The tiled layout (PointwiseLayout::tile_dim): a grid-stride loop over tiles of the tile dim
// (ct) and the innermost dim (cl), for every index of the other dims (emit_tile_body).
void emit_tiled_kernel(SourceBuilder& b, const FusionGroup& g, const PointwiseLayout& l) {
  const size_t rank = l.sizes.size();
  const std::string T = std::to_string(l.tile);
  const std::string td = std::to_string(l.tile_dim);
  const std::string last = std::to_string(rank - 1);
  auto s = b.scope(kernel_signature());
  emit_grid_dependency(b);
  emit_pointers(b, l);
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    if (l.inputs[k].tiled)
      b.line("__shared__ " + register_type(l.inputs[k].dtype) + " tile" + std::to_string(k) + "[" + T + "][" + T + " + 1];");
  }
  b.line("const tf_index st = (tf_index)p.size[" + td + "];");
  b.line("const tf_index sl = (tf_index)p.size[" + last + "];");
  b.line("const tf_index nt = (st + " + T + " - 1) / " + T + ";");
  b.line("const tf_index nl = (sl + " + T + " - 1) / " + T + ";");
  b.line("const tf_index ntiles = (tf_index)p.numel / (st * sl) * nt * nl;");
  // The output's contiguous strides.
  b.line("const tf_index os" + last + " = 1;");
  for (size_t d = rank - 1; d-- > 0;) {
    b.line("const tf_index os" + std::to_string(d) + " = os" + std::to_string(d + 1) + " * (tf_index)p.size[" +
           std::to_string(d + 1) + "];");
  }
  auto loop = b.scope("for (tf_index tile = blockIdx.x; tile < ntiles; tile += gridDim.x)");
  b.line("tf_index rem = tile;");
  b.line("const tf_index cl0 = rem % nl * " + T + ";");
  b.line("rem /= nl;");
  b.line("const tf_index ct0 = rem % nt * " + T + ";");
  b.line("rem /= nt;");
  for (size_t d = rank - 1; d-- > 0;) {
    if (static_cast<int>(d) == l.tile_dim) continue;
    const std::string dd = std::to_string(d);
    b.line("const tf_index c" + dd + " = rem % (tf_index)p.size[" + dd + "];");
    b.line("rem /= (tf_index)p.size[" + dd + "];");
  }
  b.line("const tf_index base = " + tile_base(l, [](size_t d) { return "os" + std::to_string(d); }) + ";");
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    if (!has_offset(l.inputs[k].access)) continue;
    b.line("const tf_index base" + std::to_string(k) + " = " +
           tile_base(l, [&](size_t d) { return "(tf_index)p." + input_name(k) + "_stride[" + std::to_string(d) + "]"; }) + ";");
  }
  b.line("__syncthreads();  // the previous tile's reads of shared memory are done");
  if (l.vec == 1) {
    emit_tile_body(b, g, l, 1);
    return;
  }
  b.open("if (p.vec_ok)");
  emit_tile_body(b, g, l, l.vec);
  b.close();
  b.open("else");
  emit_tile_body(b, g, l, 1);
  b.close();
}

}  // namespace

GeneratedKernel generate_pointwise(const FusionGroup& group, const PointwiseLayout& layout) {
  TORCHFUSE_INTERNAL_ASSERT(layout.inputs.size() == group.inputs.size(), "layout has ", layout.inputs.size(),
                            " inputs, group ", group.inputs.size());
  SourceBuilder b;
  b.raw(prelude());
  b.line("");
  emit_header_comment(b, group, layout);
  b.line(std::string("typedef ") + (layout.index64 ? "long long" : "int") + " tf_index;");
  b.line("");
  emit_params(b, group, layout);
  b.line("");
  emit_compute(b, group, layout.fast_math);
  b.line("");
  if (layout.tile_dim >= 0) emit_tiled_kernel(b, group, layout);
  else emit_kernel(b, group, layout);
  return name_kernel(b.str(), group.pattern, kBlockSize);
}

}  // namespace codegen
}  // namespace torchfuse
