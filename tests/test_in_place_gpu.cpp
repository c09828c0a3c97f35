// Outputs in place on the GPU (runtime/in_place_outputs.h): a GEMM's output that dies at the fused
// group reading it lends the group's output its memory. Every call gets fresh inputs and is
// checked against eager (float64 reference) in every dtype, on the planned path and on recorded
// launches, under CUDA graphs and with the option off; the graph's own inputs must come back
// unchanged, and the stats say whether outputs were written in place.
#include <functional>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "tests/gpu_compare.h"
#include "tests/test_util.h"

namespace {

using Inputs = std::vector<c10::IValue>;

at::Tensor cuda(const std::vector<int64_t>& s, c10::ScalarType d) {
  return (torch::randn(s, torch::kDouble) * 0.5).to(d).to(torch::kCUDA);
}

struct Case {
  std::string name;
  std::string source;
  std::function<Inputs(c10::ScalarType)> inputs;
  bool in_place;  // some output takes the intermediate's memory
};

std::vector<Case> cases() {
  const auto ln = [](int64_t rows, int64_t k, int64_t cols) {
    return [=](c10::ScalarType d) {
      return Inputs{cuda({rows, k}, d), cuda({k, cols}, d), cuda({rows, cols}, d), cuda({cols}, d), cuda({cols}, d)};
    };
  };
  return {
      {"pointwise after a GEMM", "def forward(self, x, w, y):\n    h = torch.mm(x, w)\n    return torch.sigmoid(h) * y + h\n",
       [](c10::ScalarType d) { return Inputs{cuda({64, 256}, d), cuda({256, 512}, d), cuda({64, 512}, d)}; }, true},
      {"add + layer norm after a GEMM",
       "def forward(self, x, w, r, g, b):\n    h = torch.mm(x, w)\n    return torch.layer_norm(h + r, [h.size(-1)], g, b, 1e-5)\n",
       ln(128, 256, 768), true},
      // Rows too long for registers: passes read the row again from memory before the last one
      // writes over it.
      {"add + layer norm over long rows",
       "def forward(self, x, w, r, g, b):\n    h = torch.mm(x, w)\n    return torch.layer_norm(h + r, [h.size(-1)], g, b, 1e-5)\n",
       ln(16, 64, 65536), true},
      // The sum is written by the first pass into memory of its own; the norm takes h's.
      {"add + layer norm returning the sum",
       "def forward(self, x, w, r, g, b):\n    s = torch.mm(x, w) + r\n    return torch.layer_norm(s, [s.size(-1)], g, b, 1e-5), s\n",
       ln(128, 256, 768), true},
      {"softmax after bmm", "def forward(self, q, k):\n    s = torch.bmm(q, k)\n    return torch.softmax(s * 0.125, -1)\n",
       [](c10::ScalarType d) { return Inputs{cuda({8, 64, 32}, d), cuda({8, 32, 128}, d)}; }, true},
      // The intermediate is returned as well: nothing is written over it.
      {"the intermediate returned too", "def forward(self, x, w):\n    h = torch.mm(x, w)\n    return torch.sigmoid(h) * 2.0 + h, h\n",
       [](c10::ScalarType d) { return Inputs{cuda({64, 256}, d), cuda({256, 512}, d)}; }, false},
  };
}

// Calls with fresh inputs, each against eager, the inputs unchanged after it: the outputs written
// in place.
int64_t check(const Case& c, const torchfuse::CompileOptions& options, c10::ScalarType dtype, int calls) {
  auto compiled = torchfuse::compile(tftest::module_from(c.source), options);
  for (int call = 0; call < calls; ++call) {
    const Inputs in = c.inputs(dtype);
    std::vector<at::Tensor> before;
    for (const auto& v : in) before.push_back(v.toTensor().clone());
    SCOPED_TRACE(c.name + ", " + c10::toString(dtype) + ", call " + std::to_string(call));
    tftest::expect_matches_eager(compiled, in);
    for (size_t k = 0; k < in.size(); ++k) EXPECT_TRUE(torch::equal(in[k].toTensor(), before[k])) << "input " << k;
  }
  torch::cuda::synchronize();
  return compiled.stats().outputs_in_place;
}

TEST(InPlaceOutputsGpu, DyingIntermediatesLendTheirMemoryAndMatchEager) {
  REQUIRE_GPU();
  for (const Case& c : cases()) {
    for (c10::ScalarType dtype : {torch::kFloat, torch::kHalf, torch::kBFloat16}) {
      for (bool record : {true, false}) {
        torchfuse::CompileOptions o;
        o.outputs_in_place = true;
        o.record_launches = record;
        // A call that tries to record its launch runs without (its pointer words must tell
        // inputs from outputs); the long rows' clustered launches are never recorded, and a
        // group stops trying after eight refusals.
        const int64_t n = check(c, o, dtype, record ? 10 : 4);
        if (c.in_place) {
          EXPECT_GT(n, 0) << c.name << " " << c10::toString(dtype) << " record " << record;
        } else {
          EXPECT_EQ(n, 0) << c.name;
        }
      }
    }
  }
}

TEST(InPlaceOutputsGpu, UnderCudaGraphsAndSwitchedOff) {
  REQUIRE_GPU();
  for (const Case& c : cases()) {
    torchfuse::CompileOptions graphs;
    graphs.outputs_in_place = true;
    graphs.cuda_graphs = true;
    check(c, graphs, torch::kBFloat16, 6);
    // The default: off.
    torchfuse::CompileOptions off;
    EXPECT_EQ(check(c, off, torch::kFloat, 3), 0) << c.name;
  }
}

}  // namespace
