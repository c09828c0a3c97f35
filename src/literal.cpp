#include "src/literal.h"

#include <charconv>
#include <cmath>

namespace torchfuse {

std::string format_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  // std::to_chars ignores the locale; with no precision it prints the shortest round-trip form.
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string format_scalar_literal(const c10::Scalar& s) {
  if (s.isBoolean()) return s.toBool() ? "true" : "false";
  if (s.isIntegral(false)) return std::to_string(s.toLong());
  return format_double(s.toDouble());
}

}  // namespace torchfuse
