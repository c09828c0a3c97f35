// Helpers shared by the tests: modules from TorchScript source, kernel counting, ordered
// substring checks that print the whole text on failure.
#pragma once

#include <gtest/gtest.h>
#include <torch/script.h>

#include <string>
#include <vector>

#include "torchfuse/torchfuse.h"

namespace tftest {

// A module whose forward is `source` (a full "def forward(self, ...):" definition).
inline torch::jit::Module module_from(const std::string& source) {
  torch::jit::Module m("TestModule");
  m.define(source);
  return m;
}

// A module with forward(self, <args>) returning `expr`.
inline torch::jit::Module module_returning(const std::string& args, const std::string& expr) {
  return module_from("def forward(self, " + args + "):\n    return " + expr + "\n");
}

inline int count_occurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + needle.size())) ++n;
  return n;
}

// Each needle appears, in this order (FileCheck-style CHECK lines).
inline ::testing::AssertionResult contains_in_order(const std::string& text, const std::vector<std::string>& needles) {
  size_t pos = 0;
  for (const auto& n : needles) {
    const size_t found = text.find(n, pos);
    if (found == std::string::npos) {
      return ::testing::AssertionFailure() << "expected '" << n << "' (in order) in:\n" << text;
    }
    pos = found + n.size();
  }
  return ::testing::AssertionSuccess();
}

inline int fusion_nodes(const std::string& graph_text) { return count_occurrences(graph_text, "torchfuse::FusionGroup"); }

inline torchfuse::CompileOptions quiet_options(int min_group_size = 2) {
  torchfuse::CompileOptions o;
  o.min_group_size = min_group_size;
  return o;
}

}  // namespace tftest

namespace tftest {

inline void flatten_tensors(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) out.push_back(v.toTensor());
  else if (v.isTuple()) for (const auto& e : v.toTupleRef().elements()) flatten_tensors(e, out);
  else if (v.isList()) for (const auto& e : v.toListRef()) flatten_tensors(e, out);
}

// Floating tensors upcast to float64: inputs for a high-precision reference run.
inline std::vector<c10::IValue> upcast(const std::vector<c10::IValue>& in) {
  std::vector<c10::IValue> out;
  for (const auto& v : in) {
    if (v.isTensor() && v.toTensor().is_floating_point()) out.emplace_back(v.toTensor().to(at::kDouble));
    else out.push_back(v);
  }
  return out;
}

// Fused and eager outputs both approximate the float64 reference; eager rounds every
// intermediate to the storage dtype, the fused kernel keeps fp32. The fused result passes where
//   |fused - ref| <= atol + rtol * |ref| + 2 * |eager - ref|
// (never further from the reference than eager's own error allows), NaN exactly where eager has NaN.
inline ::testing::AssertionResult close_to_reference(const c10::IValue& eager, const c10::IValue& fused,
                                                     const c10::IValue& reference, const torchfuse::Tolerance* tol = nullptr) {
  std::vector<at::Tensor> e, a, r;
  flatten_tensors(eager, e);
  flatten_tensors(fused, a);
  flatten_tensors(reference, r);
  if (e.size() != a.size() || e.size() != r.size()) return ::testing::AssertionFailure() << "output counts differ";
  for (size_t i = 0; i < e.size(); ++i) {
    if (e[i].scalar_type() != a[i].scalar_type() || e[i].sizes() != a[i].sizes()) {
      return ::testing::AssertionFailure() << "output " << i << ": dtype or shape differs from eager";
    }
    if (e[i].numel() == 0) continue;
    const auto t = tol ? *tol : torchfuse::default_tolerance(e[i].scalar_type());
    const at::Tensor ed = e[i].to(at::kDouble), ad = a[i].to(at::kDouble), rd = r[i].to(at::kDouble).to(ed.device());
    if (!at::equal(ed.isnan(), ad.isnan())) return ::testing::AssertionFailure() << "output " << i << ": NaN positions differ";
    const at::Tensor same = (ed == ad) | ed.isnan();
    const at::Tensor err_f = at::where(same, at::zeros_like(ed), (ad - rd).abs());
    const at::Tensor err_e = (ed - rd).abs().nan_to_num(0, 0, 0);
    const at::Tensor bound = t.atol + t.rtol * rd.abs().nan_to_num(0, 0, 0) + 2 * err_e;
    const at::Tensor bad = (err_f > bound) | (err_f.isnan() & ~same);
    if (bad.any().item<bool>()) {
      const int64_t idx = bad.flatten().nonzero()[0].item<int64_t>();
      return ::testing::AssertionFailure()
             << "output " << i << " (" << e[i].scalar_type() << "): " << bad.sum().item<int64_t>() << " element(s) off; first at "
             << idx << ": fused " << ad.flatten()[idx].item<double>() << ", eager " << ed.flatten()[idx].item<double>()
             << ", float64 " << rd.flatten()[idx].item<double>() << " (rtol " << t.rtol << ", atol " << t.atol << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace tftest
