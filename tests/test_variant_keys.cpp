// The variant key decides which calls share a kernel: every knob that changes a kernel's source
// must change its key (codegen/schedule.h). For graphs of every schedule, each knob is set to
// values other than its default and the kernels planned for sm_80 and sm_90; equal keys must
// mean equal sources. Also: a module's own knobs (CompileOptions::tune) reach its kernels.
#include <map>

#include <torch/csrc/jit/ir/ir.h>

#include "codegen/device_target.h"
#include "codegen/schedule.h"
#include "passes/pass_list.h"
#include "src/frontend.h"
#include "src/prepare_graph.h"
#include "tests/test_util.h"

namespace {

namespace cg = torchfuse::codegen;

// Knob settings other than the defaults (each alone).
const char* const kKnobs[] = {
    "",  // the defaults
    "pointwise_unroll=2", "pointwise_unroll=4", "pointwise_waves=2", "pointwise_tile=0", "pointwise_tile=16", "pointwise_tile=64", "row_cache=values", "row_cache=inputs",
    "row_cache=first", "row_vectors=2", "row_vectors=8", "row_single_pass_vectors=8", "row_min_threads=1", "row_team_block=64", "row_cluster=1",
    "row_cluster=4", "row_cache_registers=16", "row_team=0", "row_team=256", "row_waves=2", "row_rounds=2", "row_fill=0",
    "looped_blocks_per_sm=1", "looped_unroll=1", "looped_unroll=4", "column_unroll=1", "column_unroll=4", "column_cache=0", "column_cache=16",
    "column_blocks=1", "column_blocks=4", "column_rows=16", "column_rows=32", "column_tile_threads=8", "column_tile_threads=16,column_rows=16", "column_float_sums=1", "column_float_sums=2", "column_pass_blocks=0", "column_pass_blocks=1", "column_pass_unroll=3", "column_pass_vectors=1", "column_pass_vectors=1,column_pass_vector_unroll=2", "column_pass_wave_kb=0", "column_pass_wave_kb=256", "column_pass_wave_kb=256,column_pass_wave_hints=0", "column_pass_launches=4", "column_pass_launches=8", "chunk_sums=0", "full_unroll=1", "full_unroll=4", "online_softmax=0", "column_online=0",
    "online_min_row=1", "online_min_row=1048576", "row_min_blocks=2", "row_prefetch=0", "row_prefetch=1",
    "fast_math=0", "cache_hints=0", "cache_hints=1", "row_stage=0", "row_stage=2", "row_ring=0", "row_ring=1",
    "row_ring_vectors=1", "row_hold=0", "row_hold=1", "shared_hold=0", "shared_hold=1",
    "row_early_loads=0", "row_early_loads=64", "row_shared_rounds=0", "row_exact=0", "row_whole_warps=1",
};

struct Case {
  std::string source;
  std::vector<c10::IValue> inputs;
};

std::vector<Case> cases() {
  auto r = [](std::vector<int64_t> s, c10::ScalarType t) { return torch::randn(s).to(t); };
  std::vector<Case> c;
  for (c10::ScalarType t : {c10::kFloat, c10::kBFloat16}) {
    c.push_back({"def forward(self, x):\n    return torch.softmax(x, dim=-1)\n", {r({8, 65536}, t)}});
    c.push_back({"def forward(self, x):\n    return torch.softmax(x, dim=-1)\n", {r({64, 4096}, t)}});
    // Looped rows on sm_80 with a plain float sum (chunk_sums applies).
    c.push_back({"def forward(self, x):\n    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6)\n",
                 {r({4, 65536}, t)}});
    c.push_back({"def forward(self, x, w, b):\n    return torch.layer_norm(x, [3000], w, b, 1e-5)\n",
                 {r({16, 3000}, t), r({3000}, t), r({3000}, t)}});
    c.push_back({"def forward(self, s, m):\n    return torch.softmax(s * 0.125 + m, dim=-1)\n",
                 {r({2, 4, 64, 1024}, t), r({1, 1, 64, 1024}, t)}});
    c.push_back({"def forward(self, x):\n    return torch.tanh(x).sum(0)\n", {r({4096, 256}, t)}});
    // Few rows of 768 (row_fill, row_whole_warps).
    c.push_back({"def forward(self, x, w, b):\n    return torch.layer_norm(x, [768], w, b, 1e-12)\n",
                 {r({1024, 768}, t), r({768}, t), r({768}, t)}});
    // Short rows (row_min_threads, row_team_block).
    c.push_back({"def forward(self, x, w, b):\n    return torch.layer_norm(x, [64], w, b, 1e-5)\n",
                 {r({4096, 64}, t), r({64}, t), r({64}, t)}});
    c.push_back({"def forward(self, x):\n    return x.sum(-1)\n", {r({4096, 64}, t)}});
    c.push_back({"def forward(self, x):\n    return torch.softmax(x, dim=1)\n", {r({4, 300, 64}, t)}});
    // Column passes split over blocks (choose_column_pass_split): looped, and cached rows of a split.
    c.push_back({"def forward(self, x):\n    return torch.softmax(x, dim=0)\n", {r({4096, 2048}, t)}});
    c.push_back({"def forward(self, x):\n    return x - x.mean(0, keepdim=True)\n", {r({8192, 64}, t)}});
    c.push_back({"def forward(self, x):\n    return (x * x).mean()\n", {r({1024, 1024}, t)}});
    c.push_back({"def forward(self, x, y):\n    return torch.gelu(x) * torch.sigmoid(y)\n", {r({256, 1024}, t), r({256, 1024}, t)}});
    // A transposed input (a tiled layout). (shapes_of reads group inputs as they come: no views.)
    c.push_back({"def forward(self, x, y):\n    return torch.sigmoid(x) * y\n", {r({1024, 256}, t).t(), r({256, 1024}, t)}});
  }
  return c;
}

// The fusion groups of a graph for these inputs, with the IR they point into.
struct Fused {
  std::shared_ptr<torch::jit::Graph> graph;
  torchfuse::Conversion conversion;
  torchfuse::FusionPlan plan;
};

std::unique_ptr<Fused> fuse(const Case& c) {
  auto f = std::make_unique<Fused>();
  f->graph = torchfuse::prepare_module_graph(tftest::module_from(c.source));
  const auto profile = torchfuse::profile_graph(f->graph, c.inputs);
  f->conversion = torchfuse::convert_to_ir(*f->graph, profile);
  torchfuse::PassContext ctx(*f->conversion.graph, 2, {});
  torchfuse::run_fusion_passes(ctx);
  f->plan = std::move(ctx.plan);
  return f;
}

// The operands and domain of a group on its profiled types.
struct Shapes {
  std::vector<cg::OperandShape> operands;
  std::vector<int64_t> domain;
};

Shapes shapes_of(const torchfuse::FusionGroup& g) {
  Shapes s;
  for (const torchfuse::ir::Value* v : g.inputs) {
    s.operands.push_back({v->type.is_tensor(), v->type.dtype, v->type.sizes, v->type.strides});
    if (v->type.is_tensor()) s.domain = *torchfuse::ir::broadcast_shapes(s.domain, v->type.sizes);
  }
  return s;
}

TEST(VariantKeys, EqualKeysMeanEqualSources) {
  int groups = 0, distinct = 0;
  for (const Case& c : cases()) {
    const auto fused = fuse(c);
    ASSERT_FALSE(fused->plan.groups.empty()) << c.source;
    for (const auto& g : fused->plan.groups) {
      ++groups;
      const Shapes s = shapes_of(g);
      std::map<std::string, std::pair<std::string, std::string>> by_key;  // key -> (source, knobs)
      for (const char* knobs : kKnobs) {
        const cg::Tuning tune = cg::parse_tuning(knobs);
        const cg::GroupAnalysis a = cg::analyze_group(g, tune);
        for (const char* arch : {"sm_80", "sm_90"}) {
          const cg::DeviceTarget target = cg::offline_target(arch, tune);
          const auto p = cg::plan_and_generate({g, a, s.operands, s.domain, target, tune, true});
          auto [it, fresh] = by_key.emplace(p.key, std::make_pair(p.kernel.source, std::string(knobs) + " " + arch));
          if (fresh) {
            ++distinct;
            continue;
          }
          EXPECT_TRUE(it->second.first == p.kernel.source)
              << c.source << "group " << g.kernel_name << ": '" << it->second.second << "' and '" << knobs << " " << arch
              << "' share the key\n" << p.key << "\nbut generate different sources";
        }
      }
    }
  }
  // The knobs do change kernels: far more variants than groups.
  EXPECT_GT(distinct, 4 * groups);
}

TEST(VariantKeys, ModuleKnobsReachItsKernels) {
  const auto m = tftest::module_returning("x", "torch.gelu(x) * 2.0");
  const std::vector<c10::IValue> in{torch::randn({64, 96})};
  auto options = tftest::quiet_options();
  const auto fast = torchfuse::compile(m, options).explain(in).kernels.at(0).source;
  options.tune = "fast_math=0";
  const auto exact = torchfuse::compile(m, options).explain(in).kernels.at(0).source;
  EXPECT_NE(fast.find("= tf_gelu_fast("), std::string::npos) << fast;
  EXPECT_EQ(exact.find("= tf_gelu_fast("), std::string::npos) << exact;
  EXPECT_NE(exact.find("= tf_gelu("), std::string::npos) << exact;
}

TEST(VariantKeys, BadModuleKnobIsAnErrorNamingIt) {
  auto options = tftest::quiet_options();
  options.tune = "row_vectors=99";
  const auto m = tftest::module_returning("x", "torch.relu(x) * 2.0");
  const std::string e = tftest::error_of([&] { torchfuse::compile(m, options); });
  EXPECT_NE(e.find("CompileOptions::tune: row_vectors must be in [1, 16], got 99"), std::string::npos) << e;
  options.tune = "no_such_knob=1";
  EXPECT_NE(tftest::error_of([&] { torchfuse::compile(m, options); }).find("unknown knob 'no_such_knob'"),
            std::string::npos);
}

}  // namespace
