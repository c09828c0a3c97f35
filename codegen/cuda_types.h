// How IR dtypes and numbers appear in generated CUDA C++.
#pragma once

#include <string>
#include <vector>

#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>

namespace torchfuse {
namespace codegen {

class SourceBuilder;

// Type a tensor element is stored as in memory: tf_half, tf_bf16, float, ...
std::string storage_type(c10::ScalarType dtype);
// Type a value is held in registers: fp16/bf16 widen to float.
std::string register_type(c10::ScalarType dtype);
c10::ScalarType register_dtype(c10::ScalarType dtype);
size_t element_size(c10::ScalarType dtype);

// `expr` (of register dtype `from`) as register dtype `to`.
std::string convert(const std::string& expr, c10::ScalarType from, c10::ScalarType to);
// Storage element (of `dtype`) widened to its register type.
std::string load_convert(const std::string& expr, c10::ScalarType dtype);
// Register value narrowed to the storage type of `dtype` (round to nearest even for fp16/bf16).
std::string store_convert(const std::string& expr, c10::ScalarType dtype);
// A vector of type `vt` loaded from / stored to `addr`: a plain access, or one with an L2
// eviction priority (tf_load_once, tf_load_keep, tf_store_once; see codegen/cache_hints.h);
// KeepShared: evict last from L2, kept in L1 (tf_load_shared: inputs several rows read).
enum class LoadHint { None, EvictFirst, EvictLast, KeepShared };
std::string vector_load(const std::string& vt, const std::string& addr, LoadHint hint);
// The element pointer expression `ptr` points to, loaded through the hinted loads `hint` names
// (tf_load_once, tf_load_keep, tf_load_shared; None: a plain dereference).
std::string hinted_load(const std::string& ptr, LoadHint hint);
std::string vector_store(const std::string& vt, const std::string& addr, const std::string& value, bool evict_first);
// Statements declaring `var`, a tf_vec of `vec` lanes of `dtype`, from the register array `regs`
// (16-bit types convert two lanes per instruction).
std::vector<std::string> pack_vector(const std::string& var, const std::string& regs, c10::ScalarType dtype, int vec);

// A number as a literal of register dtype `as`: 0.5f, 0.5, 3LL, true; inf and nan spelled with
// bit patterns; printed locale-independently and exactly.
std::string literal(const c10::Scalar& value, c10::ScalarType as);

// Names of a kernel's inputs and outputs: in0, in1, ... and out0, ...
std::string input_name(size_t k);
std::string output_name(size_t k);
// A number input is passed by value (double or long long); a tensor input as a pointer to its
// storage type. Emits that params-struct line.
void emit_operand_param(class SourceBuilder& b, size_t k, bool is_number, c10::ScalarType dtype);

// Helpers every kernel may use: storage types, conversions, vector types, gelu, ...
const std::string& prelude();

// An entry point's first statement: kGridDependencyCall (codegen/kernel.h).
void emit_grid_dependency(class SourceBuilder& b);
// The definition of the function it calls: in the prelude, and ahead of the attention kernel's
// primitives (codegen/attention.cpp).
const char* grid_dependency_definition();

// The prelude's tf_fast_div argument for divisor d (1 <= d < 2^31): the multiplier m and shift s
// with n / d == (umulhi(n, m) + n) >> s for every 0 <= n < 2^31, packed as m << 32 | s.
uint64_t fast_divider(int64_t d);

// Emits `c = rem % size; rem /= size;` (the variable `rem` by default) for 32-bit indices through
// tf_fast_div (`div_expr` names the packed divider, `size_expr` the size), and as plain division
// for 64-bit ones.
void emit_divmod(class SourceBuilder& b, bool index64, const std::string& c, const std::string& size_expr,
                 const std::string& div_expr, const std::string& rem = "rem");

}  // namespace codegen
}  // namespace torchfuse
