// aten::cat and aten::stack inside pointwise groups (issue 22 item 1): each tensor of the list
// becomes a CatPiece view (laid into its range of the cat's dim, the runtime moving its pointer
// back by the piece's start) and the Cat picks, per element, the piece whose range holds its
// index. CPU only: explain() plans, generates and NVRTC-compiles without a GPU
// (tests/test_cat_gpu.cpp runs the kernels against eager).
#include "codegen/layout.h"
#include "passes/fusion_plan.h"
#include "passes/view_steps.h"
#include "tests/test_util.h"

using tftest::fusion_nodes;
using tftest::module_from;
using tftest::module_returning;

namespace {

using torchfuse::ViewStep;
using torchfuse::ir::OpKind;

struct CatCase {
  const char* name;
  const char* args;
  const char* expr;
  std::vector<std::vector<int64_t>> shapes;
};

std::vector<CatCase> cat_cases() {
  return {
      {"last_2", "x, y", "torch.cat((torch.relu(x), y * 2.0), -1) + 1.0", {{4, 8, 6}, {4, 8, 10}}},
      {"last_3", "x, y, z", "torch.cat((torch.relu(x), y * 2.0, z), 2) * 3.0", {{4, 8, 6}, {4, 8, 10}, {4, 8, 1}}},
      {"middle_2", "x, y", "torch.cat((torch.relu(x), y * 2.0), 1) - 1.0", {{4, 3, 16}, {4, 5, 16}}},
      {"middle_3", "x, y, z", "torch.cat((x, torch.sigmoid(y), z * z), 1) + 0.5", {{4, 3, 16}, {4, 5, 16}, {4, 2, 16}}},
      {"leading_2", "x, y", "torch.cat((torch.relu(x), y * 2.0), 0) * 2.0", {{3, 8, 16}, {5, 8, 16}}},
      {"leading_3", "x, y, z", "torch.cat((x, y, torch.tanh(z)), 0) * 2.0", {{3, 8}, {5, 8}, {1, 8}}},
      {"computed_pieces", "x, y", "torch.cat((torch.sigmoid(x) * 2.0, -y), -1) * 3.0", {{4, 8}, {4, 8}}},
      {"stack_1", "x, y", "torch.stack((torch.relu(x), y * 2.0), 1) * 3.0", {{4, 16}, {4, 16}}},
      {"stack_last", "x, y, z", "torch.stack((x * 2.0, y, z), -1) + 1.0", {{4, 16}, {4, 16}, {4, 16}}},
      {"stack_leading", "x, y", "torch.stack((x, y), 0) * 2.0", {{4, 16}, {4, 16}}},
      {"broadcast_inside_piece", "x, w, y", "torch.cat((x * w, y), -1) + 1.0", {{4, 8}, {8}, {4, 4}}},
      {"cat_then_permute", "x, y, z", "torch.cat((x * 2.0, y), 1).permute(0, 2, 1) * z", {{4, 3, 8}, {4, 5, 8}, {4, 8, 8}}},
      {"rope", "q, c, s", "q * c + torch.cat((-q[..., 16:], q[..., :16]), -1) * s", {{2, 4, 8, 32}, {8, 32}, {8, 32}}},
  };
}

std::vector<c10::IValue> inputs_of(const CatCase& c, c10::ScalarType dtype) {
  std::vector<c10::IValue> in;
  for (const auto& s : c.shapes) in.emplace_back(torch::randn(s).to(dtype));
  return in;
}

torchfuse::Explanation explain(const torch::jit::Module& m, const std::vector<c10::IValue>& in, bool compile = false,
                               int min_group_size = 2) {
  auto options = tftest::quiet_options(min_group_size);
  options.offline_arch = "sm_90";
  return torchfuse::compile(m, options).explain(in, compile);
}

std::string refusals(const torchfuse::Explanation& e) {
  std::string s;
  for (const auto& r : e.refused) s += r + "\n";
  return s + e.ir_after + e.rewritten_graph;
}

bool any_refusal_contains(const torchfuse::Explanation& e, const std::string& text) {
  for (const auto& r : e.refused)
    if (r.find(text) != std::string::npos) return true;
  return false;
}

TEST(Cat, EachCatIsOneKernel) {
  for (const auto& c : cat_cases()) {
    SCOPED_TRACE(c.name);
    const auto e = explain(module_returning(c.args, c.expr), inputs_of(c, c10::kFloat));
    EXPECT_NE(e.ir_before.find("= cat[dims="), std::string::npos) << e.ir_before;
    EXPECT_NE(e.ir_before.find("= cat_piece[dims="), std::string::npos) << e.ir_before;
    ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
    EXPECT_EQ(fusion_nodes(e.rewritten_graph), 1) << e.rewritten_graph;
    for (const char* op : {"aten::cat", "aten::stack", "prim::ListConstruct", "aten::relu", "aten::neg"}) {
      EXPECT_EQ(e.rewritten_graph.find(op), std::string::npos) << op << " left in\n" << e.rewritten_graph;
    }
    bool has_cat = false;
    for (const auto& k : e.kernels) {
      if (k.description.find("cat") == std::string::npos) continue;
      has_cat = true;
      EXPECT_NE(k.source.find("int sel0 = 0;"), std::string::npos) << k.source;
      EXPECT_NE(k.source.find("cat0_bound["), std::string::npos) << k.source;
    }
    EXPECT_TRUE(has_cat);
  }
}

TEST(Cat, KernelsCompileWithNvrtc) {
  for (const auto& c : cat_cases()) {
    for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
      SCOPED_TRACE(std::string(c.name) + " " + c10::toString(dtype));
      const auto e = explain(module_returning(c.args, c.expr), inputs_of(c, dtype), /*compile=*/true);
      ASSERT_FALSE(e.kernels.empty()) << refusals(e);
      ASSERT_EQ(e.cubin_bytes.size(), e.kernels.size());
      for (size_t b : e.cubin_bytes) EXPECT_GT(b, 0u);
    }
  }
}

TEST(Cat, RopeIsOneKernel) {
  // Llama's rotate_half: q * cos + cat(-q2, q1) * sin, with the halves taken by constant slices
  // and by chunk, and with 4-d [B, H, T, D] cos/sin broadcast over heads.
  const std::string slices = "    d = 64\n    return q * c + torch.cat((-q[..., 32:], q[..., :32]), dim=-1) * s\n";
  const std::string chunks = "    q1, q2 = q.chunk(2, -1)\n    return q * c + torch.cat((-q2, q1), dim=-1) * s\n";
  for (const auto& body : {slices, chunks}) {
    SCOPED_TRACE(body);
    const auto m = module_from("def forward(self, q, c, s):\n" + body);
    const std::vector<c10::IValue> in = {torch::randn({2, 4, 16, 64}), torch::randn({2, 1, 16, 64}), torch::randn({2, 1, 16, 64})};
    const auto e = explain(m, in, /*compile=*/true);
    ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
    EXPECT_EQ(fusion_nodes(e.rewritten_graph), 1) << e.rewritten_graph;
    EXPECT_EQ(e.rewritten_graph.find("aten::"), std::string::npos) << e.rewritten_graph;
    ASSERT_EQ(e.cubin_bytes.size(), 1u);
    EXPECT_GT(e.cubin_bytes[0], 0u);
  }
}

TEST(Cat, MixedDtypesPromote) {
  // cat(f32, i64) is f32, as eager promotes; the kernel converts the integer piece.
  const auto e = explain(module_returning("x, y", "torch.cat((x * 2.0, y + 1), 1) * 0.5"),
                         {torch::randn({4, 8}), torch::randint(0, 9, {4, 3})}, true);
  ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_NE(e.ir_before.find("f32[4, 11] = cat[dims=[1]]"), std::string::npos) << e.ir_before;
  EXPECT_GT(e.cubin_bytes.at(0), 0u);
}

TEST(Cat, StrictFusesALoneCat) {
  const auto e = explain(module_returning("x, y", "torch.cat((x, y), 1)"), {torch::randn({4, 8}), torch::randn({4, 3})}, true, 1);
  ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_EQ(e.rewritten_graph.find("aten::cat"), std::string::npos) << e.rewritten_graph;
}

TEST(Cat, RefusalsSayWhy) {
  struct Refused {
    const char* source;
    std::vector<c10::IValue> in;
    const char* reason;
  };
  const std::vector<Refused> cases = {
      {"    return torch.softmax(torch.cat((x, y), -1) * 2.0, -1)\n",
       {torch::randn({4, 8}), torch::randn({4, 8})},
       "cat inside reduction groups is not fused yet"},
      {"    return torch.cat(x.chunk(2, -1), 0) * 2.0 + y\n",
       {torch::randn({4, 8}), torch::randn({8, 4})},
       "its list is not built by prim::ListConstruct in the graph (it comes from aten::chunk)"},
      {"    return torch.cat((x * 2.0, y * 2.0), 1) + 1.0\n",
       {torch::randn({4, 8}), torch::randn({4, 0})},
       "has no elements or no dims"},
      {"    return torch.cat((torch.cat((x, y), 1) * 2.0, x), 1) + 1.0\n",
       {torch::randn({4, 8}), torch::randn({4, 3})},
       "cats of cats are not fused yet"},
      {"    return torch.cat((x * 2.0, y * 3.0), 1)[:, 1:5] + 1.0\n",
       {torch::randn({4, 8}), torch::randn({4, 3})},
       "takes a range of the cat's dim"},
      {"    xs = [x * 2.0, y]\n    xs.append(y)\n    return torch.cat(xs, 1) + 1.0\n",
       {torch::randn({4, 8}), torch::randn({4, 3})},
       "is also read elsewhere"},
  };
  for (const auto& rc : cases) {
    SCOPED_TRACE(rc.source);
    const auto e = explain(module_from(std::string("def forward(self, x, y):\n") + rc.source), rc.in);
    EXPECT_TRUE(any_refusal_contains(e, rc.reason)) << refusals(e);
  }
}

TEST(Cat, PieceStepsMovePointerBack) {
  // Piece 1 of a cat along dim 1 that starts at 6 of 16: the offset moves back by 6 strides and
  // the dim takes the cat's size; a tensor broadcast in that dim stays broadcast.
  ViewStep step;
  step.kind = OpKind::CatPiece;
  step.dims = {1, 1, 6, 16};
  step.rank = 2;
  step.in_sizes = {4, 10};
  step.view_id = 7;
  std::vector<int64_t> sizes = {4, 10}, strides = {10, 1};
  int64_t offset = 0;
  ASSERT_TRUE(torchfuse::apply_view_steps({step}, sizes, strides, offset));
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 16}));
  EXPECT_EQ(strides, (std::vector<int64_t>{10, 1}));
  EXPECT_EQ(offset, -6);
  // The call's place: starting at 3 of 13.
  torchfuse::CatPlaces places;
  places[7] = {3, 13};
  sizes = {4, 10};
  strides = {1, 4};  // transposed storage
  offset = 0;
  ASSERT_TRUE(torchfuse::apply_view_steps({step}, sizes, strides, offset, nullptr, &places));
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 13}));
  EXPECT_EQ(offset, -12);
  // Broadcast in the dim: size 1 over the whole cat.
  sizes = {4, 1};
  strides = {1, 0};
  offset = 0;
  ASSERT_TRUE(torchfuse::apply_view_steps({step}, sizes, strides, offset, nullptr, &places));
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(offset, 0);
  // A piece missing from the call's places does not fit.
  places.clear();
  sizes = {4, 10};
  EXPECT_FALSE(torchfuse::apply_view_steps({step}, sizes, strides, offset, nullptr, &places));
  // The piece's size as an input gives it.
  torchfuse::RangeSizes pieces;
  ASSERT_TRUE(torchfuse::cat_piece_size({step}, {4, 12}, {12, 1}, pieces));
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0], (std::pair<int, int64_t>{7, 12}));
}

TEST(Cat, PlacesComeFromTheCallsSizes) {
  torchfuse::FusionGroup g;
  torchfuse::GroupCat c;
  c.domain_dim = 1;
  c.piece_ids = {7, 8, 9};
  c.profiled_sizes = {6, 10, 1};
  g.cats.push_back(c);
  std::vector<std::vector<int64_t>> starts;
  auto places = torchfuse::place_cat_pieces(g, {{7, 3}, {8, 12}, {8, 12}}, &starts);
  ASSERT_TRUE(places.has_value());
  EXPECT_EQ(starts, (std::vector<std::vector<int64_t>>{{3, 15}}));
  EXPECT_EQ(places->at(8).offset, 3);
  EXPECT_EQ(places->at(9).offset, 15);  // a piece of size 1 that no input names
  EXPECT_EQ(places->at(9).total, 16);
  EXPECT_EQ(torchfuse::profiled_cat_starts(g), (std::vector<std::vector<int64_t>>{{6, 16}}));
  // Inputs of one piece disagree (eager raises): the call falls back.
  EXPECT_FALSE(torchfuse::place_cat_pieces(g, {{7, 3}, {7, 4}, {8, 12}}).has_value());
  // A piece of size 1 where the profile's was longer, or of size 0.
  EXPECT_FALSE(torchfuse::place_cat_pieces(g, {{7, 1}, {8, 12}}).has_value());
  EXPECT_FALSE(torchfuse::place_cat_pieces(g, {{7, 0}, {8, 12}}).has_value());
}

TEST(Cat, LayoutKeepsTheCatDimApart) {
  torchfuse::codegen::Tuning tune;
  torchfuse::codegen::OperandShape op;
  op.sizes = {4, 16, 32};
  op.strides = {512, 32, 1};
  // Along dim 1: dims 1 and 2 merge, dim 0 stays apart; the bound is the start times 32.
  auto l = torchfuse::codegen::plan_pointwise_layout({4, 16, 32}, {op}, {c10::kFloat}, 1 << 26, tune, {{1, {6}}});
  EXPECT_EQ(l.sizes, (std::vector<int64_t>{4, 512}));
  ASSERT_EQ(l.cats.size(), 1u);
  EXPECT_EQ(l.cats[0].dim, 1);
  EXPECT_EQ(l.cats[0].bounds, (std::vector<int64_t>{192}));
  EXPECT_EQ(l.unroll, 1);
  // Along the last dim: the leading dims merge.
  l = torchfuse::codegen::plan_pointwise_layout({4, 16, 32}, {op}, {c10::kFloat}, 1 << 26, tune, {{2, {16}}});
  EXPECT_EQ(l.sizes, (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(l.cats[0].dim, 1);
  EXPECT_EQ(l.cats[0].bounds, (std::vector<int64_t>{16}));
  // Along the leading dim: everything merges into it.
  l = torchfuse::codegen::plan_pointwise_layout({4, 16, 32}, {op}, {c10::kFloat}, 1 << 26, tune, {{0, {1}}});
  EXPECT_EQ(l.sizes, (std::vector<int64_t>{2048}));
  EXPECT_EQ(l.cats[0].bounds, (std::vector<int64_t>{512}));
  EXPECT_NE(l.key().find("cats=0/1"), std::string::npos) << l.key();
}

TEST(Cat, DimThroughViewsAfterTheCat) {
  ViewStep permute;
  permute.kind = OpKind::Permute;
  permute.dims = {0, 2, 1};
  permute.rank = 3;
  permute.in_sizes = {4, 8, 16};
  EXPECT_EQ(torchfuse::dim_through_steps(1, 3, {permute}, 3), 2);
  EXPECT_EQ(torchfuse::dim_through_steps(1, 3, {permute}, 4), 3);
  ViewStep slice;
  slice.kind = OpKind::Slice;
  slice.dims = {1, 0, 4, 1};
  slice.rank = 3;
  slice.in_sizes = {4, 8, 16};
  std::string why;
  EXPECT_FALSE(torchfuse::dim_through_steps(1, 3, {slice}, 3, &why).has_value());
  EXPECT_NE(why.find("takes a range of the cat's dim"), std::string::npos) << why;
  EXPECT_EQ(torchfuse::dim_through_steps(2, 3, {slice}, 3), 2);
}

}  // namespace
