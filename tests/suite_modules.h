// The suite's patterns (../shared/bench/SUITE.md) as C++-defined modules, for the tests.
// Module::define resolves torch.* builtins only: F.silu is written torch.silu (the same aten::silu).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace tftest {

struct SuitePattern {
  std::string name;
  std::string source;
  int kernels;  // kernels torchfuse launches per call
};

inline const std::vector<SuitePattern>& suite_patterns() {
  static const std::vector<SuitePattern> p = {
      {"gelu_tanh", "def forward(self, x):\n    return 0.5 * x * (1 + torch.tanh(0.79788456 * (x + 0.044715 * x * x * x)))\n", 1},
      {"bias_gelu_erf", "def forward(self, x, b):\n    y = x + b\n    return y * 0.5 * (1.0 + torch.erf(y * 0.7071067811865476))\n", 1},
      {"softmax_manual",
       "def forward(self, x):\n    m = x.max(dim=1, keepdim=True)[0]\n    e = torch.exp(x - m)\n    return e / e.sum(dim=1, keepdim=True)\n", 1},
      {"layernorm_manual",
       "def forward(self, x, w, b):\n    mu = x.mean(-1, keepdim=True)\n    d = x - mu\n    var = (d * d).mean(-1, keepdim=True)\n"
       "    return d * torch.rsqrt(var + 1e-5) * w + b\n", 1},
      {"rmsnorm_manual",
       "def forward(self, x, w):\n    xf = x.float()\n    r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)\n    return (xf * r).to(x.dtype) * w\n", 1},
      {"swiglu", "def forward(self, a, b):\n    return torch.silu(a) * b\n", 1},
      {"add_layernorm",
       "def forward(self, x, r, w, b):\n    h = x + r\n    return (h, torch.layer_norm(h, [{C}], w, b, 1e-5))\n", 1},
      {"attn_softmax_mask", "def forward(self, s, mask):\n    return torch.softmax(s * 0.125 + mask, dim=-1)\n", 1},
      {"col_sum", "def forward(self, x):\n    return x.sum(dim=0)\n", 1},
      {"logsumexp_rows", "def forward(self, x):\n    return torch.logsumexp(x, dim=1)\n", 1},
      {"mean_sq_full", "def forward(self, x):\n    return (x * x).mean()\n", 1},
  };
  return p;
}

// The source with {C} replaced by the row length (normalized_shape must be a literal).
inline std::string with_row_length(std::string source, int64_t c) {
  const auto pos = source.find("{C}");
  if (pos != std::string::npos) source.replace(pos, 3, std::to_string(c));
  return source;
}

inline const SuitePattern& suite_pattern(const std::string& name) {
  for (const auto& p : suite_patterns())
    if (p.name == name) return p;
  throw std::invalid_argument("no suite pattern " + name);
}

// Small random CPU inputs for a pattern (rows of 96; add_layernorm's {C} is 96).
inline std::vector<c10::IValue> suite_small_inputs(const std::string& name) {
  auto r = [](std::vector<int64_t> s) { return torch::randn(s); };
  if (name == "bias_gelu_erf") return {r({64, 96}), r({96})};
  if (name == "layernorm_manual") return {r({32, 96}), r({96}), r({96})};
  if (name == "rmsnorm_manual") return {r({32, 96}), r({96})};
  if (name == "swiglu") return {r({64, 96}), r({64, 96})};
  if (name == "add_layernorm") return {r({32, 96}), r({32, 96}), r({96}), r({96})};
  if (name == "attn_softmax_mask") return {r({2, 4, 16, 32}), r({1, 1, 16, 32})};
  return {r({64, 96})};
}

}  // namespace tftest
