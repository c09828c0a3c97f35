// compare_with_eager: eager and compiled on the same inputs, per-output errors and a verdict.
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <iomanip>
#include <sstream>

#include "runtime/compare.h"
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

std::vector<int64_t> unravel(int64_t flat, at::IntArrayRef sizes) {
  std::vector<int64_t> index(sizes.size());
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    const int64_t s = std::max<int64_t>(sizes[d], 1);
    index[d] = flat % s;
    flat /= s;
  }
  return index;
}

void flatten(const c10::IValue& v, std::vector<c10::IValue>& out) {
  if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) flatten(e, out);
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) flatten(e, out);
  } else if (v.isGenericDict()) {
    for (const auto& entry : v.toGenericDict()) flatten(entry.value(), out);  // in insertion order
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
  c.worst_index = unravel(diff.nan_to_num(std::numeric_limits<double>::infinity()).reshape({-1}).argmax().item<int64_t>(), e.sizes());
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

namespace {

// The multiplier on eager's RMSE (torch._dynamo.utils.same, with its larger multipliers for small
// tensors): 10 up to 10 elements, 8 up to 500, 3 for 16-bit floats (the output's or the graph's
// working dtype) and tensors under 1000 elements, 2 otherwise.
double rmse_multiplier(const at::Tensor& eager, c10::ScalarType working) {
  const int64_t n = eager.numel();
  if (n <= 10) return 10.0;
  if (n <= 500) return 8.0;
  return ir::is_16bit_float(eager.scalar_type()) || ir::is_16bit_float(working) || n < 1000 ? 3.0 : 2.0;
}

double rmse(const at::Tensor& err, const at::Tensor& mask) {
  const int64_t n = mask.sum().item<int64_t>();
  if (n == 0) return 0.0;
  return std::sqrt(at::where(mask, err * err, at::zeros_like(err)).sum().item<double>() / static_cast<double>(n));
}

// Fails `c` with `problem` at the first element of `mask`, if any.
bool fails_at(OutputComparison& c, const at::Tensor& mask, const std::string& problem) {
  if (!mask.any().item<bool>()) return false;
  c.worst_index = unravel(mask.reshape({-1}).nonzero().index({0, 0}).item<int64_t>(), mask.sizes());
  c.passed = false;
  c.problem = problem;
  return true;
}

// Eager's, compiled's and the reference's values in float64, on eager's device, and the absolute
// errors of the first two against the reference, their largest recorded in `c` (information).
struct AgainstReference {
  at::Tensor e, a, r, e_err, a_err;
};

AgainstReference against_reference(OutputComparison& c, const at::Tensor& eager, const at::Tensor& actual,
                                   const at::Tensor& reference) {
  AgainstReference d;
  d.e = eager.to(at::kDouble);
  d.a = actual.to(eager.device()).to(at::kDouble);
  d.r = reference.to(eager.device()).to(at::kDouble);
  d.a_err = (d.a - d.r).abs();
  d.e_err = (d.e - d.r).abs();
  c.max_abs_error_vs_reference = d.a_err.nan_to_num(0, 0, 0).max().item<double>();
  c.eager_max_abs_error_vs_reference = d.e_err.nan_to_num(0, 0, 0).max().item<double>();
  return d;
}

// The reference columns of an output that allclose(eager, compiled) already passed: measured for
// the table, not judged.
void measure_against_reference(OutputComparison& c, const at::Tensor& eager, const at::Tensor& actual,
                               const at::Tensor& reference) {
  const AgainstReference d = against_reference(c, eager, actual, reference);
  const at::Tensor finite = d.r.isfinite() & d.e.isfinite() & d.a.isfinite();
  c.rmse_vs_reference = rmse(d.a - d.r, finite);
  c.eager_rmse_vs_reference = rmse(d.e - d.r, finite);
}

// Judges one floating output against the float64 reference (see compare_with_eager). Fills the
// reference fields of `c` and its verdict.
void judge_against_reference(OutputComparison& c, const at::Tensor& eager, const at::Tensor& actual,
                             const at::Tensor& reference, c10::ScalarType working) {
  const AgainstReference d = against_reference(c, eager, actual, reference);
  const at::Tensor &e = d.e, &a = d.a, &r = d.r, &a_err = d.a_err, &e_err = d.e_err;
  c.has_reference = true;
  c.rmse_multiplier = rmse_multiplier(eager, working);
  // The worst element: the largest compiled error against the reference (a NaN or infinity first).
  const at::Tensor rank = at::where(a_err.isfinite(), a_err, at::full_like(a_err, std::numeric_limits<double>::infinity()));
  c.worst_index = unravel(rank.reshape({-1}).argmax().item<int64_t>(), e.sizes());

  // Where the reference itself is not finite, or eager did not produce a finite value, the RMSE
  // cannot judge: compiled must equal eager or the reference there, or be finite where eager
  // overflowed or produced NaN but the reference is finite (a result with no NaN is better).
  // The reference as the output dtype holds it: 6.7e4 is inf in fp16, where an inf is right.
  const at::Tensor r_out = reference.to(eager.device()).to(eager.scalar_type()).to(at::kDouble);
  const at::Tensor r_finite = r_out.isfinite();
  const at::Tensor e_finite = e.isfinite();
  const at::Tensor a_finite = a.isfinite();
  const at::Tensor same_as_eager = (a == e) | (a.isnan() & e.isnan());
  const at::Tensor same_as_ref = (a == r_out) | (a.isnan() & r_out.isnan());
  const at::Tensor judged = r_finite & e_finite;
  // Where eager overflowed or produced NaN and the reference is finite, summation order decides
  // (3e38 + 3e38 - 3e38 is inf or 3e38): compiled may be anything but a NaN eager does not have.
  // Where eager produced a NaN the reference does not have, eager's own float32 arithmetic
  // failed upstream, whatever the reference is: a layer norm's variance of a row holding 1e30
  // overflows, and eager's row is NaN on some kernel paths and 0 on others (rows of 256 and
  // 1024, torch 2.11 on an H200), torch.compile's 0; an op after it may turn the reference's
  // value into inf (remainder by inf). Such an element judges nothing.
  const at::Tensor eager_failed = (r_finite & ~e_finite & (~a.isnan() | e.isnan())) | (e.isnan() & ~r_out.isnan());
  const at::Tensor unjudged_ok = same_as_eager | same_as_ref | eager_failed;
  if (fails_at(c, ~judged & ~unjudged_ok, "differs from eager and the float64 result where one is not finite")) return;
  // Where both eager and the reference are finite, compiled must be finite too.
  if (fails_at(c, judged & ~a_finite, "NaN or infinity where eager and the float64 result are finite")) return;
  c.rmse_vs_reference = rmse(a - r, judged);
  c.eager_rmse_vs_reference = rmse(e - r, judged);
  const double bound = c.rmse_multiplier * c.eager_rmse_vs_reference + c.tolerance.atol / 10.0;
  const std::string m = std::to_string(static_cast<int>(c.rmse_multiplier));
  if (c.rmse_vs_reference > bound) {
    c.passed = false;
    c.problem = "RMSE against the float64 result above " + m + " x eager's";
    return;
  }
  // An outlier guard beside the RMSE, which a few wrong elements in a large tensor pass (a tail
  // a kernel missed): no element may stray from float64 further than m times eager's worst
  // element does, plus the dtype's tolerance.
  const double eager_worst = at::where(judged, e_err, at::zeros_like(e_err)).max().item<double>();
  const at::Tensor outliers =
      judged & (a_err > c.tolerance.atol + c.tolerance.rtol * r.abs() + c.rmse_multiplier * eager_worst);
  if (outliers.any().item<bool>()) {
    c.worst_index = unravel(at::where(outliers, a_err, at::zeros_like(a_err)).reshape({-1}).argmax().item<int64_t>(), e.sizes());
    c.passed = false;
    c.problem = "an element farther from the float64 result than " + m + " x eager's worst element";
    return;
  }
  c.passed = true;
  c.problem.clear();
}

// allclose(eager, compiled) with equal NaN positions: the first, cheapest verdict.
bool all_close(const at::Tensor& eager, const at::Tensor& actual, const Tolerance& tol) {
  const at::Tensor e = eager.to(at::kDouble);
  const at::Tensor a = actual.to(eager.device()).to(at::kDouble);
  return at::allclose(a, e, tol.rtol, tol.atol, /*equal_nan=*/true);
}

}  // namespace

namespace runtime {

c10::ScalarType working_dtype(const std::vector<c10::ScalarType>& dtypes) {
  if (std::find(dtypes.begin(), dtypes.end(), at::kBFloat16) != dtypes.end()) return at::kBFloat16;
  if (std::find(dtypes.begin(), dtypes.end(), at::kHalf) != dtypes.end()) return at::kHalf;
  return c10::ScalarType::Undefined;
}

ComparisonReport compare_with_reference(const c10::IValue& eager, const c10::IValue& actual, const c10::IValue& reference,
                                        const Tolerance* tolerance, c10::ScalarType working) {
  ComparisonReport r = compare_outputs(eager, actual, tolerance);
  std::vector<c10::IValue> e, a, ref;
  flatten(eager, e);
  flatten(actual, a);
  flatten(reference, ref);
  TORCHFUSE_CHECK(ref.size() == e.size(), "torchfuse: the float64 reference returned ", ref.size(), " values, eager ",
                  e.size());
  for (size_t i = 0; i < e.size(); ++i) {
    auto& c = r.outputs[i];
    if (!e[i].isTensor() || !a[i].isTensor() || !ref[i].isTensor()) continue;
    const at::Tensor et = e[i].toTensor();
    const at::Tensor at_ = a[i].toTensor();
    const at::Tensor rt = ref[i].toTensor();
    // Shapes and dtypes must match; so must the reference's shape (else it cannot judge).
    const bool comparable = et.scalar_type() == at_.scalar_type() && et.sizes() == at_.sizes() && rt.sizes() == et.sizes();
    if (!comparable || !et.is_floating_point() || et.numel() == 0) continue;
    // Outputs of a graph that computes in a 16-bit dtype take that dtype's tolerance, when looser.
    if (!tolerance && working != c10::ScalarType::Undefined && default_tolerance(working).rtol > c.tolerance.rtol) {
      c.tolerance = default_tolerance(working);
    }
    if (all_close(et, at_, c.tolerance)) {
      c.passed = true;
      c.problem.clear();
      c.has_reference = true;
      c.rmse_multiplier = rmse_multiplier(et, working);
      measure_against_reference(c, et, at_, rt);
      continue;
    }
    judge_against_reference(c, et, at_, rt, working);
  }
  return r;
}

}  // namespace runtime

ComparisonReport compare_outputs_with_reference(const c10::IValue& eager, const c10::IValue& actual,
                                                const c10::IValue& reference, const Tolerance* tolerance) {
  return runtime::compare_with_reference(eager, actual, reference, tolerance, c10::ScalarType::Undefined);
}

namespace {

bool floating_tensor(const c10::IValue& v) {
  return v.isTensor() && v.toTensor().defined() && v.toTensor().is_floating_point();
}

}  // namespace

namespace runtime {

std::string first_line_of_error(const std::string& what) {
  std::string text = what;
  for (const char* marker : {"\nRuntimeError: ", "\nNotImplementedError: ", "\nAssertionError: "}) {
    const size_t at = text.find(marker);
    if (at != std::string::npos) {
      text = text.substr(at + 1);
      break;
    }
  }
  if (text.rfind("RuntimeError: ", 0) == 0) text = text.substr(std::string("RuntimeError: ").size());
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line))
    if (line.find_first_not_of(" \t") != std::string::npos) return line;
  return "(no message)";
}

}  // namespace runtime

ComparisonReport compare_with_eager(CompiledModule& compiled, const std::vector<c10::IValue>& inputs,
                                    const Tolerance* tolerance) {
  const c10::IValue expected = compiled.forward_eager(inputs);
  const c10::IValue actual = compiled.forward(inputs);
  // The graph computes in floating point when an input, a value it makes or a tensor constant
  // (a frozen parameter: BERT's and Llama's inputs are token ids and masks) is floating.
  std::vector<c10::ScalarType> dtypes;
  std::string profile_error;
  try {
    dtypes = compiled.value_dtypes(inputs);
  } catch (const std::exception& e) {
    profile_error = e.what();
  }
  bool floating = std::any_of(dtypes.begin(), dtypes.end(), [](c10::ScalarType t) { return at::isFloatingType(t); });
  for (const auto& v : inputs) floating = floating || floating_tensor(v);
  std::vector<c10::IValue> results;
  flatten(expected, results);
  for (const auto& v : results) floating = floating || floating_tensor(v);
  if (!floating) return compare_outputs(expected, actual, tolerance);  // integers and bools: exact
  c10::IValue reference;
  try {
    reference = compiled.forward_reference(inputs);
  } catch (const std::exception& e) {
    // Judged against eager alone, with the dtype's tolerance; the report says why.
    ComparisonReport r = compare_outputs(expected, actual, tolerance);
    r.reference_note = "no float64 reference: " + runtime::first_line_of_error(e.what());
    return r;
  }
  if (!profile_error.empty()) {
    // Not expected where the reference ran: without the graph's dtypes the outputs' own dtypes
    // set the tolerance and multiplier (as compare_outputs_with_reference), and the report says so.
    ComparisonReport r = compare_outputs_with_reference(expected, actual, reference, tolerance);
    r.reference_note = "the graph's dtypes are unknown (" + runtime::first_line_of_error(profile_error) +
                       "): outputs judged by their own dtypes";
    return r;
  }
  return runtime::compare_with_reference(expected, actual, reference, tolerance, runtime::working_dtype(dtypes));
}

bool ComparisonReport::passed() const {
  for (const auto& o : outputs)
    if (!o.passed) return false;
  return true;
}

std::string ComparisonReport::to_string() const {
  const auto num = [](double v) {
    std::ostringstream s;
    s << std::setprecision(3) << v;
    return s.str();
  };
  std::ostringstream os;
  os << std::left << std::setw(10) << "output" << std::setw(6) << "dtype" << std::setw(22) << "shape" << std::setw(13)
     << "max abs err" << std::setw(13) << "max rel err" << std::setw(15) << "vs f64: comp" << std::setw(9)
     << "eager" << std::setw(22) << "rmse vs f64: comp/eag" << std::setw(18) << "tol (rtol/atol)" << "verdict\n";
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
    if (o.has_reference) os << std::setw(22) << (num(o.rmse_vs_reference) + " / " + num(o.eager_rmse_vs_reference));
    else os << std::setw(22) << "-";
    os << std::setw(18) << tol.str() << (o.passed ? "PASS" : "FAIL: " + o.problem);
    if (o.has_reference || !o.worst_index.empty()) {
      std::string idx = "[";
      for (size_t i = 0; i < o.worst_index.size(); ++i) idx += (i ? ", " : "") + std::to_string(o.worst_index[i]);
      os << " (worst element " << idx << "])";
    }
    os << "\n";
  }
  if (!reference_note.empty()) os << reference_note << "\n";
  return os.str();
}

}  // namespace torchfuse
