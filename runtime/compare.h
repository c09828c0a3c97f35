// Pieces of compare_with_eager (compare.cpp) that compare_groups (group_check.cpp) judges by too.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/ivalue.h>

#include "torchfuse/torchfuse.h"

namespace torchfuse {
namespace runtime {

// The lowest precision among floating dtypes (bf16 below fp16 below fp32), or Undefined when
// none is 16-bit.
c10::ScalarType working_dtype(const std::vector<c10::ScalarType>& dtypes);

// compare_outputs_with_reference for a graph whose lowest working precision is `working`
// (Undefined: the outputs' dtypes decide): its tolerance and multiplier judge every output.
ComparisonReport compare_with_reference(const c10::IValue& eager, const c10::IValue& actual, const c10::IValue& reference,
                                        const Tolerance* tolerance, c10::ScalarType working);

// The line of an error worth a report's one line: the interpreter wraps an op's error in "The
// following operation failed in the TorchScript interpreter.", a traceback and "RuntimeError: ";
// c10::Error appends a C++ backtrace. The first line of the op's own message.
std::string first_line_of_error(const std::string& what);

}  // namespace runtime
}  // namespace torchfuse
