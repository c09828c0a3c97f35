// Pointwise IR nodes as CUDA C++ statements, one statement per node, each commented with the
// IR it came from. Shared by every schedule.
#pragma once

#include <map>
#include <string>

#include "codegen/source_builder.h"
#include "src/ir.h"

namespace torchfuse {
namespace codegen {

// Register variables holding IR values, by value. The entry for nullptr is the expression (a
// double) of N, the number of elements a reduction group reduces.
using ValueNames = std::map<const ir::Value*, std::string>;

// Emits "float t3 = (t1 + t2);  // %7 = add(%5, %6)" and records the new name in `names`.
// `reciprocals`: float registers holding 1 / v for divisors v (0 where v is zero, denormal,
// infinite or NaN); a float division by v becomes a multiplication where that is nonzero
// (per-row divisors: one division per row instead of per element). `fast_math`: the layout's
// (Tuning::fast_math when it was planned).
// `per_row`: the node computes one value per row (or column), which always rounds as eager stores
// it (see eager_rounded).
void emit_pointwise(SourceBuilder& b, const ir::Node& node, ValueNames& names, bool fast_math,
                    const ValueNames* reciprocals = nullptr, bool per_row = false);

// How eager_rounded treats an eager-stored 16-bit value.
enum class Rounding {
  // Round where a discontinuous op or a max/min reduction reads it (ir::Value::feeds_discontinuity,
  // ir::Value::read_by_selection): per-element values,
  // where a conversion per op would cost the bf16 suite up to 2.4x.
  WhereItDecides,
  // Round always: reduction results and values computed from them once per row or column. They
  // are few (the conversion costs nothing measurable), and they are where cancellation shows: a
  // sum subtracted from the same sum stored by another kernel is 0 in eager, and half an ulp of
  // the sum (8 on an fp16 sum of 19,000) when one copy stays in a float register.
  Always,
};

// `float_expr` (a float) as eager would store v: rounded to v's 16-bit dtype where eager stores it
// so and `rounding` asks for it; else, for fp16, infinite beyond fp16's range as eager's would be
// (`may_overflow`: the op can leave that range); `float_expr` itself otherwise.
std::string eager_rounded(const ir::Value* v, const std::string& float_expr, bool may_overflow = true,
                          Rounding rounding = Rounding::WhereItDecides);

// The operand `v` as an expression of register dtype `as` (literal or converted variable).
std::string operand(const ir::Value* v, c10::ScalarType as, const ValueNames& names);

}  // namespace codegen
}  // namespace torchfuse
