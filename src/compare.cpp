// compare_with_eager: eager and compiled on the same inputs, per-output errors and a verdict.
#include <ATen/ATen.h>

#include <cmath>
#include <iomanip>
#include <sstream>

#include "src/error.h"
#include "src/ir.h"

namespace torchfuse {

Tolerance default_tolerance(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Double: return {1e-9, 1e-12};
    case c10::ScalarType::Float: return {1e-5, 1e-5};
    case c10::ScalarType::Half: return {5e-3, 1e-3};
    // Eager rounds every intermediate to bf16 (8 bits of mantissa); fused kernels keep fp32.
    case c10::ScalarType::BFloat16: return {3e-2, 1e-2};
    default: return {0, 0};  // integers and bools must match exactly
  }
}

namespace {

void flatten(const c10::IValue& v, std::vector<c10::IValue>& out) {
  if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) flatten(e, out);
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) flatten(e, out);
  } else {
    out.push_back(v);
  }
}

OutputComparison compare_tensor(const at::Tensor& expected, const at::Tensor& actual, size_t index,
                                const Tolerance* tolerance) {
  OutputComparison c;
  c.name = "output " + std::to_string(index);
  c.dtype = ir::dtype_short_name(expected.scalar_type());
  c.sizes = expected.sizes().vec();
  c.tolerance = tolerance ? *tolerance : default_tolerance(expected.scalar_type());
  if (expected.scalar_type() != actual.scalar_type()) {
    c.problem = std::string("dtype differs: eager ") + ir::dtype_short_name(expected.scalar_type()) + ", compiled " +
                ir::dtype_short_name(actual.scalar_type());
    return c;
  }
  if (expected.sizes() != actual.sizes()) {
    c.problem = "shape differs";
    return c;
  }
  if (expected.numel() == 0) {
    c.passed = true;
    return c;
  }
  const at::Tensor e = expected.to(at::kDouble);
  const at::Tensor a = actual.to(expected.device()).to(at::kDouble);
  const at::Tensor e_nan = e.isnan();
  const at::Tensor a_nan = a.isnan();
  if (!at::equal(e_nan, a_nan)) {
    c.problem = "NaN positions differ (" + std::to_string(e_nan.sum().item<int64_t>()) + " in eager, " +
                std::to_string(a_nan.sum().item<int64_t>()) + " in compiled)";
    return c;
  }
  // Equal infinities (and equal NaN positions) count as exact; compare the rest.
  const at::Tensor same = (e == a) | e_nan;
  const at::Tensor diff = at::where(same, at::zeros_like(e), (e - a).abs());
  c.max_abs_error = diff.max().item<double>();
  c.max_rel_error = (diff / e.abs().clamp_min(1e-30)).masked_fill(same, 0).max().item<double>();
  const at::Tensor bound = c.tolerance.atol + c.tolerance.rtol * e.abs();
  c.passed = !(diff > bound).any().item<bool>() && !std::isnan(c.max_abs_error);
  if (!c.passed) c.problem = "error above tolerance";
  return c;
}

}  // namespace

ComparisonReport compare_outputs(const c10::IValue& expected, const c10::IValue& actual, const Tolerance* tolerance) {
  std::vector<c10::IValue> e, a;
  flatten(expected, e);
  flatten(actual, a);
  TORCHFUSE_CHECK(e.size() == a.size(), "torchfuse: eager returned ", e.size(), " values, compiled ", a.size());
  ComparisonReport r;
  for (size_t i = 0; i < e.size(); ++i) {
    if (e[i].isTensor() && a[i].isTensor()) {
      r.outputs.push_back(compare_tensor(e[i].toTensor(), a[i].toTensor(), i, tolerance));
      continue;
    }
    OutputComparison c;
    c.name = "output " + std::to_string(i);
    c.dtype = e[i].tagKind();
    c.passed = e[i] == a[i];
    if (!c.passed) c.problem = "values differ";
    r.outputs.push_back(c);
  }
  return r;
}

ComparisonReport compare_outputs_with_reference(const c10::IValue& eager, const c10::IValue& actual,
                                                const c10::IValue& reference, const Tolerance* tolerance) {
  ComparisonReport r = compare_outputs(eager, actual, tolerance);
  std::vector<c10::IValue> e, a, ref;
  flatten(eager, e);
  flatten(actual, a);
  flatten(reference, ref);
  TORCHFUSE_CHECK(ref.size() == e.size(), "torchfuse: the float64 reference returned ", ref.size(), " values, eager ",
                  e.size());
  for (size_t i = 0; i < e.size(); ++i) {
    auto& c = r.outputs[i];
    const bool comparable = c.problem.empty() || c.problem == "error above tolerance";
    if (!e[i].isTensor() || !a[i].isTensor() || !ref[i].isTensor() || !comparable) {
      continue;
    }
    const at::Tensor et = e[i].toTensor();
    if (!et.is_floating_point() || et.numel() == 0) continue;
    const at::Tensor ed = et.to(at::kDouble);
    const at::Tensor ad = a[i].toTensor().to(et.device()).to(at::kDouble);
    const at::Tensor rd = ref[i].toTensor().to(et.device()).to(at::kDouble);
    const at::Tensor same = (ed == ad) | ed.isnan();
    const at::Tensor err = at::where(same, at::zeros_like(ed), (ad - rd).abs());
    const at::Tensor eager_err = (ed - rd).abs().nan_to_num(0, 0, 0);
    const at::Tensor bound = c.tolerance.atol + c.tolerance.rtol * rd.abs().nan_to_num(0, 0, 0) + 2 * eager_err;
    c.has_reference = true;
    c.max_abs_error_vs_reference = (ad - rd).abs().nan_to_num(0, 0, 0).max().item<double>();
    c.eager_max_abs_error_vs_reference = eager_err.max().item<double>();
    c.passed = !((err > bound) | (err.isnan() & ~same)).any().item<bool>();
    c.problem = c.passed ? "" : "farther from the float64 result than eager's rounding allows";
  }
  return r;
}

ComparisonReport compare_with_eager(CompiledModule& compiled, const std::vector<c10::IValue>& inputs,
                                    const Tolerance* tolerance) {
  const c10::IValue expected = compiled.forward_eager(inputs);
  const c10::IValue actual = compiled.forward(inputs);
  std::vector<c10::IValue> upcast;
  bool any_floating = false;
  for (const auto& v : inputs) {
    if (v.isTensor() && v.toTensor().defined() && v.toTensor().is_floating_point()) {
      upcast.emplace_back(v.toTensor().to(at::kDouble));
      any_floating = true;
    } else {
      upcast.push_back(v);
    }
  }
  if (!any_floating) return compare_outputs(expected, actual, tolerance);
  c10::IValue reference;
  try {
    reference = compiled.forward_eager(upcast);
  } catch (const std::exception&) {
    return compare_outputs(expected, actual, tolerance);  // the graph does not take float64
  }
  return compare_outputs_with_reference(expected, actual, reference, tolerance);
}

bool ComparisonReport::passed() const {
  for (const auto& o : outputs)
    if (!o.passed) return false;
  return true;
}

std::string ComparisonReport::to_string() const {
  std::ostringstream os;
  os << std::left << std::setw(10) << "output" << std::setw(6) << "dtype" << std::setw(22) << "shape" << std::setw(13)
     << "max abs err" << std::setw(13) << "max rel err" << std::setw(15) << "vs f64: comp" << std::setw(9)
     << "eager" << std::setw(18) << "tol (rtol/atol)" << "verdict\n";
  for (const auto& o : outputs) {
    std::string shape = "[";
    for (size_t i = 0; i < o.sizes.size(); ++i) shape += (i ? ", " : "") + std::to_string(o.sizes[i]);
    shape += "]";
    std::ostringstream tol;
    tol << o.tolerance.rtol << "/" << o.tolerance.atol;
    os << std::left << std::setw(10) << o.name << std::setw(6) << o.dtype << std::setw(22) << shape << std::setw(13)
       << std::setprecision(3) << o.max_abs_error << std::setw(13) << o.max_rel_error;
    if (o.has_reference) os << std::setw(15) << o.max_abs_error_vs_reference << std::setw(9) << o.eager_max_abs_error_vs_reference;
    else os << std::setw(15) << "-" << std::setw(9) << "-";
    os << std::setw(18) << tol.str()
       << (o.passed ? "PASS" : "FAIL: " + o.problem) << "\n";
  }
  return os.str();
}

}  // namespace torchfuse
