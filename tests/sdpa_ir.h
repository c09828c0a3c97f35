// Hugging Face's "sdpa" attention as tracing records it, for the CPU and GPU tests of the
// attention rewrite's takeover of aten::scaled_dot_product_attention: a boolean causal mask from
// positions (on the query's device), key and value repeated 2x from fewer heads (repeat_kv), one
// scaled_dot_product_attention call; and Hugging Face's ViT, whose boolean mask from positions
// takes every position.
#pragma once

#include <memory>

#include <torch/csrc/jit/ir/irparser.h>
#include <torch/torch.h>

namespace tftest {

inline std::shared_ptr<torch::jit::Graph> hf_sdpa_causal_gqa_graph() {
  auto g = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%q : Tensor, %k : Tensor, %v : Tensor):
  %none : NoneType = prim::Constant()
  %zero : float = prim::Constant[value=0.]()
  %false : bool = prim::Constant[value=0]()
  %i0 : int = prim::Constant[value=0]()
  %i1 : int = prim::Constant[value=1]()
  %i2 : int = prim::Constant[value=2]()
  %i3 : int = prim::Constant[value=3]()
  %dev : Device = prim::device(%q)
  %t : int = aten::size(%q, %i2)
  %pos : Tensor = aten::arange(%t, %none, %none, %dev, %none)
  %row : Tensor = aten::unsqueeze(%pos, %i1)
  %col : Tensor = aten::unsqueeze(%pos, %i0)
  %kept : Tensor = aten::le(%col, %row)
  %b : int = aten::size(%k, %i0)
  %h : int = aten::size(%k, %i1)
  %s : int = aten::size(%k, %i2)
  %d : int = aten::size(%k, %i3)
  %hg : int = aten::mul(%h, %i2)
  %ex : int[] = prim::ListConstruct(%b, %h, %i2, %s, %d)
  %to : int[] = prim::ListConstruct(%b, %hg, %s, %d)
  %k1 : Tensor = aten::unsqueeze(%k, %i2)
  %k2 : Tensor = aten::expand(%k1, %ex, %false)
  %kr : Tensor = aten::reshape(%k2, %to)
  %v1 : Tensor = aten::unsqueeze(%v, %i2)
  %v2 : Tensor = aten::expand(%v1, %ex, %false)
  %vr : Tensor = aten::reshape(%v2, %to)
  %out : Tensor = aten::scaled_dot_product_attention(%q, %kr, %vr, %kept, %zero, %false, %none, %false)
  return (%out)
)IR",
                      g.get());
  return g;
}

// ViT's "sdpa" attention as tracing records it: a boolean mask q_idx >= 0 from positions (every
// position takes part), expanded over the batch and the keys, given to the call.
inline std::shared_ptr<torch::jit::Graph> hf_sdpa_open_mask_graph() {
  auto g = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%q : Tensor, %k : Tensor, %v : Tensor):
  %none : NoneType = prim::Constant()
  %zero : float = prim::Constant[value=0.]()
  %false : bool = prim::Constant[value=0]()
  %i0 : int = prim::Constant[value=0]()
  %i1 : int = prim::Constant[value=1]()
  %i2 : int = prim::Constant[value=2]()
  %i3 : int = prim::Constant[value=3]()
  %m1 : int = prim::Constant[value=-1]()
  %dev : Device = prim::device(%q)
  %t : int = aten::size(%q, %i2)
  %b : int = aten::size(%q, %i0)
  %pos : Tensor = aten::arange(%t, %none, %none, %dev, %none)
  %p1 : Tensor = aten::unsqueeze(%pos, %i0)
  %p2 : Tensor = aten::unsqueeze(%p1, %i1)
  %p3 : Tensor = aten::unsqueeze(%p2, %i3)
  %open : Tensor = aten::ge(%p3, %i0)
  %sizes : int[] = prim::ListConstruct(%b, %m1, %t, %t)
  %mask : Tensor = aten::expand(%open, %sizes, %false)
  %out : Tensor = aten::scaled_dot_product_attention(%q, %k, %v, %mask, %zero, %false, %none, %false)
  return (%out)
)IR",
                      g.get());
  return g;
}

// BERT's "sdpa" attention as tracing records it: a boolean padding mask from the int64
// attention_mask input (true: the key takes part), expanded over the queries and given to every
// layer's scaled_dot_product_attention call (two here, the second reading the first's output).
inline std::shared_ptr<torch::jit::Graph> sdpa_shared_bool_mask_graph() {
  auto g = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%q : Tensor, %k : Tensor, %v : Tensor, %am : Tensor):
  %none : NoneType = prim::Constant()
  %zero : float = prim::Constant[value=0.]()
  %false : bool = prim::Constant[value=0]()
  %i1 : int = prim::Constant[value=1]()
  %i2 : int = prim::Constant[value=2]()
  %m1 : int = prim::Constant[value=-1]()
  %bool : int = prim::Constant[value=11]()
  %i0 : int = prim::Constant[value=0]()
  %t : int = aten::size(%q, %i2)
  %kept : Tensor = aten::to(%am, %bool, %false, %false, %none)
  %k1 : Tensor = aten::unsqueeze(%kept, %i1)
  %k2 : Tensor = aten::unsqueeze(%k1, %i1)
  %bq : int = aten::size(%am, %i0)
  %sizes : int[] = prim::ListConstruct(%bq, %m1, %t, %t)
  %mask : Tensor = aten::expand(%k2, %sizes, %false)
  %o1 : Tensor = aten::scaled_dot_product_attention(%q, %k, %v, %mask, %zero, %false, %none, %false)
  %out : Tensor = aten::scaled_dot_product_attention(%o1, %k, %v, %mask, %zero, %false, %none, %false)
  return (%out)
)IR",
                      g.get());
  return g;
}

// Its inputs: q, k, v [2, 3, 8, 16] and a 0/1 int64 mask [2, 8] whose second row masks every key
// (every score row of that batch fully masked) and whose first masks the last two.
inline std::vector<c10::IValue> sdpa_shared_bool_mask_inputs(c10::Device device, c10::ScalarType dtype) {
  const auto o = torch::TensorOptions().device(device).dtype(dtype);
  at::Tensor am = torch::ones({2, 8}, torch::TensorOptions().device(device).dtype(torch::kLong));
  am.index_put_({0, torch::indexing::Slice(6, 8)}, 0);
  am.index_put_({1}, 0);
  return {torch::randn({2, 3, 8, 16}, o), torch::randn({2, 3, 8, 16}, o), torch::randn({2, 3, 8, 16}, o), am};
}

}  // namespace tftest
