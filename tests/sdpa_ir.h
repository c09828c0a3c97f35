// Hugging Face's "sdpa" attention as tracing records it, for the CPU and GPU tests of the
// attention rewrite's takeover of aten::scaled_dot_product_attention: a boolean causal mask from
// positions (on the query's device), key and value repeated 2x from fewer heads (repeat_kv), one
// scaled_dot_product_attention call; and Hugging Face's ViT, whose boolean mask from positions
// takes every position.
#pragma once

#include <memory>

#include <torch/csrc/jit/ir/irparser.h>

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

}  // namespace tftest
