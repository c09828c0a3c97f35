// Attention: matmul(q, k^T), scaled, with an optional mask, softmax over the last dim, dropout in
// eval mode, matmul(., v) -> one torchfuse::attention call (runtime/attention_op.cpp), which runs
// ATen's fused scaled-dot-product attention. Patterns whose semantics the call cannot reproduce
// exactly stay as they are, and the reason is reported. An aten::scaled_dot_product_attention
// call (Hugging Face's "sdpa" attention) becomes the same call with its mask as given, so that
// what the rewrite adds around attention (grouped heads read before their repeat, the query's
// layout, the causal check of a mask computed from sizes) applies to it too.
#pragma once

#include "passes/graph_rewrites.h"

namespace torchfuse {

void rewrite_attention(RewriteContext& ctx);

}  // namespace torchfuse
