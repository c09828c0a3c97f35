// The graphs whose generated kernels the replay corpus (tests/replay/) keeps: every suite pattern
// at the suite's shapes, and the ops, schedules and input layouts the other tests cover (odd row
// lengths, rows long enough for clusters and shared-memory rings, middle-dim and column
// reductions, transposed, sliced and broadcast inputs, numbers, casts, several outputs).
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "tests/suite_modules.h"

namespace tftest {

struct ReplayCase {
  std::string name;
  std::string source;  // a full "def forward(self, ...):" definition
  // The inputs in a dtype (values do not matter: only dtypes, sizes and strides reach codegen).
  std::function<std::vector<c10::IValue>(c10::ScalarType)> inputs;
};
// GoogleTest prints a case by its name (test names stay stable; ctest lists them).
inline void PrintTo(const ReplayCase& c, std::ostream* os) { *os << c.name; }

namespace replay_detail {

inline at::Tensor randn(std::vector<int64_t> sizes, c10::ScalarType dtype) {
  return torch::randn(sizes).to(dtype);
}

inline ReplayCase tensors(std::string name, std::string source, std::vector<std::vector<int64_t>> shapes) {
  return {std::move(name), std::move(source), [shapes](c10::ScalarType dtype) {
            std::vector<c10::IValue> in;
            for (const auto& s : shapes) in.push_back(randn(s, dtype));
            return in;
          }};
}

inline std::string forward(const std::string& args, const std::string& body) {
  return "def forward(self, " + args + "):\n" + body;
}

}  // namespace replay_detail

inline std::vector<ReplayCase> replay_cases() {
  using replay_detail::forward;
  using replay_detail::randn;
  using replay_detail::tensors;
  std::vector<ReplayCase> c;
  // The suite at its shapes (../shared/bench/SUITE.md).
  auto suite = [&](const std::string& name, const std::string& pattern, std::vector<std::vector<int64_t>> shapes) {
    const int64_t row = shapes[0].back();
    c.push_back(tensors(name, with_row_length(suite_pattern(pattern).source, row), std::move(shapes)));
  };
  suite("gelu_tanh", "gelu_tanh", {{8192, 8192}});
  suite("bias_gelu_erf", "bias_gelu_erf", {{8192, 8192}, {8192}});
  suite("softmax_manual", "softmax_manual", {{16384, 4096}});
  suite("softmax_long_rows", "softmax_manual", {{1024, 65536}});
  suite("layernorm_manual", "layernorm_manual", {{16384, 4096}, {4096}, {4096}});
  suite("rmsnorm_manual", "rmsnorm_manual", {{16384, 4096}, {4096}});
  suite("swiglu", "swiglu", {{8192, 8192}, {8192, 8192}});
  suite("add_layernorm", "add_layernorm", {{16384, 4096}, {16384, 4096}, {4096}, {4096}});
  suite("attn_softmax_mask", "attn_softmax_mask", {{8, 16, 1024, 1024}, {1, 1, 1024, 1024}});
  suite("col_sum", "col_sum", {{16384, 4096}});
  suite("logsumexp_rows", "logsumexp_rows", {{16384, 4096}});
  suite("mean_sq_full", "mean_sq_full", {{8192, 8192}});

  // Pointwise ops and layouts.
  c.push_back(tensors("unary_chain",
                      forward("x", "    a = torch.sigmoid(x) + torch.tanh(x) * torch.exp(-x.abs())\n"
                                   "    b = torch.sqrt(x.abs() + 1.0) - torch.rsqrt(x * x + 2.0) + torch.log1p(x.abs())\n"
                                   "    return torch.relu(a) * torch.reciprocal(b + 3.0) + torch.silu(x) - torch.neg(x).pow(2)\n"),
                      {{256, 1000}}));
  c.push_back(tensors("gelu_modes",
                      forward("x", "    return torch.gelu(x) + torch.gelu(x, approximate='tanh')\n"),
                      {{64, 768}}));
  c.push_back(tensors("where_clamp_compare",
                      forward("x, y", "    z = torch.where(x > y, x, 0.1 * y)\n"
                                      "    return torch.clamp(z, -1.0, 2.0) + torch.maximum(x, y) * (x <= 0.5).float()\n"),
                      {{128, 96}, {128, 96}}));
  c.push_back(tensors("broadcast_inner_and_outer", forward("x, r, b", "    return (x - r) * b + 1.0\n"),
                      {{64, 96}, {64, 1}, {96}}));
  c.push_back(tensors("broadcast_3d", forward("x, b", "    return torch.tanh(x * b) + x\n"), {{4, 128, 768}, {1, 128, 1}}));
  c.push_back({"number_input", forward("x, s: float", "    return x * s + torch.sigmoid(x) * 2.5\n"),
               [](c10::ScalarType d) { return std::vector<c10::IValue>{randn({64, 96}, d), 0.75}; }});
  c.push_back({"transposed_input", forward("x, y", "    return torch.relu(x + y) * 2.0\n"),
               [](c10::ScalarType d) { return std::vector<c10::IValue>{randn({96, 64}, d).t(), randn({64, 96}, d)}; }});
  c.push_back({"sliced_input", forward("x, y", "    return x * torch.sigmoid(y)\n"),
               [](c10::ScalarType d) {
                 return std::vector<c10::IValue>{randn({64, 128}, d).narrow(1, 16, 96), randn({64, 96}, d)};
               }});
  // cat: RoPE's rotate_half on [B, H, T, D] (the cat along the innermost dim), and a cat along
  // a middle dim.
  c.push_back(tensors("rope_cat",
                      forward("q, c, s", "    q1, q2 = q.chunk(2, -1)\n    return q * c + torch.cat((-q2, q1), dim=-1) * s\n"),
                      {{2, 8, 16, 128}, {16, 128}, {16, 128}}));
  c.push_back(tensors("cat_middle", forward("x, y", "    return torch.cat((torch.relu(x), y * 2.0), 1) + 1.0\n"),
                      {{4, 24, 40}, {4, 8, 40}}));
  c.push_back({"channels_last", forward("x, y", "    return torch.silu(x) + y\n"),
               [](c10::ScalarType d) {
                 auto x = randn({2, 16, 8, 8}, d).contiguous(at::MemoryFormat::ChannelsLast);
                 return std::vector<c10::IValue>{x, randn({2, 16, 8, 8}, d)};
               }});
  c.push_back(tensors("casts", forward("x", "    h = (x.float() * 2.0).to(15)\n    return h.float() + x.float().sigmoid()\n"),
                      {{64, 96}}));
  c.push_back(tensors("two_outputs", forward("x, y", "    h = x * y + 1.0\n    return (h, torch.tanh(h) - y)\n"),
                      {{512, 96}, {512, 96}}));

  // Row reductions.
  c.push_back(tensors("softmax_odd_rows", forward("x", "    return torch.softmax(x, dim=-1)\n"), {{300, 1000}}));
  c.push_back(tensors("softmax_vocab", forward("x", "    return torch.softmax(x, dim=-1)\n"), {{64, 50257}}));
  c.push_back(tensors("log_softmax", forward("x", "    return torch.log_softmax(x, dim=1)\n"), {{512, 768}}));
  c.push_back(tensors("layer_norm_3d", forward("x, w, b", "    return torch.layer_norm(x, [768], w, b, 1e-5)\n"),
                      {{4, 128, 768}, {768}, {768}}));
  // Rows over [C / G, H * W]: the per-channel weights keep the two reduced dims apart.
  c.push_back(tensors("group_norm_silu",
                      forward("x, w, b", "    return torch.silu(torch.group_norm(x, 8, w, b, 1e-5, True))\n"),
                      {{2, 64, 16, 16}, {64}, {64}}));
  c.push_back(tensors("layer_norm_no_affine", forward("x", "    return torch.layer_norm(x, [1000], None, None, 1e-6)\n"),
                      {{96, 1000}}));
  c.push_back(tensors("rms_norm_long_rows",
                      forward("x, w", "    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w\n"),
                      {{64, 16384}, {16384}}));
  c.push_back(tensors("var_std_rows",
                      forward("x", "    return (torch.var(x, dim=-1, keepdim=True) + torch.std(x, dim=-1, keepdim=True)) * x\n"),
                      {{256, 1024}}));
  c.push_back(tensors("amax_amin_rows", forward("x", "    return (x.amax(-1) - x.amin(-1), x.sum(-1))\n"), {{1000, 333}}));
  c.push_back(tensors("logsumexp_3d", forward("x", "    return torch.logsumexp(x, dim=-1)\n"), {{8, 64, 512}}));
  c.push_back(tensors("row_mask_softmax_3d", forward("s, mask", "    return torch.softmax(s + mask, dim=-1)\n"),
                      {{4, 12, 128, 128}, {4, 1, 1, 128}}));
  // Scans: short rows (a warp's team, shuffles) and long ones after a softmax (a block's team).
  c.push_back(tensors("cumsum_short_rows", forward("x", "    return torch.cumsum(torch.relu(x), -1) * 0.5\n"), {{1024, 100}}));
  c.push_back(tensors("softmax_cumsum", forward("x", "    return torch.softmax(x, -1).cumsum(-1)\n"), {{64, 8192}}));
  // Rows too long for registers: a block's looped steps.
  c.push_back(tensors("softmax_cumsum_vocab", forward("x", "    return torch.softmax(x * 1.5, -1).cumsum(-1)\n"), {{8, 50257}}));
  c.push_back({"row_transposed_input", forward("x", "    return torch.softmax(x * 2.0, dim=-1)\n"),
               [](c10::ScalarType d) { return std::vector<c10::IValue>{randn({512, 256}, d).t()}; }});

  // Column, middle-dim and full reductions.
  c.push_back(tensors("column_mean_broadcast", forward("x", "    return x - x.mean(0, keepdim=True)\n"), {{4096, 96}}));
  // Column passes over long columns: rows split over blocks meeting at barriers.
  c.push_back(tensors("column_softmax_tall", forward("x", "    return torch.softmax(x * 0.5, 0)\n"), {{16384, 768}}));
  c.push_back(tensors("middle_dim_sum", forward("x", "    return torch.relu(x).sum(1)\n"), {{8, 512, 64}}));
  c.push_back(tensors("column_max_odd", forward("x", "    return (x * 3.0).amax(0)\n"), {{1000, 77}}));
  c.push_back({"full_sum_transposed", forward("x", "    return (x * x + 1.0).sum()\n"),
               [](c10::ScalarType d) { return std::vector<c10::IValue>{randn({1024, 768}, d).t()}; }});
  c.push_back(tensors("full_max_and_mean", forward("x", "    return (torch.abs(x).amax(), x.mean())\n"), {{100, 1000}}));
  return c;
}

}  // namespace tftest
