// torchfuse::attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, float scale,
// bool is_causal, Tensor? masked_rows=None) -> Tensor: what passes/rewrite_attention.h puts in
// place of attention spelled out op by op. softmax(query @ key^T * scale + mask) @ value, with
//  - attn_mask additive (the scores' dtype) or boolean (true: the position takes part), and
//    broadcastable to the scores' shape;
//  - rows whose every position is masked out giving NaN, as eager's softmax over all -inf does:
//    masked_rows when given (torchfuse::fully_masked_rows(attn_mask), computed once for all the
//    calls sharing a mask), else computed from the mask.
// LibTorch 2.1 and later run ATen's scaled_dot_product_attention (flash, memory-efficient or
// cuDNN kernels, chosen by ATen); older LibTorch (1.13) the same math through matmul and softmax.
#pragma once

#include <ATen/core/symbol.h>

namespace torchfuse {
namespace runtime {

c10::Symbol attention_symbol();

}  // namespace runtime
}  // namespace torchfuse
