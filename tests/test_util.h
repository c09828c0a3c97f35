// Helpers shared by the tests: modules from TorchScript source, kernel counting, ordered
// substring checks that print the whole text on failure.
#pragma once

#include <gtest/gtest.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/cuda.h>
#include <torch/jit.h>
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

// A module holding a norm layer's buffers w, b, rm (a running mean) and rv (a running variance,
// positive) of `channels` entries made with `opts`, whose forward is `source`.
inline torch::jit::Module norm_layer_module(const std::string& source, int64_t channels, const torch::TensorOptions& opts) {
  torch::jit::Module m("NormModule");
  m.register_buffer("w", (1.0 + 0.5 * torch::randn({channels})).to(opts));
  m.register_buffer("b", torch::randn({channels}).to(opts));
  m.register_buffer("rm", torch::randn({channels}).to(opts));
  m.register_buffer("rv", (0.2 + torch::rand({channels}) * 2.0).to(opts));
  m.define(source);
  return m;
}

// A module with forward(self, <args>) returning `expr`.
inline torch::jit::Module module_returning(const std::string& args, const std::string& expr) {
  return module_from("def forward(self, " + args + "):\n    return " + expr + "\n");
}

// The graph of a function as a Python user's torch.jit.script(fn).graph holds it: "swiglu" calls
// an F.silu-like helper with a branch on a constant flag, "softmax" sums over prim::ListConstruct
// dims. compile_graph copies the graph it is given.
inline std::shared_ptr<torch::jit::Graph> scripted_function_graph(const std::string& name) {
  static const auto unit = torch::jit::compile(R"JIT(
def silu_like(input, inplace: bool = False):
    if inplace:
        return torch.silu_(input)
    return torch.silu(input)

def swiglu(a, b):
    return silu_like(a) * b

def softmax(x):
    m = x.max(dim=1, keepdim=True)[0]
    e = torch.exp(x - m)
    return e / e.sum(dim=1, keepdim=True)
)JIT");
  return torch::jit::toGraphFunction(unit->get_function(name)).graph();
}

// `text` with every `from` replaced by `to`.
inline std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) return text;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// The lines, one per line: refusal lists in failure messages.
inline std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// Some line contains `what` (a refusal or a rewrite in explain()'s lists).
inline bool any_line_has(const std::vector<std::string>& lines, const std::string& what) {
  for (const std::string& l : lines)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

// Each tensor of a module's output (a tensor, a tuple or list of them, a dict's values), in order;
// any other output fails the test.
inline std::vector<at::Tensor> output_tensors(const c10::IValue& v) {
  if (v.isTensor()) return {v.toTensor()};
  std::vector<at::Tensor> out;
  if (v.isTuple()) {
    for (const c10::IValue& e : v.toTupleRef().elements()) out.push_back(e.toTensor());
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector()) out.push_back(t);
  } else if (v.isGenericDict()) {
    for (const auto& kv : v.toGenericDict()) out.push_back(kv.value().toTensor());
  } else {
    ADD_FAILURE() << "an output of kind " << v.tagKind() << " holds no tensors to compare";
  }
  return out;
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

// The last argument of the first call of `op` in printed IR ("%7"), or "" when there is none.
inline std::string last_call_argument(const std::string& ir, const std::string& op) {
  const size_t call = ir.find(op + "(");
  if (call == std::string::npos) return "";
  const size_t close = ir.find(')', call);
  const size_t comma = ir.rfind(", ", close);
  return ir.substr(comma + 2, close - comma - 2);
}

// The value of the constant named `name` of TorchScript type `type` in printed IR ("8" from
// "%7 : int = prim::Constant[value=8]()"), or "" when there is none.
inline std::string constant_value(const std::string& ir, const std::string& name, const std::string& type) {
  const std::string head = name + " : " + type + " = prim::Constant[value=";
  const size_t at = ir.find(head);
  if (at == std::string::npos) return "";
  const size_t from = at + head.size();
  return ir.substr(from, ir.find(']', from) - from);
}

inline bool have_gpu() { return torch::cuda::is_available() && torchfuse::cuda_available(); }

inline int fusion_nodes(const std::string& graph_text) { return count_occurrences(graph_text, "torchfuse::FusionGroup"); }

inline torchfuse::CompileOptions quiet_options(int min_group_size = 2) {
  torchfuse::CompileOptions o;
  o.min_group_size = min_group_size;
  return o;
}

// The message of the torchfuse::Error `fn` throws ("" when it throws none).
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const torchfuse::Error& e) {
    return e.what();
  }
  return "";
}

// Two fusion groups separated by a matmul: group 0 (mul -> tanh), kernel tf_mul_tanh_<hash>, and
// group 1 (add -> relu -> mul), kernel tf_add_relu_mul_<hash>.
inline torch::jit::Module groups_around_matmul() {
  return module_from(R"JIT(
def forward(self, x, w):
    a = torch.tanh(x * 2.0)
    m = torch.matmul(a, w)
    return torch.relu(m + 1.0) * a
)JIT");
}

// The torchfuse::Error `fn` throws names every one of `needles`, in order.
template <typename Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& needles) {
  const std::string message = error_of(fn);
  ASSERT_FALSE(message.empty()) << "no torchfuse::Error; expected one naming '" << needles.at(0) << "'";
  EXPECT_TRUE(contains_in_order(message, needles));
}

// Container inputs, as a caller passes them to forward().
inline c10::IValue list(std::vector<at::Tensor> ts) { return c10::List<at::Tensor>(std::move(ts)); }
inline c10::IValue tuple(std::vector<c10::IValue> vs) { return c10::ivalue::Tuple::create(std::move(vs)); }
inline c10::IValue dict(const std::vector<std::pair<std::string, at::Tensor>>& entries) {
  c10::Dict<std::string, at::Tensor> d;
  for (const auto& [k, v] : entries) d.insert(k, v);
  return d;
}

}  // namespace tftest

#define REQUIRE_GPU() \
  if (!tftest::have_gpu()) GTEST_SKIP() << "no CUDA device"
