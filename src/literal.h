// Locale-independent, full-precision printing of numbers for IR text and generated CUDA source.
#pragma once

#include <string>

#include <c10/core/Scalar.h>

namespace torchfuse {

// Shortest text that reads back to exactly `v` ("0.5", "1e-05", "inf", "nan").
std::string format_double(double v);
// A scalar as the IR shows it: 2, 0.5, true.
std::string format_scalar_literal(const c10::Scalar& s);

}  // namespace torchfuse
