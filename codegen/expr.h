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
void emit_pointwise(SourceBuilder& b, const ir::Node& node, ValueNames& names, bool fast_math,
                    const ValueNames* reciprocals = nullptr);

// `float_expr` (a float) as eager would store v: rounded to v's 16-bit dtype where eager stores it
// so and a discontinuous op reads it (ir::Value::feeds_discontinuity); else, for fp16, infinite
// beyond fp16's range as eager's would be (`may_overflow`: the op can leave that range);
// `float_expr` itself otherwise.
std::string eager_rounded(const ir::Value* v, const std::string& float_expr, bool may_overflow = true);

// The operand `v` as an expression of register dtype `as` (literal or converted variable).
std::string operand(const ir::Value* v, c10::ScalarType as, const ValueNames& names);

}  // namespace codegen
}  // namespace torchfuse
