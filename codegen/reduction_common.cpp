#include "codegen/reduction_common.h"

#include <algorithm>

#include "codegen/cuda_types.h"
#include "src/error.h"

namespace torchfuse {
namespace codegen {

c10::ScalarType accumulator_dtype(const ir::Node& r, bool wide) {
  const auto t = r.output()->type.dtype;
  if (t == c10::ScalarType::Bool) return c10::ScalarType::Long;
  // Wide: float sums accumulate in double where one thread adds hundreds of terms in sequence
  // (column, full and looped row schedules); double keeps that chain's rounding far below eager's.
  // Sums with a 16-bit result stay in float, as eager's do: the result keeps 8 or 11 bits, far
  // above a float chain's rounding, and converting each element to double cost the bf16 column
  // sum its speed.
  if (wide && r.kind == ir::OpKind::ReduceSum && t == c10::ScalarType::Float) {
    return c10::ScalarType::Double;
  }
  return register_dtype(t);
}

std::string reduction_identity(const ir::Node& r, bool wide) {
  const auto t = accumulator_dtype(r, wide);
  const bool fl = t == c10::ScalarType::Float || t == c10::ScalarType::Double;
  switch (r.kind) {
    case ir::OpKind::ReduceSum: return literal(c10::Scalar(0), t);
    case ir::OpKind::ReduceMax:
      if (fl) return literal(c10::Scalar(-std::numeric_limits<double>::infinity()), t);
      return t == c10::ScalarType::Long ? "(-9223372036854775807LL - 1)" : "(" + register_type(t) + ")(-2147483647 - 1)";
    case ir::OpKind::ReduceMin:
      if (fl) return literal(c10::Scalar(std::numeric_limits<double>::infinity()), t);
      return t == c10::ScalarType::Long ? "9223372036854775807LL" : "(" + register_type(t) + ")2147483647";
    default: break;
  }
  TORCHFUSE_INTERNAL_ASSERT(false, "not a reduction: ", ir::op_name(r.kind));
}

std::string reduction_functor(const ir::Node& r) {
  switch (r.kind) {
    case ir::OpKind::ReduceSum: return "tf_sum_op()";
    case ir::OpKind::ReduceMax: return "tf_max_op()";
    case ir::OpKind::ReduceMin: return "tf_min_op()";
    default: break;
  }
  TORCHFUSE_INTERNAL_ASSERT(false, "not a reduction: ", ir::op_name(r.kind));
}

std::string reduction_index(const ReductionAnalysis& a, const ir::Node* r) {
  auto it = std::find(a.reductions.begin(), a.reductions.end(), r);
  TORCHFUSE_INTERNAL_ASSERT(it != a.reductions.end(), "unknown reduction");
  return std::to_string(it - a.reductions.begin());
}

std::string accumulator_name(const ReductionAnalysis& a, const ir::Node* r) { return "acc" + reduction_index(a, r); }

std::string result_name(const ReductionAnalysis& a, const ir::Node* r) { return "red" + reduction_index(a, r); }

std::string online_values(const ReductionAnalysis& a, const ir::Node* sum) { return "ol" + reduction_index(a, sum); }

std::string accumulator_type(const ReductionAnalysis& a, const ir::Node* r, bool wide) {
  return a.online_sum(r) ? "tf_max_sum" : register_type(accumulator_dtype(*r, wide));
}

std::string accumulator_identity(const ReductionAnalysis& a, const ir::Node* r, bool wide) {
  // The running max starts at the lowest finite float, not -inf, so that exp(v - max) of a -inf
  // value is exp(-inf) = 0, not NaN (tf_online_max recovers -inf).
  return a.online_sum(r) ? "tf_max_sum{-3.40282347e38f, 0.0f}" : reduction_identity(*r, wide);
}

std::string accumulator_functor(const ReductionAnalysis& a, const ir::Node* r) {
  return a.online_sum(r) ? "tf_max_sum_op()" : reduction_functor(*r);
}


std::string scan_name(const ReductionAnalysis& a, const ir::Node* scan, const std::string& what) {
  auto it = std::find(a.scans.begin(), a.scans.end(), scan);
  TORCHFUSE_INTERNAL_ASSERT(it != a.scans.end(), "unknown scan");
  return "scan_" + what + std::to_string(it - a.scans.begin());
}

c10::ScalarType scan_dtype(const ir::Node& scan) { return register_dtype(scan.output()->type.dtype); }

const char* scan_prelude() {
  return R"(// Team scans (cumsum along rows): each thread holds C chunk totals, the sums of its k-th
// vector of the row; base[k] gets the sum of every element before that vector: all the team's
// vectors of the chunks before k, and chunk k's vectors of the threads before it.
template <int W, typename T> __device__ __forceinline__ T tf_scan_inclusive(T v, int lane) {
#pragma unroll
  for (int o = 1; o < W; o <<= 1) {
    const T u = __shfl_up_sync(0xffffffffu, v, o, W);
    if (lane >= o) v += u;
  }
  return v;
}
// A team of W <= 32 consecutive lanes; tl is the thread's lane in its team.
template <int W, int C, typename T> __device__ __forceinline__ void tf_team_scan(const T (&tot)[C], T (&base)[C], int tl) {
  T carry = T(0);
#pragma unroll
  for (int k = 0; k < C; ++k) {
    const T incl = tf_scan_inclusive<W>(tot[k], tl);
    const T before = __shfl_up_sync(0xffffffffu, incl, 1, W);
    base[k] = carry + (tl == 0 ? T(0) : before);
    carry += __shfl_sync(0xffffffffu, incl, W - 1, W);
  }
}
// A team of the whole block (WARPS warps); smem holds WARPS * C values.
template <int WARPS, int C, typename T> __device__ __forceinline__ void tf_block_scan(const T (&tot)[C], T (&base)[C], T* smem) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  T incl[C];
#pragma unroll
  for (int k = 0; k < C; ++k) {
    incl[k] = tf_scan_inclusive<32>(tot[k], lane);
    if (lane == 31) smem[k * WARPS + warp] = incl[k];
  }
  __syncthreads();
  T carry = T(0);
#pragma unroll
  for (int k = 0; k < C; ++k) {
    const T before_lane = __shfl_up_sync(0xffffffffu, incl[k], 1);
    T before_warp = T(0), total = T(0);
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
      const T s = smem[k * WARPS + w];
      if (w < warp) before_warp += s;
      total += s;
    }
    base[k] = carry + before_warp + (lane == 0 ? T(0) : before_lane);
    carry += total;
  }
  __syncthreads();  // the next row's totals overwrite smem only after every thread read this row's
}
// Looped rows: one step of a block-wide team over the row, a vector a thread. Returns the sum of
// the elements before this thread's vector (carry, then the threads before it) and adds the
// team's total to carry. smem holds 2 * WARPS values; consecutive steps of the block use
// alternate halves (step's parity), so one barrier a step suffices: a half is written again
// only after the next step's barrier, which every thread passes after reading it.
template <int WARPS, typename T> __device__ __forceinline__ T tf_block_scan_step(T tot, T& carry, T* smem, unsigned step) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  T* const half = smem + (step & 1u) * WARPS;
  const T incl = tf_scan_inclusive<32>(tot, lane);
  if (lane == 31) half[warp] = incl;
  __syncthreads();
  const T before_lane = __shfl_up_sync(0xffffffffu, incl, 1);
  T before_warp = T(0), total = T(0);
#pragma unroll
  for (int w = 0; w < WARPS; ++w) {
    const T s = half[w];
    if (w < warp) before_warp += s;
    total += s;
  }
  const T base = carry + before_warp + (lane == 0 ? T(0) : before_lane);
  carry += total;
  return base;
}
)";
}

bool chunkable_sum(const ir::Node& r) {
  return r.kind == ir::OpKind::ReduceSum && accumulator_dtype(r, true) == c10::ScalarType::Double &&
         register_dtype(r.output()->type.dtype) == c10::ScalarType::Float;
}

void declare_chunk_sums(SourceBuilder& b, const ReductionAnalysis& a, int pass) {
  for (const ir::Node* r : a.reductions) {
    if (a.accumulate_pass(r) == pass && !a.online_sum(r) && chunkable_sum(*r)) b.line("float chunk_" + accumulator_name(a, r) + " = 0.0f;");
  }
}

void flush_chunk_sums(SourceBuilder& b, const ReductionAnalysis& a, int pass) {
  for (const ir::Node* r : a.reductions) {
    if (a.accumulate_pass(r) != pass || a.online_sum(r) || !chunkable_sum(*r)) continue;
    const std::string acc = accumulator_name(a, r);
    b.line(acc + " += (double)chunk_" + acc + ";");
  }
}

void declare_float_sums(SourceBuilder& b, const ReductionAnalysis& a, int lanes, bool compensated) {
  const std::string n = std::to_string(lanes);
  for (const ir::Node* r : a.reductions) {
    if (a.online_sum(r) || !chunkable_sum(*r)) continue;
    const std::string acc = accumulator_name(a, r);
    b.line("float sum_" + acc + "[" + n + "];");
    if (compensated) b.line("float comp_" + acc + "[" + n + "];");
    b.line("#pragma unroll");
    b.line("for (int lane = 0; lane < " + n + "; ++lane) sum_" + acc + "[lane] = 0.0f;");
    if (compensated) {
      b.line("#pragma unroll");
      b.line("for (int lane = 0; lane < " + n + "; ++lane) comp_" + acc + "[lane] = 0.0f;");
    }
  }
}

void fold_float_sums(SourceBuilder& b, const ReductionAnalysis& a, int lanes, bool compensated) {
  for (const ir::Node* r : a.reductions) {
    if (a.online_sum(r) || !chunkable_sum(*r)) continue;
    const std::string acc = accumulator_name(a, r);
    b.line("#pragma unroll");
    b.line("for (int lane = 0; lane < " + std::to_string(lanes) + "; ++lane) " + acc + "[lane] += (double)sum_" + acc + "[lane]" +
           (compensated ? " - (double)comp_" + acc + "[lane]" : "") + ";");
  }
}

void emit_online_results(SourceBuilder& b, const ReductionAnalysis& a, const ir::Node* sum, const std::string& pair,
                         const std::string& max_name, const std::string& sum_name, ValueNames& names) {
  const OnlineSum* o = a.online_sum(sum);
  TORCHFUSE_INTERNAL_ASSERT(o != nullptr, "%", sum->output()->id, " is not an online sum");
  b.line("const float " + max_name + " = tf_online_max(" + pair + ");  // %" + std::to_string(o->max->output()->id));
  const std::string total = "tf_online_sum(" + pair + ", " + (o->masked ? "true" : "false") + ")";
  b.line("const float " + sum_name + " = " + eager_rounded(sum->output(), total, true, Rounding::Always) + ";  // %" +
         std::to_string(sum->output()->id));
  names[o->max->output()] = max_name;
  names[sum->output()] = sum_name;
}

int input_index(const FusionGroup& g, const ir::Value* v) {
  auto it = std::find(g.inputs.begin(), g.inputs.end(), v);
  return it == g.inputs.end() ? -1 : static_cast<int>(it - g.inputs.begin());
}


void PassEmitter::emit_input(const ir::Value* v, size_t k) {
  const std::string name = b.fresh("x");
  b.line(register_type(v->type.dtype) + " " + name + " = " + load(k) + ";  // %" + std::to_string(v->id));
  names[v] = name;
}

void PassEmitter::emit_scan_totals(int pass) {
  std::set<const ir::Value*> after_scan;  // values some scan's output feeds
  for (const ir::Value* v : a.pass_values(g, pass, reuse)) {
    const int k = input_index(g, v);
    if (k >= 0) {
      emit_input(v, static_cast<size_t>(k));
      continue;
    }
    bool fed = ir::is_scan(v->producer->kind);
    for (const ir::Value* in : v->producer->inputs) fed = fed || after_scan.count(in) > 0;
    if (fed) {
      after_scan.insert(v);
      continue;
    }
    emit_pointwise(b, *v->producer, names, fast_math, reciprocals);
  }
  for (const ir::Node* s : totals_only) {
    TORCHFUSE_INTERNAL_ASSERT(!after_scan.count(s->inputs[0]), "a looped scan's input is fed by another scan");
    b.line(scan_name(a, s, "vt") + " += " + operand(s->inputs[0], scan_dtype(*s), names) + ";  // cumsum -> %" +
           std::to_string(s->output()->id) + " (the vector's total)");
  }
}

void PassEmitter::emit(int pass, const std::function<void(size_t, const std::string&)>& store) {
  if (!totals_only.empty()) {
    emit_scan_totals(pass);
    return;
  }
  const auto first = a.first_passes(g, reuse);
  for (const ir::Value* v : a.pass_values(g, pass, reuse)) {
    const bool from_cache = first.at(v) < pass && a.reusable(v, reuse);
    if (from_cache) {
      const std::string slot = cache_slot(v);
      TORCHFUSE_INTERNAL_ASSERT(!slot.empty(), "%", v->id, " is read in a later pass but has no cache slot");
      names[v] = slot;
      continue;
    }
    const int k = input_index(g, v);
    if (k >= 0) {
      emit_input(v, static_cast<size_t>(k));
    } else if (ir::is_scan(v->producer->kind)) {
      emit_scan_value(*v->producer);
    } else {
      emit_pointwise(b, *v->producer, names, fast_math, reciprocals);
    }
    if (reuse != Reuse::None) {
      const std::string slot = cache_slot(v);
      if (!slot.empty()) b.line(slot + " = " + names[v] + ";");
    }
  }
  for (const ir::Node* r : a.reductions) {
    if (a.accumulate_pass(r) != pass || !a.has_accumulator(r)) continue;
    if (const OnlineSum* o = a.online_sum(r)) {
      const std::string v = operand(o->max->inputs[0], c10::ScalarType::Float, names);
      if (online_after_pass.count(r)) {
        const std::string acc = accumulator_name(a, r) + accumulator_suffix;
        b.line(acc + ".m = tf_maximum(" + acc + ".m, " + v + ");  // reduce_max -> %" + std::to_string(o->max->output()->id) +
               " (online sum -> %" + std::to_string(r->output()->id) + " after the pass)");
        continue;
      }
      b.line(online_values(a, r) + online_slot + " = " + v + ";  // online sum -> %" + std::to_string(r->output()->id));
      continue;
    }
    if (float_sums != 0 && wide_sums && chunkable_sum(*r)) {
      const std::string sum = "sum_" + accumulator_name(a, r) + accumulator_suffix;
      const std::string x = operand(r->inputs[0], c10::ScalarType::Float, names);
      const std::string note = "  // " + std::string(ir::op_name(r->kind)) + " -> %" + std::to_string(r->output()->id);
      if (float_sums == 2) {
        b.line(sum + " += " + x + ";" + note + " (float)");
        continue;
      }
      // Kahan: comp holds what the float sum lost, taken off the next term.
      const std::string comp = "comp_" + accumulator_name(a, r) + accumulator_suffix;
      auto kahan = b.scope("");
      b.line("const float kahan_y = " + x + " - " + comp + ";" + note + " (compensated)");
      b.line("const float kahan_t = " + sum + " + kahan_y;");
      b.line(comp + " = (kahan_t - " + sum + ") - kahan_y;");
      b.line(sum + " = kahan_t;");
      continue;
    }
    if (chunk_sums && wide_sums && chunkable_sum(*r)) {
      const std::string chunk = "chunk_" + accumulator_name(a, r) + accumulator_suffix;
      b.line(chunk + " += " + operand(r->inputs[0], c10::ScalarType::Float, names) + ";  // " + ir::op_name(r->kind) +
             " -> %" + std::to_string(r->output()->id) + " (float chunk)");
      continue;
    }
    const std::string acc = accumulator_name(a, r) + accumulator_suffix;
    b.line(acc + " = " + reduction_functor(*r) + "(" + acc + ", " + operand(r->inputs[0], accumulator_dtype(*r, wide_sums), names) +
           ");  // " + ir::op_name(r->kind) + " -> %" + std::to_string(r->output()->id));
  }
  for (const ir::Node* s : a.scans) {
    if (!scan_chunk_totals || a.level_of(s->inputs[0]) != pass) continue;
    b.line(scan_name(a, s, "tot") + "[k] += " + operand(s->inputs[0], scan_dtype(*s), names) + ";  // cumsum -> %" +
           std::to_string(s->output()->id) + " (the chunk's total)");
  }
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const ir::Value* out = g.outputs[k];
    if (a.is_row(out) || a.level_of(out) != pass) continue;
    store(k, names.at(out));
  }
}

void PassEmitter::emit_scan_value(const ir::Node& s) {
  const ir::Value* v = s.output();
  const std::string run = scan_name(a, &s, "run");
  b.line(run + " += " + operand(s.inputs[0], scan_dtype(s), names) + ";");
  const std::string name = b.fresh("t");
  const std::string sum = "(" + scan_name(a, &s, "base") + "[k] + " + run + ")";
  b.line("const " + register_type(v->type.dtype) + " " + name + " = " + eager_rounded(v, sum, true, Rounding::Always) +
         ";  // %" + std::to_string(v->id) + " = cumsum(%" + std::to_string(s.inputs[0]->id) + ")");
  names[v] = name;
}

void PassEmitter::emit_row_reciprocals(int level) {
  for (const ir::Node* n : a.element_nodes) {
    if (n->kind != ir::OpKind::Div || register_dtype(n->output()->type.dtype) != c10::ScalarType::Float) continue;
    const ir::Value* d = n->inputs[1];
    if (!a.is_row(d) || a.level_of(d) != level || d->constant || reciprocals->count(d)) continue;
    if (register_dtype(d->type.dtype) != c10::ScalarType::Float || !names.count(d)) continue;
    const std::string name = b.fresh("rcp");
    const std::string v = names.at(d);
    b.line("const float " + name + " = fabsf(" + v + ") >= 1.17549435e-38f && fabsf(" + v + ") <= 3.40282347e38f ? 1.0f / " + v +
           " : 0.0f;  // 1 / %" + std::to_string(d->id) + ", once per row (0: divide instead)");
    (*reciprocals)[d] = name;
  }
}

void PassEmitter::emit_row_phase(int level, const std::function<void(size_t, const std::string&)>& store) {
  for (const ir::Node* n : a.row_nodes) {
    if (a.level_of(n->output()) == level) emit_pointwise(b, *n, names, fast_math, nullptr, /*per_row=*/true);
  }
  if (reciprocals) emit_row_reciprocals(level);
  store_row_outputs(level, store);
}

void PassEmitter::store_row_outputs(int level, const std::function<void(size_t, const std::string&)>& store) {
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const ir::Value* out = g.outputs[k];
    if (!a.is_row(out) || a.level_of(out) != level) continue;
    store(k, names.at(out));
  }
}

}  // namespace codegen
}  // namespace torchfuse
