// IR: conversion of every supported op, the printer, the verifier.
#include <torch/csrc/jit/ir/ir.h>

#include <torch/csrc/jit/ir/irparser.h>

#include "src/error.h"
#include "src/graph_constants.h"
#include "src/ir.h"
#include "tests/test_util.h"

using tftest::contains_in_order;
using tftest::module_returning;

namespace {

std::string ir_of(const torch::jit::Module& m, const std::vector<c10::IValue>& inputs) {
  auto c = torchfuse::compile(m, tftest::quiet_options());
  return c.explain(inputs).ir_before;
}

struct OpCase {
  std::string expr;                 // TorchScript, over x and y (float32 [4, 8]) and b (bool [4, 8])
  std::vector<std::string> ir;      // expected IR op names, in order
};

class ConvertOp : public ::testing::TestWithParam<OpCase> {};

TEST_P(ConvertOp, BecomesIrOps) {
  const auto& p = GetParam();
  auto m = module_returning("x, y, b", p.expr);
  const auto x = torch::randn({4, 8});
  const auto y = torch::rand({4, 8}) + 0.5;
  const auto b = torch::rand({4, 8}) > 0.5;
  const std::string ir = ir_of(m, {x, y, b});
  std::vector<std::string> needles;
  for (const auto& op : p.ir) needles.push_back(" = " + op);
  EXPECT_TRUE(contains_in_order(ir, needles));
  EXPECT_EQ(ir.find("= aten::"), std::string::npos) << "an op stayed opaque:\n" << ir;
}

INSTANTIATE_TEST_SUITE_P(
    EveryOp, ConvertOp,
    ::testing::Values(
        OpCase{"x + y", {"add("}}, OpCase{"torch.add(x, y, alpha=2)", {"mul(", "add("}},
        OpCase{"x - y", {"sub("}}, OpCase{"torch.sub(x, y, alpha=0.5)", {"mul(", "sub("}},
        OpCase{"x + 2", {"add(%0, 2)"}}, OpCase{"1.5 - x", {"neg(%0)", "add(%"}}, OpCase{"x * y", {"mul("}},
        OpCase{"x / y", {"div("}}, OpCase{"torch.div(x, y, rounding_mode='floor')", {"div_floor("}},
        OpCase{"torch.div(x, y, rounding_mode='trunc')", {"div_trunc("}}, OpCase{"-x", {"neg("}},
        OpCase{"torch.abs(x)", {"abs("}}, OpCase{"torch.exp(x)", {"exp("}}, OpCase{"torch.log(y)", {"log("}},
        OpCase{"torch.sqrt(y)", {"sqrt("}}, OpCase{"torch.rsqrt(y)", {"rsqrt("}}, OpCase{"torch.tanh(x)", {"tanh("}},
        OpCase{"torch.sigmoid(x)", {"sigmoid("}}, OpCase{"torch.erf(x)", {"erf("}},
        OpCase{"torch.pow(y, 2.5)", {"pow(%1, 2.5)"}}, OpCase{"y ** 2", {"pow(%1, 2)"}},
        OpCase{"torch.relu(x)", {"relu("}}, OpCase{"torch.gelu(x)", {"gelu("}},
        OpCase{"torch.gelu(x, approximate='tanh')", {"gelu_tanh("}},
        OpCase{"torch.silu(x)", {"silu("}},
        OpCase{"torch.clamp(x, -0.5, 0.5)", {"clamp_min(%0, -0.5)", "clamp_max("}},
        OpCase{"torch.clamp_min(x, 0.1)", {"clamp_min("}}, OpCase{"torch.clamp_max(x, 0.1)", {"clamp_max("}},
        OpCase{"torch.where(b, x, y)", {"where("}}, OpCase{"torch.where(b, x, 0.0)", {"where(%2, %0, 0.0)"}},
        OpCase{"x < y", {"lt[compute=f32]("}}, OpCase{"x <= y", {"le[compute=f32]("}},
        OpCase{"x > 0.5", {"gt[compute=f32](%0, 0.5)"}}, OpCase{"x >= y", {"ge[compute=f32]("}},
        OpCase{"x == y", {"eq[compute=f32]("}}, OpCase{"x != y", {"ne[compute=f32]("}},
        OpCase{"x.to(5)", {"cast[to=f16]("}},  // 5 is torch.float16; C++ define() has no dtype names
        OpCase{"b.float()", {"cast[to=f32]("}}, OpCase{"b.type_as(x)", {"cast[to=f32]("}},
        OpCase{"torch.maximum(x, y)", {"maximum("}}, OpCase{"torch.minimum(x, y)", {"minimum("}},
        OpCase{"torch.reciprocal(y)", {"reciprocal("}}, OpCase{"torch.logical_not(b)", {"logical_not("}}));

TEST(ConvertOp, TypesComeFromProfiling) {
  auto m = module_returning("x, y", "(x + y).to(5) * 2");
  const std::string ir = ir_of(m, {torch::randn({3, 1, 5}), torch::randn({4, 5}).t().contiguous().t()});
  // The [4, 5] input is transposed-then-made-contiguous-then-transposed: its strides show.
  EXPECT_TRUE(contains_in_order(ir, {"graph(%0 : f32[3, 1, 5], %1 : f32[4, 5]{1, 4})", "f32[3, 4, 5] = add(%0, %1)",
                                     "f16[3, 4, 5] = cast[to=f16]", "f16[3, 4, 5] = mul(%8, 2)"}));
}

TEST(ConvertOp, TypePromotionFollowsEager) {
  // int tensor * Python float -> float32; int tensor + int -> int64; bool + bool -> bool.
  auto m = module_returning("i, x", "(i * 1.5, i + 2, x > i)");
  const std::string ir = ir_of(m, {torch::arange(6).reshape({2, 3}), torch::randn({2, 3})});
  EXPECT_TRUE(contains_in_order(ir, {"f32[2, 3] = mul(%0, 1.5)", "i64[2, 3] = add(%0, 2)",
                                     "b8[2, 3] = gt[compute=f32](%1, %0)"}));
}

TEST(ConvertOp, UnknownOpsStayOpaque) {
  auto m = module_returning("x, w", "torch.relu(torch.matmul(x, w) + 1.0)");
  const std::string ir = ir_of(m, {torch::randn({4, 8}), torch::randn({8, 2})});
  EXPECT_TRUE(contains_in_order(ir, {"f32[4, 2] = aten::matmul(%0, %1)", "add(", "relu("}));
}

TEST(Printer, IsStableAndShowsLiterals) {
  auto m = module_returning("x", "torch.clamp(x * 0.1, min=1e-05) + 3");
  const auto x = torch::randn({2, 2});
  const std::string a = ir_of(m, {x});
  const std::string b = ir_of(m, {x});
  EXPECT_EQ(a, b);
  EXPECT_TRUE(contains_in_order(a, {"mul(%0, 0.1)", "clamp_min(%", ", 1e-05)", "add(%", ", 3)", "return (%"}));
}

TEST(Verifier, AcceptsWellFormedGraph) {
  torchfuse::ir::Graph g;
  auto* x = g.add_input(torchfuse::ir::Type::tensor(c10::kFloat, {4, 8}, {8, 1}, c10::Device("cpu")));
  auto* b = g.add_input(torchfuse::ir::Type::tensor(c10::kFloat, {8}, {1}, c10::Device("cpu")));
  auto* n = g.add_node(torchfuse::ir::OpKind::Add, {x, b},
                       {torchfuse::ir::Type::tensor(c10::kFloat, {4, 8}, {8, 1}, c10::Device("cpu"))});
  g.add_output(n->output());
  EXPECT_TRUE(torchfuse::ir::verify(g).empty());
  EXPECT_EQ(torchfuse::ir::to_string(g),
            "graph(%0 : f32[4, 8], %1 : f32[8]) {\n  %2 : f32[4, 8] = add(%0, %1)\n  return (%2)\n}\n");
}

TEST(Verifier, RejectsWrongShapesArityAndTypes) {
  using namespace torchfuse::ir;
  const c10::Device cpu("cpu");
  Graph g;
  auto* x = g.add_input(Type::tensor(c10::kFloat, {4, 8}, {8, 1}, cpu));
  auto* y = g.add_input(Type::tensor(c10::kFloat, {3}, {1}, cpu));
  g.add_node(OpKind::Add, {x, y}, {Type::tensor(c10::kFloat, {4, 8}, {8, 1}, cpu)});        // no broadcast
  g.add_node(OpKind::Mul, {x}, {Type::tensor(c10::kFloat, {4, 8}, {8, 1}, cpu)});           // arity
  g.add_node(OpKind::Lt, {x, x}, {Type::tensor(c10::kFloat, {4, 8}, {8, 1}, cpu)});         // not bool
  g.add_node(OpKind::ReduceSum, {x}, {Type::tensor(c10::kFloat, {8}, {1}, cpu)});           // dims
  const auto problems = verify(g);
  ASSERT_EQ(problems.size(), 4u) << ::testing::PrintToString(problems);
  EXPECT_NE(problems[0].find("do not broadcast"), std::string::npos);
  EXPECT_NE(problems[1].find("expects 2 inputs"), std::string::npos);
  EXPECT_NE(problems[2].find("must be bool"), std::string::npos);
  EXPECT_NE(problems[3].find("does not match the reduced dims"), std::string::npos);
  EXPECT_THROW(verify_or_throw(g, "test"), torchfuse::Error);
}

TEST(Errors, InternalAssertSaysItIsABug) {
  try {
    TORCHFUSE_INTERNAL_ASSERT(1 == 2, "numbers");
    FAIL() << "no throw";
  } catch (const torchfuse::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("torchfuse bug"), std::string::npos) << msg;
    EXPECT_NE(msg.find("test_ir.cpp"), std::string::npos) << msg;
  }
}

}  // namespace

namespace {

// A row read across lines (the shared predicate of stage_transposed_rows and prune_groups).
TEST(IrLayout, RowsAcrossLines) {
  using torchfuse::ir::rows_across_lines;
  EXPECT_TRUE(rows_across_lines({4, 8}, {1, 4}, 1));               // x.t()
  EXPECT_FALSE(rows_across_lines({4, 8}, {8, 1}, 1));              // row-major
  EXPECT_FALSE(rows_across_lines({4, 8}, {16, 2}, 1));             // strided, no dim adjacent
  EXPECT_TRUE(rows_across_lines({2, 4, 8}, {32, 1, 4}, 1));        // transpose(1, 2) of [2, 8, 4]
  EXPECT_TRUE(rows_across_lines({4, 8, 1}, {1, 4, 1}, 2));         // a size-1 trailing dim skipped
  EXPECT_FALSE(rows_across_lines({4, 8, 1}, {1, 4, 1}, 1));        // the row is that size-1 dim alone
  EXPECT_FALSE(rows_across_lines({1, 8}, {1, 1}, 1));              // the adjacent dim has size 1
  EXPECT_FALSE(rows_across_lines({4, 8}, {1, 4}, 2));              // no dim left outside the rows
  EXPECT_FALSE(rows_across_lines({4, 8}, {1}, 1));                 // strides of another rank
}

}  // namespace

// constant_value: a None constant is an engaged None, a graph input nothing (under LibTorch 1.13
// a std::optional<IValue> assigned toIValue's c10::optional held None for it: a non-constant mask
// or scale read as "none given").
TEST(GraphConstants, ConstantValueTellsNoneFromNonConstants) {
  auto g = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%x : Tensor, %m : Tensor?):
  %none : NoneType = prim::Constant()
  %two : int = prim::Constant[value=2]()
  %y : Tensor = aten::mul(%x, %two)
  return (%y, %none, %m)
)IR",
                      g.get());
  const auto outputs = g->outputs();
  const std::optional<c10::IValue> none = torchfuse::constant_value(outputs[1]);
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->isNone());
  EXPECT_FALSE(torchfuse::constant_value(outputs[2]).has_value());  // an input
  EXPECT_FALSE(torchfuse::constant_value(outputs[0]).has_value());  // a computed value
  const std::optional<c10::IValue> two = torchfuse::constant_value(outputs[0]->node()->input(1));
  ASSERT_TRUE(two.has_value() && two->isInt());
  EXPECT_EQ(two->toInt(), 2);
}
