// GPU tests for reductions: every reduction op over last, first, middle, several and all dims,
// with and without keepdim, in fp32/fp16/bf16; the suite's patterns; row lengths from 1 to
// 262144; 3-D/4-D, transposed and sliced inputs; -inf rows and NaN; determinism.
#include <torch/cuda.h>
#include <torch/torch.h>

#include <limits>

#include "codegen/tuning.h"
#include "runtime/process_tuning.h"
#include "tests/suite_modules.h"
#include "tests/test_util.h"

using tftest::module_from;
using tftest::module_returning;

namespace {

// Reductions add in another order than eager: fp32 gets a tolerance for sums of thousands of terms.
torchfuse::Tolerance reduction_tolerance(c10::ScalarType t) {
  if (t == c10::kFloat) return {1e-4, 1e-4};
  return torchfuse::default_tolerance(t);
}

torch::Tensor rnd(std::vector<int64_t> s, c10::ScalarType t) { return torch::randn(s, torch::kCUDA).to(t); }

// Compiles on one draw, checks a fresh draw: fused (kernels > 0 launched, or exactly `kernels`),
// poisoned outputs all written, values within tolerance of eager.
void expect_matches_eager(const torch::jit::Module& m, const std::function<std::vector<c10::IValue>()>& make,
                          const std::string& label, int kernels = -1) {
  SCOPED_TRACE(label);
  auto o = tftest::quiet_options();
  o.debug_poison_outputs = true;
  auto c = torchfuse::compile(m, o);
  c.forward(make());
  const auto in = make();
  const auto expected = c.forward_eager(in);
  const auto before = c.stats();
  const auto actual = c.forward(in);
  torch::cuda::synchronize();
  const int64_t launched = c.stats().kernel_launches - before.kernel_launches;
  if (kernels >= 0) EXPECT_EQ(launched, kernels) << c.graph_for(in);
  else EXPECT_GT(launched, 0) << c.graph_for(in);
  c10::ScalarType dtype = c10::kFloat;
  for (const auto& v : in)
    if (v.isTensor()) dtype = v.toTensor().scalar_type();
  const auto tol = reduction_tolerance(dtype);
  const auto report = torchfuse::compare_outputs_with_reference(expected, actual, c.forward_reference(in), &tol);
  EXPECT_TRUE(report.passed()) << report.to_string() << c.graph_for(in);
}

const c10::ScalarType kDtypes[] = {c10::kFloat, c10::kHalf, c10::kBFloat16};

// An add + layer norm returning the sum too: an element output beside the normalized one.
torch::jit::Module add_layer_norm_with_sum() {
  return module_from(
      "def forward(self, x, r, w, b):\n    h = x + r\n    return torch.layer_norm(h, [h.size(-1)], w, b, 1e-5), h\n");
}

// `add_ln` (add_layer_norm_with_sum), then each one-input row op of `ops` (name, module) over
// rows x c of `dtype`, against eager.
void expect_rows_match_eager(const torch::jit::Module& add_ln, const std::vector<std::pair<std::string, torch::jit::Module>>& ops,
                             int64_t rows, int64_t c, c10::ScalarType dtype, const std::string& tag) {
  const std::string shape = std::to_string(rows) + "x" + std::to_string(c) + " " + tag;
  expect_matches_eager(add_ln, [&] {
    return std::vector<c10::IValue>{rnd({rows, c}, dtype), rnd({rows, c}, dtype), rnd({c}, dtype), rnd({c}, dtype)};
  }, "add + layer norm " + shape, 1);
  for (const auto& [name, m] : ops) {
    expect_matches_eager(m, [&] { return std::vector<c10::IValue>{rnd({rows, c}, dtype)}; }, name + " " + shape, 1);
  }
}

TEST(GpuReductions, EveryOpOverEveryKindOfDims) {
  REQUIRE_GPU();
  const char* exprs[] = {
      // last, first, middle, several, all dims; with and without keepdim
      "x.sum(-1) * 2.0", "x.sum(0, keepdim=True) + 1.0", "x.sum(1) - 1.0", "x.sum([1, 2]) * 0.5", "x.sum() + 1.0",
      "x.mean(-1, keepdim=True) * x", "x.mean(0) * 2.0", "x.mean(1, keepdim=True) + 1.0", "x.mean([0, 1]) + 1.0",
      "x.mean() * 3.0", "x.amax(-1) * 2.0", "x.amax(0, keepdim=True) + 1.0", "x.amax(1) - 1.0", "x.amin(-1) * 2.0",
      "x.amin([1, 2]) + 1.0", "torch.max(x) * 1.0", "torch.min(x) + 1.0", "x.max(dim=2)[0] * 2.0",
      "x.min(dim=0, keepdim=True)[0] + 1.0", "x.var(-1) * 1.0", "x.var(-1, keepdim=True) + x",
      "x.std(-1, unbiased=False) * 2.0", "torch.var(x, [1, 2], correction=0)", "torch.std(x, -1, keepdim=True) * x",
      "torch.logsumexp(x, -1) * 1.0", "torch.logsumexp(x, 2, keepdim=True) - x", "torch.softmax(x, -1)",
      "torch.softmax(x * 2.0, 2)", "torch.log_softmax(x, -1)", "torch.layer_norm(x, [40])",
      "torch.layer_norm(x, [24, 40], None, None, 1e-6)", "torch.norm(x) * 1.0", "torch.linalg_vector_norm(x, 2, [-1])",
      "torch.norm(x, 2, [2], True) + x",
  };
  for (auto dtype : kDtypes) {
    for (const char* e : exprs) {
      expect_matches_eager(module_returning("x", e), [&] { return std::vector<c10::IValue>{rnd({6, 24, 40}, dtype)}; },
                           std::string(e) + " " + c10::toString(dtype));
    }
  }
}

// Column groups of several passes (generate_column_normalization): softmax, log_softmax, mean/var
// normalizations and full-size epilogues over leading and middle dims, one kernel each, at inner
// sizes that do and do not fill the 32 columns of a tile, long reduced dims, transposed and
// sliced inputs. (Few columns over long rows split them over blocks: SplitColumnPassesMatchEager.)
TEST(GpuReductions, MultiPassColumnsMatchEager) {
  REQUIRE_GPU();
  const std::vector<std::pair<const char*, std::vector<int64_t>>> cases = {
      {"torch.softmax(x, 1)", {6, 300, 40}},
      {"torch.softmax(x * 0.5, 0)", {1000, 65}},
      {"torch.log_softmax(x, 0)", {77, 3, 33}},
      {"x - x.mean(0, keepdim=True)", {129, 31}},
      {"(x - x.mean(1, keepdim=True)) * torch.rsqrt(x.var(1, keepdim=True, unbiased=False) + 1e-5)", {4, 257, 96}},
      {"torch.logsumexp(x, 1, keepdim=True) - x", {5, 70, 64}},
      {"torch.softmax(x, 1)", {2, 2000, 7}},
      {"torch.softmax(x, 1)", {2, 4099, 4096}},
  };
  for (auto dtype : kDtypes) {
    for (const auto& [expr, shape] : cases) {
      const std::string tag = std::string(expr) + " " + ::testing::PrintToString(shape) + " " + c10::toString(dtype);
      expect_matches_eager(module_returning("x", expr), [&] { return std::vector<c10::IValue>{rnd(shape, dtype)}; }, tag, 1);
    }
    // A transposed input (the reduced dim is the contiguous one) and a sliced one.
    expect_matches_eager(module_returning("x", "torch.softmax(x, 0)"),
                         [&] { return std::vector<c10::IValue>{rnd({96, 200}, dtype).t()}; },
                         std::string("softmax of a transposed input ") + c10::toString(dtype), 1);
    expect_matches_eager(module_returning("x", "torch.softmax(x, 1)"),
                         [&] { return std::vector<c10::IValue>{rnd({8, 100, 90}, dtype).narrow(2, 3, 80)}; },
                         std::string("softmax of a sliced input ") + c10::toString(dtype), 1);
  }
}

// softmax(x * 2, 0) on f32 `shape` under CUDA graphs (one warm-up call), five calls with fresh
// inputs, each against eager and float64: one capture, three replays, nothing refused.
void expect_split_softmax_replays_match(const std::vector<int64_t>& shape) {
  auto o = tftest::quiet_options();
  o.cuda_graphs = true;
  o.cuda_graph_warmup_calls = 1;
  auto c = torchfuse::compile(module_returning("x", "torch.softmax(x * 2.0, 0)"), o);
  for (int i = 0; i < 5; ++i) {
    const std::vector<c10::IValue> in = {rnd(shape, c10::kFloat)};
    const c10::IValue got = c.forward(in);
    const auto report = torchfuse::compare_outputs_with_reference(c.forward_eager(in), got, c.forward_reference(in));
    EXPECT_TRUE(report.passed()) << "call " << i << "\n" << report.to_string();
  }
  EXPECT_EQ(c.stats().cuda_graph_captures, 1);
  EXPECT_EQ(c.stats().cuda_graph_replays, 3);
  EXPECT_TRUE(c.stats().cuda_graph_refusals.empty()) << ::testing::PrintToString(c.stats().cuda_graph_refusals);
}

// Column passes whose tiles' rows split over blocks meeting at a barrier between passes
// (choose_column_pass_split): looped and cached splits, several rounds (softmax, a mean/var
// normalization), odd sizes that leave the last block of a tile short or empty, an outer dim,
// a transposed input, several blocks per multiprocessor and one, against eager and float64 in
// every dtype, one kernel each; the same module called again (the counters went back to zero),
// and under CUDA graphs (captured once, replayed with fresh inputs).
TEST(GpuReductions, SplitColumnPassesMatchEager) {
  REQUIRE_GPU();
  const std::vector<std::pair<const char*, std::vector<int64_t>>> cases = {
      {"torch.softmax(x, 0)", {4096, 64}},
      {"torch.softmax(x, 0)", {6001, 100}},
      {"torch.log_softmax(x * 0.5, 1)", {3, 5003, 33}},
      {"x - x.mean(0, keepdim=True)", {8192, 48}},
      {"(x - x.mean(0, keepdim=True)) * torch.rsqrt(x.var(0, keepdim=True, unbiased=False) + 1e-5)", {6000, 40}},
      {"torch.softmax(x, 0)", {4099, 2048}},
      {"torch.logsumexp(x, 0, keepdim=True) - x", {20000, 7}},
  };
  for (const char* spec : {"", "column_pass_blocks=1", "column_cache=0", "column_pass_blocks=2,column_cache=0", "column_cache=0,column_online=0"}) {
    torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning(spec));
    for (auto dtype : kDtypes) {
      for (const auto& [expr, shape] : cases) {
        const std::string tag = std::string(expr) + " " + ::testing::PrintToString(shape) + " " + c10::toString(dtype) + " [" + spec + "]";
        expect_matches_eager(module_returning("x", expr), [&] { return std::vector<c10::IValue>{rnd(shape, dtype)}; }, tag, 1);
      }
      expect_matches_eager(module_returning("x", "torch.softmax(x, 0)"),
                           [&] { return std::vector<c10::IValue>{rnd({64, 5000}, dtype).t()}; },
                           std::string("split softmax of a transposed input ") + c10::toString(dtype) + " [" + spec + "]", 1);
    }
  }
  // Under CUDA graphs: the split kernel's cooperative launch is captured and replayed.
  expect_split_softmax_replays_match({6001, 100});
}

// Column groups cut at their reductions (passes/cut_column_epilogues.h): under a 1 MiB threshold,
// centrings with and without keepdim (odd sizes, a transposed input), an epilogue of several ops
// and a second input, a middle dim's sum, a max, a logsumexp's two passes, a variance
// normalization, a weighted mean over a middle dim; at the default
// threshold (twice L2) the categories benchmark's centring in bf16 and an f32 one of the same
// bytes. Two kernels a call each, against eager and float64 in every dtype.
TEST(GpuReductions, CutColumnEpiloguesMatchEager) {
  REQUIRE_GPU();
  struct Case {
    std::string args, expr;
    std::vector<std::vector<int64_t>> shapes;
    bool transposed = false;
  };
  const std::vector<Case> cases = {
      {"x", "x - x.mean(0, keepdim=True)", {{2048, 512}}},
      {"x", "x - x.mean(0)", {{3001, 333}}},
      {"x", "x - x.mean(0, keepdim=True)", {{2048, 700}}, true},
      {"x, y", "(x - x.mean(0, keepdim=True)) * 2.0 + y", {{2048, 512}, {2048, 512}}},
      {"x", "x / x.sum(1, keepdim=True)", {{8, 513, 130}}},
      {"x", "x * x.amax(0, keepdim=True)", {{2049, 600}}},
      {"x", "torch.logsumexp(x, 0, keepdim=True) - x", {{4099, 200}}},
      {"x", "(x - x.mean(0, keepdim=True)) * torch.rsqrt(x.var(0, keepdim=True, unbiased=False) + 1e-5)", {{6000, 130}}},
      {"x, w", "x - (x * w).mean(1, keepdim=True)", {{4, 3000, 96}, {96}}},
  };
  {
    torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning("column_cut_kb=1024"));
    for (auto dtype : kDtypes) {
      for (const auto& c : cases) {
        const std::string tag = c.expr + " " + ::testing::PrintToString(c.shapes[0]) + (c.transposed ? " transposed " : " ") + c10::toString(dtype);
        expect_matches_eager(module_returning(c.args, c.expr), [&] {
          std::vector<c10::IValue> in;
          for (const auto& s : c.shapes) {
            if (!c.transposed) in.emplace_back(rnd(s, dtype));
            else in.emplace_back(rnd({s[1], s[0]}, dtype).t());
          }
          return in;
        }, tag, 2);
      }
    }
  }
  expect_matches_eager(module_returning("x", "x - x.mean(0, keepdim=True)"),
                       [&] { return std::vector<c10::IValue>{rnd({16384, 4096}, c10::kBFloat16)}; }, "center [16384, 4096] bf16", 2);
  expect_matches_eager(module_returning("x", "x - x.mean(0, keepdim=True)"),
                       [&] { return std::vector<c10::IValue>{rnd({8192, 4096}, c10::kFloat)}; }, "center [8192, 4096] f32", 2);
}

// Column passes taking vectors of adjacent columns a thread (column_pass_vector): split and
// unsplit looped passes, a column weight per lane, an element input broadcast along the columns,
// an outer dim, a last tile part-filled, columns narrowed to vectors of 2, a pointer one element
// off (no vectors for that call), under column_pass_vectors=1 with the other knobs narrowed and
// under the default (one column a thread), against eager and float64 in every dtype, one kernel
// per call.
TEST(GpuReductions, VectorColumnPassesMatchEager) {
  REQUIRE_GPU();
  struct Case {
    std::string args, expr;
    std::vector<std::vector<int64_t>> shapes;
  };
  const std::string norm = "(x - x.mean(0, keepdim=True)) * torch.rsqrt(x.var(0, keepdim=True, unbiased=False) + 1e-5) * w";
  const std::vector<Case> cases = {
      {"x", "x - x.mean(0, keepdim=True)", {{16384, 1024}}},
      {"x", "torch.softmax(x, 0)", {{12289, 1000}}},
      {"x", "torch.log_softmax(x * 0.5, 1)", {{3, 6001, 264}}},
      {"x, w", norm, {{16384, 512}, {512}}},
      {"x, y", "torch.softmax(x + y, 0)", {{9000, 768}, {9000, 1}}},
      {"x", "torch.logsumexp(x, 0, keepdim=True) - x", {{20000, 64}}},
  };
  // (column_cut_kb=0: the 16-bit centring of 32 MiB would be cut in two kernels.)
  for (const char* spec : {"column_pass_vectors=1,column_cut_kb=0", "column_pass_vectors=1,column_pass_blocks=0,column_cache=0,column_cut_kb=0",
                           "column_pass_vectors=1,column_pass_vector_unroll=1,column_cache=0,column_cut_kb=0", "column_cut_kb=0"}) {
    torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning(spec));
    for (auto dtype : kDtypes) {
      for (const auto& c : cases) {
        const std::string tag = c.expr + " " + ::testing::PrintToString(c.shapes[0]) + " " + c10::toString(dtype) + " [" + spec + "]";
        const auto make = [&] {
          std::vector<c10::IValue> in;
          for (const auto& shape : c.shapes) in.emplace_back(rnd(shape, dtype));
          return in;
        };
        expect_matches_eager(module_returning(c.args, c.expr), make, tag, 1);
        if (std::string(spec) == "column_pass_vectors=1,column_cut_kb=0" && c.shapes[0].back() >= 256) {
          // The kernel takes vectors of columns (the wide cases' plan under vectors alone).
          const auto e = torchfuse::compile(module_returning(c.args, c.expr), tftest::quiet_options()).explain(make());
          ASSERT_EQ(e.kernels.size(), 1u) << tag;
          EXPECT_NE(e.kernels[0].source.find(" a thread)"), std::string::npos) << tag << "\n" << e.kernels[0].source;
        }
      }
      // x[:, 1:]: its rows start one element past a vector, so the call reads one column a thread.
      expect_matches_eager(module_returning("x", "torch.softmax(x, 0)"),
                           [&] { return std::vector<c10::IValue>{rnd({12288, 1025}, dtype).narrow(1, 1, 1024)}; },
                           std::string("softmax of a misaligned input ") + c10::toString(dtype) + " [" + spec + "]", 1);
    }
  }
}

// Split column passes taking their tiles in waves (choose_column_pass_split's wave_tiles): the
// model-sized inputs of the categories benchmark under the L2 budget (x - x.mean(0) on
// [16384, 4096] in f32: 8 waves; softmax over dim 0 of [16384, 2048] in bf16: 2), then small
// inputs under budgets small enough for a tile or two a wave: looped and cached rows, with and
// without the L2 hints, vectors of columns, an outer dim, a transposed input, several rounds;
// against eager and float64, one kernel each; and under CUDA graphs.
TEST(GpuReductions, WavesOfColumnPassesMatchEager) {
  REQUIRE_GPU();
  {
    // (column_cut_kb=0: past twice L2 the centring would be cut in two kernels.)
    torchfuse::runtime::ScopedTuning l2(torchfuse::codegen::parse_tuning("column_pass_wave_kb=-1,column_cut_kb=0"));
    expect_matches_eager(module_returning("x", "x - x.mean(0, keepdim=True)"),
                         [&] { return std::vector<c10::IValue>{rnd({16384, 4096}, c10::kFloat)}; }, "center [16384, 4096] f32", 1);
    expect_matches_eager(module_returning("x", "torch.softmax(x, 0)"),
                         [&] { return std::vector<c10::IValue>{rnd({16384, 2048}, c10::kBFloat16)}; }, "softmax [16384, 2048] bf16", 1);
  }
  const std::vector<std::pair<const char*, std::vector<int64_t>>> cases = {
      {"torch.softmax(x, 0)", {6001, 300}},
      {"torch.log_softmax(x * 0.5, 1)", {3, 5003, 70}},
      {"x - x.mean(0, keepdim=True)", {8192, 200}},
      {"(x - x.mean(0, keepdim=True)) * torch.rsqrt(x.var(0, keepdim=True, unbiased=False) + 1e-5)", {6000, 130}},
      {"torch.logsumexp(x, 0, keepdim=True) - x", {20000, 97}},
  };
  for (const char* spec : {"column_pass_wave_kb=256", "column_pass_wave_kb=256,column_cache=0",
                           "column_pass_wave_kb=1024,column_cache=0,column_pass_wave_hints=0",
                           "column_pass_wave_kb=1024,column_cache=0,column_pass_vectors=1"}) {
    torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning(spec));
    for (auto dtype : kDtypes) {
      for (const auto& [expr, shape] : cases) {
        const std::string tag = std::string(expr) + " " + ::testing::PrintToString(shape) + " " + c10::toString(dtype) + " [" + spec + "]";
        expect_matches_eager(module_returning("x", expr), [&] { return std::vector<c10::IValue>{rnd(shape, dtype)}; }, tag, 1);
      }
      expect_matches_eager(module_returning("x", "torch.softmax(x, 0)"),
                           [&] { return std::vector<c10::IValue>{rnd({300, 6000}, dtype).t()}; },
                           std::string("softmax of a transposed input ") + c10::toString(dtype) + " [" + spec + "]", 1);
    }
  }
  torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning("column_pass_wave_kb=256,column_cache=0"));
  expect_split_softmax_replays_match({6001, 300});
}

// Split column passes taking a launch per pass (column_pass_launches): the model-sized inputs of
// the categories benchmark, then small inputs with odd sizes (a tile's last block short or
// empty), one, two and three launches' worth of exchanges, an outer dim, vectors of columns, a
// transposed input, a row output beside the element one, blocks aimed at 4 and 8 a
// multiprocessor; against eager and float64 in every dtype, the launches a call takes counted;
// the same module called again, and under CUDA graphs.
TEST(GpuReductions, ALaunchPerColumnPassMatchesEager) {
  REQUIRE_GPU();
  {
    torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning("column_pass_launches=8,column_cut_kb=0"));
    expect_matches_eager(module_returning("x", "x - x.mean(0, keepdim=True)"),
                         [&] { return std::vector<c10::IValue>{rnd({16384, 4096}, c10::kBFloat16)}; }, "center [16384, 4096] bf16", 2);
    expect_matches_eager(module_returning("x", "torch.softmax(x, 0)"),
                         [&] { return std::vector<c10::IValue>{rnd({16384, 2048}, c10::kFloat)}; }, "softmax [16384, 2048] f32", 2);
  }
  struct Case {
    const char* expr;
    std::vector<int64_t> shape;
    int launches;
  };
  const std::string norm = "(x - x.mean(0, keepdim=True)) * torch.rsqrt(x.var(0, keepdim=True, unbiased=False) + 1e-5)";
  const std::vector<Case> cases = {
      // (Softmax sums accumulate with their max: column_online.)
      {"torch.softmax(x, 0)", {6001, 300}, 2},
      {"torch.log_softmax(x * 0.5, 1)", {3, 5003, 70}, 2},
      {"x - x.mean(0, keepdim=True)", {8193, 200}, 2},
      {"x - x.mean(0, keepdim=True)", {4096, 64}, 2},
      {"torch.logsumexp(x, 0, keepdim=True) - x", {20000, 97}, 2},
  };
  for (const char* spec : {"column_pass_launches=8", "column_pass_launches=4,column_pass_unroll=3",
                           "column_pass_launches=8,column_pass_vectors=1", "column_pass_launches=8,column_online=0"}) {
    torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning(spec));
    const bool online = std::string(spec).find("column_online=0") == std::string::npos;
    for (auto dtype : kDtypes) {
      for (const auto& c : cases) {
        const std::string tag = std::string(c.expr) + " " + ::testing::PrintToString(c.shape) + " " + c10::toString(dtype) + " [" + spec + "]";
        // (Without online sums a softmax sum takes a launch of its own.)
        const int launches = c.launches + (!online && std::string(c.expr).find("mean") == std::string::npos ? 1 : 0);
        expect_matches_eager(module_returning("x", c.expr), [&] { return std::vector<c10::IValue>{rnd(c.shape, dtype)}; }, tag, launches);
      }
      // A mean/var normalization (three launches) returning the variance beside it.
      expect_matches_eager(module_returning("x", norm + ", x.var(0, keepdim=True, unbiased=False)"),
                           [&] { return std::vector<c10::IValue>{rnd({6000, 130}, dtype)}; },
                           std::string("normalization and its variance ") + c10::toString(dtype) + " [" + spec + "]");
      expect_matches_eager(module_returning("x", "torch.softmax(x, 0)"),
                           [&] { return std::vector<c10::IValue>{rnd({300, 6000}, dtype).t()}; },
                           std::string("softmax of a transposed input ") + c10::toString(dtype) + " [" + spec + "]");
    }
  }
  torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning("column_pass_launches=8"));
  expect_split_softmax_replays_match({6001, 300});
}

TEST(GpuReductions, LayerNormWithWeightAndBiasAndRmsNorm) {
  REQUIRE_GPU();
  for (auto dtype : kDtypes) {
    auto ln = module_returning("x, w, b", "torch.layer_norm(x, [96], w, b, 1e-5)");
    expect_matches_eager(ln, [&] { return std::vector<c10::IValue>{rnd({4, 33, 96}, dtype), rnd({96}, dtype), rnd({96}, dtype)}; },
                         std::string("layer_norm ") + c10::toString(dtype), 1);
    auto rms = module_returning("x, w", "torch.rms_norm(x, [96], w, 1e-6)");
    expect_matches_eager(rms, [&] { return std::vector<c10::IValue>{rnd({4, 33, 96}, dtype), rnd({96}, dtype)}; },
                         std::string("rms_norm ") + c10::toString(dtype), 1);
  }
}

std::vector<c10::IValue> suite_inputs(const std::string& name, c10::ScalarType t, int64_t rows, int64_t cols) {
  if (name == "bias_gelu_erf") return {rnd({rows, cols}, t), rnd({cols}, t)};
  if (name == "layernorm_manual") return {rnd({rows, cols}, t), rnd({cols}, t), rnd({cols}, t)};
  if (name == "rmsnorm_manual") return {rnd({rows, cols}, t), rnd({cols}, t)};
  if (name == "swiglu") return {rnd({rows, cols}, t), rnd({rows, cols}, t)};
  if (name == "add_layernorm") return {rnd({rows, cols}, t), rnd({rows, cols}, t), rnd({cols}, t), rnd({cols}, t)};
  if (name == "attn_softmax_mask") return {rnd({2, 4, rows, cols}, t), rnd({1, 1, rows, cols}, t)};
  return {rnd({rows, cols}, t)};
}

// Every suite pattern in f32 and bf16 against eager, with its kernel count: `rows` x `cols`
// (attention softmax: `attn_rows` x `attn_cols`).
void expect_suite_patterns_match(int64_t rows, int64_t cols, int64_t attn_rows, int64_t attn_cols, const std::string& tag) {
  for (const auto& p : tftest::suite_patterns()) {
    const bool attn = p.name == "attn_softmax_mask";
    for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
      const int64_t r = attn ? attn_rows : rows;
      const int64_t c = attn ? attn_cols : cols;
      expect_matches_eager(module_from(tftest::with_row_length(p.source, c)), [&] { return suite_inputs(p.name, dtype, r, c); },
                           p.name + " " + c10::toString(dtype) + tag, p.kernels);
    }
  }
}

TEST(GpuReductions, SuitePatternsAtSuiteSizes) {
  REQUIRE_GPU();
  expect_suite_patterns_match(4096, 4096, 1024, 1024, "");
}

// Column passes with their rows in registers (each budget: 8 or 16 threads along the column, and
// none) against eager, on column lengths at and past the power-of-two bounds, two element inputs.
TEST(GpuReductions, ColumnCacheChoicesMatchEager) {
  REQUIRE_GPU();
  for (const char* spec : {"column_cache=0", "column_cache=16", "column_cache=128"}) {
    torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning(spec));
    for (auto dtype : kDtypes) {
      for (const auto& shape : std::vector<std::vector<int64_t>>{{3, 128, 40}, {3, 129, 33}, {2, 1024, 64}, {2, 1025, 31}}) {
        const std::string tag = ::testing::PrintToString(shape) + " " + c10::toString(dtype) + " [" + spec + "]";
        expect_matches_eager(module_returning("x", "torch.softmax(x, 1)"),
                             [&] { return std::vector<c10::IValue>{rnd(shape, dtype)}; }, "softmax " + tag, 1);
        expect_matches_eager(module_returning("x, y", "torch.log_softmax(x * y, 1)"),
                             [&] { return std::vector<c10::IValue>{rnd(shape, dtype), rnd(shape, dtype)}; }, "two inputs " + tag, 1);
      }
    }
  }
}

TEST(GpuReductions, EveryScheduleChoiceMatchesEager) {
  REQUIRE_GPU();
  // Every row cache policy, several team sizes and unrolls, on sizes that leave partial unroll steps,
  // partial vectors per row and partial column tiles.
  const char* specs[] = {"pointwise_unroll=1,row_cache=values,column_unroll=1,full_unroll=1,chunk_sums=0,row_waves=1",
                         "pointwise_unroll=3,row_cache=inputs,column_unroll=3,full_unroll=5,pointwise_waves=1,row_waves=2",
                         "row_cache=first,row_vectors=8", "row_cache=first,row_vectors=2", "online_softmax=0",
                         "online_min_row=1", "online_min_row=1,row_cache=inputs,row_vectors=8",
                         "row_rounds=3,row_min_blocks=16,fast_math=0", "row_rounds=1,row_cache=inputs",
                         "row_prefetch=1,row_rounds=4", "cache_hints=1,row_cache=inputs", "row_stage=2",
                         "row_stage=1,row_vectors=1", "row_stage=4,row_waves=2"};
  for (const char* spec : specs) {
    torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning(spec));
    expect_suite_patterns_match(1000, 1048, 136, 200, std::string(" [") + spec + "]");
    for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
      const std::string tag = std::string(c10::toString(dtype)) + " [" + spec + "]";
      expect_matches_eager(module_returning("x", "torch.softmax(x, -1)"),
                           [&] { return std::vector<c10::IValue>{rnd({37, 2056}, dtype)}; }, "softmax 2056 " + tag, 1);
      expect_matches_eager(module_returning("x", "torch.tanh(x) * 2.0 + x"),
                           [&] { return std::vector<c10::IValue>{rnd({3, 333, 8}, dtype)}; }, "pointwise tail " + tag, 1);
      expect_matches_eager(module_returning("x", "x.sum(0) * 2.0"),
                           [&] { return std::vector<c10::IValue>{rnd({7, 64}, dtype)}; }, "short column " + tag);
    }
  }
}

// L2 cache hints change no result: with none, with all, and with the default on rows that loop
// (no clusters: f32 loops too), on rows kept in registers (row_hold=1: every length), on inputs
// several rows read (shared_hold=1: an attention mask, weights), on kernels that only read, and on
// a mixed-dtype pointwise kernel whose hinted loads take every vector size.
TEST(GpuReductions, CacheHintsMatchEager) {
  REQUIRE_GPU();
  for (const char* spec : {"cache_hints=0", "cache_hints=1", "row_cluster=1", "row_hold=1", "shared_hold=1"}) {
    torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning(spec));
    for (auto dtype : kDtypes) {
      const std::string tag = std::string(c10::toString(dtype)) + " [" + spec + "]";
      expect_matches_eager(module_returning("x", "torch.softmax(x, -1)"),
                           [&] { return std::vector<c10::IValue>{rnd({16, 65536}, dtype)}; }, "softmax 65536 " + tag, 1);
      expect_matches_eager(module_returning("x", "torch.layer_norm(x, [65536])"),
                           [&] { return std::vector<c10::IValue>{rnd({16, 65536}, dtype)}; }, "layer_norm 65536 " + tag, 1);
      expect_matches_eager(module_returning("s, m", "torch.softmax(s * 0.125 + m, dim=-1)"),
                           [&] { return std::vector<c10::IValue>{rnd({2, 3, 40, 1024}, dtype), rnd({1, 1, 40, 1024}, dtype)}; },
                           "masked softmax " + tag, 1);
      expect_matches_eager(module_returning("x, w, b", "torch.layer_norm(x, [2048], w, b, 1e-5)"),
                           [&] { return std::vector<c10::IValue>{rnd({50, 2048}, dtype), rnd({2048}, dtype), rnd({2048}, dtype)}; },
                           "layer_norm weights " + tag, 1);
      expect_matches_eager(module_returning("x", "torch.logsumexp(x, -1)"),
                           [&] { return std::vector<c10::IValue>{rnd({64, 4096}, dtype)}; }, "logsumexp " + tag, 1);
      expect_matches_eager(module_returning("x", "x.sum(0) * 2.0"),
                           [&] { return std::vector<c10::IValue>{rnd({1000, 520}, dtype)}; }, "column sum " + tag);
      expect_matches_eager(module_returning("x", "(x * x).mean()"),
                           [&] { return std::vector<c10::IValue>{rnd({777, 336}, dtype)}; }, "mean of squares " + tag);
    }
    for (int64_t cols : {256, 333}) {
      expect_matches_eager(module_returning("m, x, y, z", "torch.where(m, x, y.double() + z.double())"),
                           [&] {
                             return std::vector<c10::IValue>{rnd({3, cols}, c10::kFloat) > 0, rnd({3, cols}, c10::kDouble),
                                                             rnd({3, cols}, c10::kFloat), rnd({3, cols}, c10::kBFloat16)};
                           },
                           "mixed dtypes " + std::to_string(cols) + " [" + spec + "]", 1);
    }
  }
}

// Staged rows (row_stage; sm_90): one to four buffers, teams of one block and several per block
// with a partial last group of rows, two staged inputs, rows of outer dims that do not coalesce,
// one buffer where rows are long (bf16 rows of 32768 and 65536), grids with fewer rows than
// blocks, and rows that cannot be staged.
TEST(GpuReductions, StagedRowsMatchEager) {
  REQUIRE_GPU();
  // The default: 16-bit rows of 2048 to 32768 elements are staged with one buffer (and layer norm
  // rows of 1024 and up: cheap to recompute), but rows of up to 1024 that fill their register
  // teams exactly (1024; not 1280).
  for (auto dtype : kDtypes) {
    for (int64_t cols : {1024, 1280, 2048, 8192, 32768}) {
      const std::string tag = std::to_string(cols) + " " + c10::toString(dtype);
      expect_matches_eager(module_returning("x", "torch.softmax(x, -1)"),
                           [&] { return std::vector<c10::IValue>{rnd({37, cols}, dtype)}; }, "default softmax " + tag, 1);
      expect_matches_eager(module_returning("x, w, b", "torch.layer_norm(x, [" + std::to_string(cols) + "], w, b, 1e-5)"),
                           [&] { return std::vector<c10::IValue>{rnd({3, 7, cols}, dtype), rnd({cols}, dtype), rnd({cols}, dtype)}; },
                           "default layer_norm " + tag, 1);
    }
  }
  for (const char* spec : {"row_stage=2", "row_stage=1,row_vectors=8", "row_stage=4,row_waves=3"}) {
    torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning(spec));
    for (auto dtype : kDtypes) {
      const std::string tag = std::string(c10::toString(dtype)) + " [" + spec + "]";
      for (int64_t rows : {3, 37, 1000}) {
        expect_matches_eager(module_returning("x", "torch.softmax(x, -1)"),
                             [&] { return std::vector<c10::IValue>{rnd({rows, 2056}, dtype)}; },
                             "softmax " + std::to_string(rows) + "x2056 " + tag, 1);
      }
      expect_matches_eager(module_returning("x, w, b", "torch.layer_norm(x, [96], w, b, 1e-5)"),
                           [&] {
                             return std::vector<c10::IValue>{rnd({5, 6, 96}, dtype).transpose(0, 1), rnd({96}, dtype),
                                                             rnd({96}, dtype)};
                           },
                           "layer_norm over uncoalesced rows " + tag, 1);
      expect_matches_eager(module_from(tftest::with_row_length(tftest::suite_pattern("add_layernorm").source, 1048)),
                           [&] {
                             return std::vector<c10::IValue>{rnd({333, 1048}, dtype), rnd({333, 1048}, dtype),
                                                             rnd({1048}, dtype), rnd({1048}, dtype)};
                           },
                           "add_layernorm " + tag, 1);
      expect_matches_eager(module_returning("s, m", "torch.softmax(s * 0.125 + m, dim=-1)"),
                           [&] { return std::vector<c10::IValue>{rnd({3, 5, 7, 1024}, dtype), rnd({1, 1, 7, 1024}, dtype)}; },
                           "masked softmax 105 rows " + tag, 1);
      expect_matches_eager(module_returning("x, w", "torch.rms_norm(x, [200], w, 1e-6)"),
                           [&] { return std::vector<c10::IValue>{rnd({77, 200}, dtype), rnd({200}, dtype)}; },
                           "rms_norm 200 " + tag, 1);
      for (int64_t cols : {32768, 65536}) {
        expect_matches_eager(module_returning("x", "torch.softmax(x, -1)"),
                             [&] { return std::vector<c10::IValue>{rnd({300, cols}, dtype)}; },
                             "softmax " + std::to_string(cols) + " " + tag, 1);
        expect_matches_eager(module_returning("x", "torch.layer_norm(x, [" + std::to_string(cols) + "])"),
                             [&] { return std::vector<c10::IValue>{rnd({9, cols}, dtype)}; },
                             "layer_norm " + std::to_string(cols) + " " + tag, 1);
      }
      // Not staged: a row start off the 16-byte grid (vec 1), and a bf16 input beside an f32 one.
      expect_matches_eager(module_returning("x", "torch.softmax(x, -1)"),
                           [&] { return std::vector<c10::IValue>{rnd({40, 1028}, dtype).slice(1, 1, 1025)}; },
                           "unaligned softmax " + tag, 1);
      expect_matches_eager(module_returning("x, y", "torch.softmax(x + y.float(), -1)"),
                           [&] { return std::vector<c10::IValue>{rnd({40, 512}, c10::kFloat), rnd({40, 512}, dtype)}; },
                           "mixed dtypes " + tag, 1);
    }
  }
}

// Ringed rows (row_ring; sm_90): looped rows streaming through a ring of chunks in shared memory.
// The default (16-bit rows too long to stage whole, up to what the ring holds), then forced on f32
// rows (row_cluster=1) and with one vector per thread per chunk: fewer rows than blocks and
// many rows per block (the ring wrapping across rows), a partial last chunk, a row of a single
// chunk, three passes (layer norm with weights, which stay global loads), two ringed inputs
// (add + layer norm), a per-row output (logsumexp with a second pass), rows of outer dims that do
// not coalesce; and a row too long for the ring, which loops as before.
TEST(GpuReductions, RingedRowsMatchEager) {
  REQUIRE_GPU();
  const auto softmax = module_returning("x", "torch.softmax(x, -1)");
  for (const char* spec : {"", "row_cluster=1,row_ring=1", "row_ring=1,row_ring_vectors=1,row_cluster=1"}) {
    torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning(spec));
    for (auto dtype : kDtypes) {
      const std::string tag = std::string(c10::toString(dtype)) + " [" + spec + "]";
      for (int64_t rows : {3, 333}) {
        for (int64_t cols : {40008, 65536}) {
          const std::string shape = std::to_string(rows) + "x" + std::to_string(cols) + " ";
          expect_matches_eager(softmax, [&] { return std::vector<c10::IValue>{rnd({rows, cols}, dtype)}; }, "softmax " + shape + tag, 1);
          expect_matches_eager(module_returning("x, w, b", "torch.layer_norm(x, [" + std::to_string(cols) + "], w, b, 1e-5)"),
                               [&] { return std::vector<c10::IValue>{rnd({rows, cols}, dtype), rnd({cols}, dtype), rnd({cols}, dtype)}; },
                               "layer_norm " + shape + tag, 1);
        }
      }
      expect_matches_eager(module_from(tftest::with_row_length(tftest::suite_pattern("add_layernorm").source, 40000)),
                           [&] {
                             return std::vector<c10::IValue>{rnd({50, 40000}, dtype), rnd({50, 40000}, dtype), rnd({40000}, dtype),
                                                             rnd({40000}, dtype)};
                           },
                           "add_layernorm 40000 " + tag, 1);
      expect_matches_eager(module_returning("x", "x - torch.logsumexp(x, -1, keepdim=True)"),
                           [&] { return std::vector<c10::IValue>{rnd({70, 50000}, dtype)}; }, "log-softmax " + tag, 1);
      expect_matches_eager(softmax, [&] { return std::vector<c10::IValue>{rnd({6, 5, 48000}, dtype).transpose(0, 1)}; },
                           "softmax over uncoalesced rows " + tag, 1);
      expect_matches_eager(softmax, [&] { return std::vector<c10::IValue>{rnd({20, 262144}, dtype)}; }, "softmax 262144 " + tag, 1);
    }
    // Short rows forced to loop (no register budget, not staged): one chunk per row.
    torchfuse::runtime::ScopedTuning looped(torchfuse::codegen::parse_tuning(std::string(spec) + ",row_cache_registers=1,row_stage=0"));
    for (auto dtype : kDtypes) {
      expect_matches_eager(softmax, [&] { return std::vector<c10::IValue>{rnd({200, 2048}, dtype)}; },
                           std::string("softmax 2048 looped ") + c10::toString(dtype) + " [" + spec + "]", 1);
    }
  }
}

TEST(GpuReductions, RowLengths) {
  REQUIRE_GPU();
  for (int64_t cols : {1, 31, 768, 1000, 4096, 50257, 65536, 262144}) {
    const int64_t rows = cols >= 65536 ? 64 : 256;
    for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
      const std::string tag = std::to_string(cols) + " " + c10::toString(dtype);
      expect_matches_eager(module_returning("x", "torch.softmax(x, -1)"),
                           [&] { return std::vector<c10::IValue>{rnd({rows, cols}, dtype)}; }, "softmax " + tag, 1);
      expect_matches_eager(module_returning("x", "torch.layer_norm(x, [" + std::to_string(cols) + "])"),
                           [&] { return std::vector<c10::IValue>{rnd({rows, cols}, dtype)}; }, "layer_norm " + tag, 1);
      expect_matches_eager(module_returning("x", "torch.logsumexp(x, -1)"),
                           [&] { return std::vector<c10::IValue>{rnd({rows, cols}, dtype)}; }, "logsumexp " + tag, 1);
    }
  }
}

// Single rows ([1, N], [N]) on the row schedule, from one element to kMaxSingleRow, in one
// kernel each.
TEST(GpuReductions, SingleRowsMatchEager) {
  REQUIRE_GPU();
  const char* manual = "torch.exp(x - x.amax(-1, keepdim=True)) / torch.exp(x - x.amax(-1, keepdim=True)).sum(-1, keepdim=True)";
  for (const char* expr : {"torch.softmax(x, -1)", manual, "torch.logsumexp(x, -1)", "x - x.mean()"}) {
    for (std::vector<int64_t> shape : std::vector<std::vector<int64_t>>{{1, 1}, {1, 7}, {2056}, {1, 1, 4096}, {1, 32768}}) {
      for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
        const std::string tag = std::string(expr) + " " + ::testing::PrintToString(shape) + " " + c10::toString(dtype);
        expect_matches_eager(module_returning("x", expr), [&] { return std::vector<c10::IValue>{rnd(shape, dtype)}; }, tag, 1);
      }
    }
  }
}

// Rows too few to fill the device (a model's tokens at batch 1 and 8): teams widened to a thread
// a vector, idle threads in the last warp, sub-warp teams, register rows where staging would go,
// against eager and float64 in every dtype, at the default fill, twice it and without widening.
TEST(GpuReductions, FewRowsMatchEager) {
  REQUIRE_GPU();
  const auto add_ln = module_from(
      "def forward(self, x, r, w, b):\n    h = x + r\n    return torch.layer_norm(h, [h.size(-1)], w, b, 1e-12), h\n");
  const auto add_rms = module_from(
      "def forward(self, x, r, w):\n    h = x + r\n    hf = h.float()\n"
      "    y = hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + 1e-5)\n    return w * y.to(x.dtype), h\n");
  const auto softmax = module_returning("x", "torch.softmax(x * 0.125, -1)");
  for (const char* spec : {"", "row_fill=2048", "row_fill=0", "row_whole_warps=1"}) {
    torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning(spec));
    // (Whole-warp teams: rows of 768 and 1536 at both batches, 96 to 384 threads a team.)
    const bool whole = std::string(spec) == "row_whole_warps=1";
    for (auto dtype : kDtypes) {
      for (int64_t batch : {1, 8}) {
        const std::string tag = c10::toString(dtype) + std::string(" batch ") + std::to_string(batch) + " [" + spec + "]";
        const std::vector<int64_t> cols = whole ? std::vector<int64_t>{768, 1536}
                                                : std::vector<int64_t>{batch == 1 ? 1000 : 768, 2048};
        for (int64_t c : cols) {
          expect_matches_eager(add_ln, [&] {
            return std::vector<c10::IValue>{rnd({batch, 128, c}, dtype), rnd({batch, 128, c}, dtype), rnd({c}, dtype), rnd({c}, dtype)};
          }, "add + layer norm " + std::to_string(c) + " " + tag, 1);
          expect_matches_eager(add_rms, [&] {
            return std::vector<c10::IValue>{rnd({batch, 128, c}, dtype), rnd({batch, 128, c}, dtype), rnd({c}, dtype)};
          }, "add + rms norm " + std::to_string(c) + " " + tag, 1);
        }
        for (int64_t n : {77, 128})
          expect_matches_eager(softmax, [&] { return std::vector<c10::IValue>{rnd({batch, 12, n, n}, dtype)}; },
                               "softmax " + std::to_string(n) + " " + tag, 1);
      }
    }
  }
}

// Teams that split a row's vectors evenly (a warp of 3 for bf16 rows of 768, 64 threads of 3 for
// f32 ones), warp teams with their 16-bit weight loaded early, a length with no even team
// (2304), and divisions by N and N - 1 as reciprocals; against eager and a float64 reference.
TEST(GpuReductions, EvenTeamsAndReciprocalsOfNMatchEager) {
  REQUIRE_GPU();
  const auto add_ln = add_layer_norm_with_sum();
  const auto ln = module_returning("x, w, b", "torch.layer_norm(x, [x.size(-1)], w, b, 1e-6)");
  const auto var = module_returning("x", "x.var(-1, keepdim=True) + x.mean(-1, keepdim=True)");
  const auto mean = module_returning("x", "(x * 3.0).mean(-1)");
  for (auto dtype : kDtypes) {
    for (auto [rows, c] : {std::pair<int64_t, int64_t>{1576, 768}, {197, 768}, {4096, 768}, {16384, 768}, {1024, 2304}, {300, 1000}}) {
      const std::string tag = c10::toString(dtype);
      expect_rows_match_eager(add_ln, {{"var + mean", var}, {"mean", mean}}, rows, c, dtype, tag);
      expect_matches_eager(ln, [&] { return std::vector<c10::IValue>{rnd({rows, c}, dtype), rnd({c}, dtype), rnd({c}, dtype)}; },
                           "layer norm " + std::to_string(rows) + "x" + std::to_string(c) + " " + tag, 1);
    }
  }
}

// Shared block rounds (a pass's reductions behind one barrier, their slots alternating by row
// group) and early loads (weights loaded with the first pass), with blocks that take one row
// group and blocks that take several in turn (row_rounds=3 over row counts that do not divide),
// against eager with each off; one and two rounds per pass, online pairs, many and few rows.
TEST(GpuReductions, SharedRoundsAndEarlyLoadsMatchEager) {
  REQUIRE_GPU();
  const auto add_ln = add_layer_norm_with_sum();
  const auto rms = module_returning("x, w", "w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))");
  const auto var = module_returning("x", "x.var(-1, keepdim=True) + x.mean(-1, keepdim=True)");
  const auto softmax = module_returning("x", "torch.softmax(x, -1)");
  const auto lse = module_returning("x", "torch.logsumexp(x, -1)");
  for (const char* spec : {"", "row_shared_rounds=0,row_early_loads=0", "row_early_loads=64,row_fill=0",
                           "row_fill=0,row_rounds=3,row_early_loads=64"}) {
    torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning(spec));
    for (auto dtype : kDtypes) {
      const std::string tag = c10::toString(dtype) + std::string(" [") + spec + "]";
      for (int64_t rows : {int64_t{128}, int64_t{5003}}) {
        for (int64_t c : {int64_t{768}, int64_t{4096}}) {
          const std::string shape = std::to_string(rows) + "x" + std::to_string(c) + " " + tag;
          expect_matches_eager(add_ln, [&] {
            return std::vector<c10::IValue>{rnd({rows, c}, dtype), rnd({rows, c}, dtype), rnd({c}, dtype), rnd({c}, dtype)};
          }, "add + layer norm " + shape, 1);
          expect_matches_eager(rms, [&] { return std::vector<c10::IValue>{rnd({rows, c}, dtype), rnd({c}, dtype)}; },
                               "rms norm " + shape, 1);
          expect_matches_eager(var, [&] { return std::vector<c10::IValue>{rnd({rows, c}, dtype)}; }, "var + mean " + shape, 1);
        }
        for (int64_t c : {int64_t{1024}, int64_t{8192}}) {
          const std::string shape = std::to_string(rows) + "x" + std::to_string(c) + " " + tag;
          expect_matches_eager(softmax, [&] { return std::vector<c10::IValue>{rnd({rows, c}, dtype)}; }, "softmax " + shape, 1);
          expect_matches_eager(lse, [&] { return std::vector<c10::IValue>{rnd({rows, c}, dtype)}; }, "logsumexp " + shape, 1);
        }
      }
    }
  }
}

// Exact rows (lengths every thread's vectors cover, the length a constant, no column checks) at
// row counts that leave the last block's teams past the end (they read row 0 and store nothing),
// beside lengths a team covers in part and the knob off; element, row and two outputs.
TEST(GpuReductions, ExactRowsMatchEager) {
  REQUIRE_GPU();
  const auto add_ln = add_layer_norm_with_sum();
  const std::vector<std::pair<std::string, torch::jit::Module>> ops = {
      {"softmax", module_returning("x", "torch.softmax(x, -1)")}, {"mean", module_returning("x", "x.mean(-1) * 2.0")}};
  for (const char* spec : {"", "row_exact=0", "row_fill=0"}) {
    torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning(spec));
    for (auto dtype : kDtypes) {
      const std::string tag = c10::toString(dtype) + std::string(" [") + spec + "]";
      for (int64_t rows : {int64_t{1}, int64_t{37}, int64_t{1001}, int64_t{5003}}) {
        for (int64_t c : {int64_t{64}, int64_t{72}, int64_t{256}, int64_t{768}, int64_t{1024}, int64_t{2048}}) {
          expect_rows_match_eager(add_ln, ops, rows, c, dtype, tag);
        }
      }
      // The shapes above do take the exact form (unless the knob is off).
      const auto src = torchfuse::compile(add_ln, tftest::quiet_options())
                           .explain({rnd({1001, 64}, dtype), rnd({1001, 64}, dtype), rnd({64}, dtype), rnd({64}, dtype)}, false)
                           .kernels.at(0)
                           .source;
      EXPECT_EQ(src.find("every chunk holds columns") != std::string::npos, std::string(spec) != "row_exact=0") << tag << src;
    }
  }
}

// Short rows over 1 to 32 threads each (tuning().row_min_threads), teams sharing blocks of 32 to
// 256 threads (tuning().row_team_block), with row counts that leave a block's last teams past the
// end; lengths of whole and partial vectors.
TEST(GpuReductions, ShortRowTeamsMatchEager) {
  REQUIRE_GPU();
  const auto add_ln = add_layer_norm_with_sum();
  const std::vector<std::pair<std::string, torch::jit::Module>> ops = {
      {"softmax", module_returning("x", "torch.softmax(x, -1)")}, {"sum", module_returning("x", "x.sum(-1) * 0.5")}};
  for (const char* spec : {"", "row_min_threads=1", "row_team_block=32,row_min_threads=8", "row_team_block=64,row_fill=0"}) {
    torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning(spec));
    for (auto dtype : kDtypes) {
      const std::string tag = c10::toString(dtype) + std::string(" [") + spec + "]";
      for (int64_t rows : {int64_t{37}, int64_t{1001}}) {
        for (int64_t c : {int64_t{8}, int64_t{40}, int64_t{64}, int64_t{128}}) expect_rows_match_eager(add_ln, ops, rows, c, dtype, tag);
      }
    }
  }
}

// Looped rows loading 1-4 vectors ahead per step, on rows that end in a partial step, with one
// and two inputs; f32 rows loop without clusters.
TEST(GpuReductions, LoopedRowsLoadingAheadMatchEager) {
  REQUIRE_GPU();
  for (const char* spec : {"looped_unroll=1,row_cluster=1", "looped_unroll=2,row_cluster=1", "looped_unroll=3,row_cluster=1",
                           "looped_unroll=4,row_cluster=1"}) {
    torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning(spec));
    for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
      const std::string tag = std::string(c10::toString(dtype)) + " [" + spec + "]";
      auto x = [&] { return std::vector<c10::IValue>{rnd({5, 100000}, dtype)}; };
      expect_matches_eager(module_returning("x", "torch.softmax(x, -1)"), x, "softmax " + tag, 1);
      expect_matches_eager(module_returning("x", "torch.layer_norm(x, [100000])"), x, "layer_norm " + tag, 1);
      expect_matches_eager(module_returning("x", "torch.logsumexp(x, -1)"), x, "logsumexp " + tag, 1);
      expect_matches_eager(module_returning("x, r", "torch.layer_norm(x + r, [100000]) * 2.0"),
                           [&] { return std::vector<c10::IValue>{rnd({5, 100000}, dtype), rnd({5, 100000}, dtype)}; },
                           "add + layer_norm " + tag, 1);
    }
  }
}

TEST(GpuReductions, TransposedSlicedAnd4D) {
  REQUIRE_GPU();
  for (auto dtype : kDtypes) {
    const std::string d = c10::toString(dtype);
    expect_matches_eager(module_returning("x", "torch.softmax(x, -1)"),
                         [&] { return std::vector<c10::IValue>{rnd({300, 200}, dtype).t()}; }, "transposed softmax " + d, 1);
    expect_matches_eager(module_returning("x", "torch.layer_norm(x, [100])"),
                         [&] { return std::vector<c10::IValue>{rnd({64, 200}, dtype).slice(1, 0, 200, 2)}; },
                         "sliced layer_norm " + d, 1);
    expect_matches_eager(module_returning("x", "x.sum(0) * 2.0"),
                         [&] { return std::vector<c10::IValue>{rnd({96, 500}, dtype).t()}; }, "transposed col sum " + d);
    expect_matches_eager(module_returning("s, m", "torch.softmax(s * 0.125 + m, dim=-1)"),
                         [&] { return std::vector<c10::IValue>{rnd({2, 3, 64, 80}, dtype), rnd({1, 1, 64, 80}, dtype)}; },
                         "4-D masked softmax " + d, 1);
    expect_matches_eager(module_returning("x", "x.mean(1) + 1.0"),
                         [&] { return std::vector<c10::IValue>{rnd({3, 70, 5, 33}, dtype)}; }, "4-D middle mean " + d);
  }
}

TEST(GpuReductions, InfinityRowsAndNaNMatchEager) {
  REQUIRE_GPU();
  const double inf = std::numeric_limits<double>::infinity();
  auto make = [&] {
    auto x = torch::randn({8, 300}, torch::kCUDA) * 50.0;  // large values: stability
    x[1].fill_(-inf);                                       // a row of -inf
    x[2][7] = inf;
    x[3][5] = std::numeric_limits<double>::quiet_NaN();
    return std::vector<c10::IValue>{x};
  };
  for (const char* e : {"torch.softmax(x, -1)", "torch.logsumexp(x, -1)", "torch.log_softmax(x, -1)", "x.amax(-1)",
                        "x.sum(-1)", "torch.layer_norm(x, [300])"}) {
    expect_matches_eager(module_returning("x", e), make, e, 1);
  }
}

TEST(GpuReductions, OnlineSoftmaxEdgeRowsInEverySchedule) {
  REQUIRE_GPU();
  // The online max and sum (OnlineSum) in warp teams (200), block teams (4096), clusters (f32
  // 65536 on sm_90) and looped rows (bf16 65536), on rows whose max grows at every value (a
  // rescale each time), falls, is -inf, +inf, NaN or the lowest float, on a row with one -inf,
  // and on one whose exps reach the denormal range.
  torchfuse::runtime::ScopedTuning any_row(torchfuse::codegen::parse_tuning("online_min_row=1"));
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t cols : {200, 4096, 65536}) {
    for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
      auto make = [&] {
        auto x = torch::randn({8, cols}, torch::kCUDA) * 20.0;
        x[0].copy_(torch::linspace(-30.0, 30.0, cols, torch::kCUDA));
        x[1].copy_(torch::linspace(30.0, -30.0, cols, torch::kCUDA));
        x[2].fill_(-inf);
        x[3][cols - 1] = inf;
        x[4][cols / 2] = std::numeric_limits<double>::quiet_NaN();
        x[5].fill_(-std::numeric_limits<float>::max());
        x[6][cols / 3] = -inf;
        // exp(x - max) from 1 down through the denormal range (ex2.approx.ftz gives 0 below 2^-126).
        x[7].copy_(torch::linspace(0.0, -120.0, cols, torch::kCUDA));
        return std::vector<c10::IValue>{x.to(dtype)};
      };
      for (const char* e : {"torch.softmax(x, -1)", "torch.logsumexp(x, -1)", "torch.log_softmax(x, -1)"}) {
        expect_matches_eager(module_returning("x", e), make, std::string(e) + " " + std::to_string(cols) + " " + c10::toString(dtype), 1);
      }
    }
  }
}

// The same edge columns through split column passes with online sums (column_online), looped
// over their rows in one launch and in a launch per pass: a column whose max grows at every row
// (a rescale each step), falls, is -inf, +inf, NaN or the lowest float, has one -inf, and one
// whose exps reach the denormal range; rows past a block's range (12001 rows) fold in as -inf.
TEST(GpuReductions, OnlineSoftmaxEdgeColumnsInSplitPasses) {
  REQUIRE_GPU();
  const double inf = std::numeric_limits<double>::infinity();
  const int64_t rows = 12001;
  for (const char* spec : {"column_cache=0", "column_cache=0,column_pass_unroll=5", "column_pass_launches=8"}) {
    torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning(spec));
    for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
      auto make = [&] {
        auto x = torch::randn({rows, 40}, torch::kCUDA) * 20.0;
        x.select(1, 0).copy_(torch::linspace(-30.0, 30.0, rows, torch::kCUDA));
        x.select(1, 1).copy_(torch::linspace(30.0, -30.0, rows, torch::kCUDA));
        x.select(1, 2).fill_(-inf);
        x[rows - 1][3] = inf;
        x[rows / 2][4] = std::numeric_limits<double>::quiet_NaN();
        x.select(1, 5).fill_(-std::numeric_limits<float>::max());
        x[rows / 3][6] = -inf;
        x.select(1, 7).copy_(torch::linspace(0.0, -120.0, rows, torch::kCUDA));
        return std::vector<c10::IValue>{x.to(dtype)};
      };
      for (const char* e : {"torch.softmax(x, 0)", "torch.logsumexp(x, 0, keepdim=True) - x", "torch.log_softmax(x, 0)"}) {
        expect_matches_eager(module_returning("x", e), make, std::string(e) + " " + c10::toString(dtype) + " [" + spec + "]");
      }
    }
  }
}

TEST(GpuReductions, DivisionByRowValuesAtTheEdgesMatchesEager) {
  REQUIRE_GPU();
  // Rows whose sum is 0, denormal, huge (its reciprocal is denormal), infinite or NaN: the
  // per-row reciprocal must give way to a division there.
  const double inf = std::numeric_limits<double>::infinity();
  auto make = [&] {
    auto x = torch::rand({8, 256}, torch::kCUDA) + 0.5;
    x[1].zero_();
    x[2].fill_(1e-41);
    x[3].fill_(1e36);
    x[4][9] = inf;
    x[5][3] = std::numeric_limits<double>::quiet_NaN();
    x[6][0] = -1e-41;
    return std::vector<c10::IValue>{x};
  };
  expect_matches_eager(module_returning("x", "x / x.sum(-1, keepdim=True)"), make, "x / sum", 1);
  expect_matches_eager(module_returning("x", "(x * 2.0) / x.amax(-1, keepdim=True)"), make, "2x / max", 1);
}

// Column reductions split over many blocks: the last block of a tile adds more partial rows than
// one batch of loads covers (a single tile of columns splits the most), with two reductions in
// one kernel; full reductions add more partials than a block has threads.
TEST(GpuReductions, SplitCombinesMatchEager) {
  REQUIRE_GPU();
  struct Case {
    const char* expr;
    std::vector<int64_t> shape;
  };
  for (auto dtype : kDtypes) {
    for (const auto& c : {Case{"x.sum(0)", {65536, 8}}, Case{"x.sum(0) + x.amax(0)", {65536, 32}},
                          Case{"x.mean(0, keepdim=True) * 2.0", {20000, 96}}, Case{"x.sum(0)", {16384, 4096}},
                          Case{"(x * x).mean()", {8192, 8192}}, Case{"x.amax() + x.sum()", {3000, 1001}}}) {
      expect_matches_eager(module_returning("x", c.expr), [&] { return std::vector<c10::IValue>{rnd(c.shape, dtype)}; },
                           std::string(c.expr) + " " + c10::toString(dtype), 1);
    }
  }
  // Integer, bool and double accumulators (the partials' loads by 16-byte words of 8-byte values).
  for (const auto& c : {Case{"(x > 0.5).sum(0)", {65536, 8}}, Case{"(x * 4.0).int().sum(0)", {20000, 96}},
                        Case{"(x * 4.0).int().amax(0)", {65536, 32}}, Case{"x.double().sum(0) * 2.0", {20000, 96}}}) {
    expect_matches_eager(module_returning("x", c.expr), [&] { return std::vector<c10::IValue>{rnd(c.shape, c10::kFloat)}; },
                         c.expr, 1);
  }
}

// One-pass column reductions with taller blocks (column_rows), narrower tiles
// (column_tile_threads) and float sums before the double
// partials (column_float_sums: compensated, plain): many partial rows of a split, two reductions
// in one kernel, a middle dim, unvectorized columns, a 16-bit input summed in float, three such
// sums (whose vectors' partial rows would outgrow shared memory), every dtype.
TEST(GpuReductions, ColumnRowsAndFloatSumsMatchEager) {
  REQUIRE_GPU();
  struct Case {
    const char* expr;
    std::vector<int64_t> shape;
  };
  const std::vector<Case> cases = {{"x.sum(0)", {65536, 8}},          {"x.sum(0) + x.amax(0)", {65536, 32}},
                                   {"x.sum(1)", {64, 512, 256}},      {"x.mean(0, keepdim=True) * 2.0", {20000, 96}},
                                   {"(x * x).sum(0)", {4096, 1001}},  {"x.float().sum(0)", {16384, 512}},
                                   // Three double sums of a 16-bit input: one column a thread.
                                   {"x.float().sum(0) + (x * x).float().sum(0) + (x.float() * 2.0).sum(0)", {4096, 512}}};
  for (const char* knobs : {"", "column_rows=16", "column_rows=32", "column_float_sums=1", "column_rows=32,column_float_sums=1",
                            "column_tile_threads=16,column_rows=16", "column_tile_threads=8"}) {
    torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning(knobs));
    for (auto dtype : kDtypes) {
      for (const auto& c : cases) {
        expect_matches_eager(module_returning("x", c.expr), [&] { return std::vector<c10::IValue>{rnd(c.shape, dtype)}; },
                             std::string(knobs) + " " + c.expr + " " + c10::toString(dtype), 1);
      }
    }
  }
  // Plain float sums: short chains a thread, as eager's.
  torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning("column_float_sums=2"));
  for (const auto& c : {cases[0], cases[2]}) {
    expect_matches_eager(module_returning("x", c.expr), [&] { return std::vector<c10::IValue>{rnd(c.shape, c10::kFloat)}; },
                         std::string("column_float_sums=2 ") + c.expr, 1);
  }
}

TEST(GpuReductions, Deterministic) {
  REQUIRE_GPU();
  struct Case {
    const char* expr;
    std::vector<int64_t> shape;
  };
  for (const auto& c : {Case{"x.sum(0)", {16384, 512}}, Case{"(x * x).mean()", {4096, 4096}},
                        Case{"torch.softmax(x, -1)", {64, 65536}}, Case{"torch.layer_norm(x, [4096])", {512, 4096}}}) {
    auto m = torchfuse::compile(module_returning("x", c.expr));
    const auto x = rnd(c.shape, c10::kFloat);
    m.forward({x});
    const auto first = m.forward({x}).toTensor().clone();
    for (int i = 0; i < 5; ++i) {
      EXPECT_TRUE(torch::equal(first, m.forward({x}).toTensor())) << c.expr << " run " << i;
    }
  }
}

}  // namespace
