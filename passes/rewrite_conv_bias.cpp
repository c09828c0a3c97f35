// Convolution bias moved to the fused kernel after the convolution (see rewrite_conv_bias.h).
//
// Why: ATen's cuDNN convolution computes without the bias and then adds it with a broadcast add
// of its own (measured on an H200, PyTorch 2.11: a ResNet-50 call ran 53 such adds, one per
// convolution, in float32 and in bfloat16). Where the result goes to a fused kernel anyway (the
// ReLU after a folded batch norm, a residual add), that add joins it for free. A result read by
// anything else (a pooling op, another convolution) keeps its bias in the convolution: moved out,
// the add would be a kernel of its own again.
//
// Values: ATen rounds the convolution's result, then rounds result + bias once; the fused kernel
// rounds the convolution's result, then adds the bias in float registers with its readers' ops and
// rounds once at the end. Where a reader follows (a residual add), the fused result is rounded
// once fewer than ATen's.
#include "passes/rewrite_conv_bias.h"

#include <algorithm>
#include <string>
#include <vector>

#include <torch/csrc/jit/ir/ir.h>

#include "src/convert_context.h"
#include "src/error.h"
#include "src/graph_constants.h"
#include "src/ir.h"

namespace torchfuse {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// Every convolution overload reads (input, weight, bias?, ...): the bias is input 2.
bool is_convolution(const Node* n) {
  static const char* kinds[] = {"aten::conv1d",           "aten::conv2d",           "aten::conv3d",
                                "aten::_convolution",     "aten::convolution",      "aten::conv_transpose1d",
                                "aten::conv_transpose2d", "aten::conv_transpose3d"};
  for (const char* k : kinds)
    if (is_kind(n, k)) return n->inputs().size() > 2 && n->outputs().size() == 1 && !n->input(2)->mustBeNone();
  return false;
}

// The uses of `v` that read its elements (not its sizes: aten::size, aten::dim read the same from
// the convolution without its bias).
std::vector<torch::jit::Use> value_readers(const Value* v) {
  std::vector<torch::jit::Use> readers;
  for (const torch::jit::Use& u : v->uses())
    if (!is_kind(u.user, "aten::size") && !is_kind(u.user, "aten::dim")) readers.push_back(u);
  return readers;
}

// A layer norm's input (its first), whose row kernel takes elementwise ops before it.
bool is_norm_input(const torch::jit::Use& u) { return is_kind(u.user, "aten::layer_norm") && u.offset == 0; }

// The permute a result is read through alone (a ConvNeXt block's depthwise convolution, read as
// [N, H, W, C] by its layer norm): the bias add moves after it, where the norm's kernel reads it.
Node* sole_permute(const Node* conv) {
  const std::vector<torch::jit::Use> uses = value_readers(conv->output());
  if (uses.size() != 1 || uses[0].offset != 0 || !is_kind(uses[0].user, "aten::permute")) return nullptr;
  const std::optional<c10::IValue> dims = constant_value(uses[0].user->input(1));
  return dims && dims->isIntList() ? uses[0].user : nullptr;
}

// Why the bias stays in the convolution ("" where it moves).
std::string why_bias_stays(const RewriteContext& ctx, const Node* conv, const std::optional<at::Tensor>& bias) {
  if (!bias) return "its bias is not a frozen tensor";
  const ir::Type* w = ctx.type_of(conv->input(1));
  const ir::Type* out = ctx.type_of(conv->output());
  if (!w || !out || !w->is_tensor() || !out->is_tensor()) return "its operands' types were not profiled";
  if (bias->dim() != 1 || w->rank() < 3) return "not a 1-D bias and a weight with spatial dims";
  if (bias->scalar_type() != out->dtype) return "its bias's dtype differs from its result's";
  if (!is_floating(out->dtype)) return "its result is not floating point";
  const Node* permute = sole_permute(conv);
  const std::vector<torch::jit::Use> uses = value_readers(permute ? permute->output() : conv->output());
  if (uses.empty()) return "its result is not read";
  for (const torch::jit::Use& u : uses) {
    if (!is_fusible_pointwise(u.user) && !(permute && is_norm_input(u)))
      return "its result is read by " + node_name(u.user) + ", where the bias add would be a kernel of its own";
  }
  return "";
}

void split(RewriteContext& ctx, Node* conv, const at::Tensor& bias) {
  torch::jit::Graph& graph = ctx.graph;
  torch::jit::WithInsertPoint point(conv);
  Value* none = graph.insertConstant(c10::IValue());  // before the clone that reads it
  Node* bare = graph.insertNode(graph.createClone(conv, [](Value* v) { return v; }));
  bare->replaceInput(2, none);
  Value* product = bare->output();
  product->setType(conv->output()->type());
  ctx.inherit_type(product, conv->output());

  // [C, 1, ...]: one 1 per dim after the channel dim (the weight's spatial dims, or where a
  // permute put the channels), so it broadcasts over batched and unbatched results alike.
  Node* permute = sole_permute(conv);
  int64_t trailing = ctx.type_of(conv->input(1))->rank() - 2;
  if (permute) {
    // The channel dim: 1 of a batched result, 0 of an unbatched one (right before the spatial dims).
    const int64_t rank = ctx.type_of(conv->output())->rank();
    const int64_t c = rank - trailing - 1;
    const std::vector<int64_t> dims = constant_value(permute->input(1))->toIntVector();
    const auto channel = std::find_if(dims.begin(), dims.end(), [&](int64_t d) { return d == c || d == c - rank; });
    TORCHFUSE_INTERNAL_ASSERT(channel != dims.end(), "the permute of ", node_name(conv), " has no channel dim");
    trailing = rank - 1 - (channel - dims.begin());
  }
  std::vector<int64_t> shape = {bias.size(0)};
  shape.insert(shape.end(), static_cast<size_t>(trailing), 1);
  const at::Tensor channel_bias = bias.reshape(shape).contiguous();
  Value* b = graph.insertConstant(channel_bias);
  ctx.set_type(b, ir::Type::tensor(channel_bias.scalar_type(), shape, ir::contiguous_strides(shape),
                                   channel_bias.device()));
  conv->output()->replaceAllUsesWith(product);
  Value* read = permute ? permute->output() : product;  // what the bias is added to
  {
    // After the bias constant (made before the convolution) and the permute, where there is one.
    torch::jit::WithInsertPoint after(permute ? permute->next() : conv);
    Value* sum = graph.insert(c10::aten::add, {read, b});
    ctx.inherit_type(sum, read);
    for (const torch::jit::Use& u : value_readers(read))
      if (u.user != sum->node()) u.user->replaceInput(u.offset, sum);
  }
  conv->destroy();
}

}  // namespace

void rewrite_conv_bias(RewriteContext& ctx) {
  std::vector<Node*> convs;
  for (Node* n : ctx.graph.nodes())
    if (is_convolution(n)) convs.push_back(n);
  for (Node* n : convs) {
    const std::optional<at::Tensor> bias = constant_tensor(n->input(2));
    const std::string why = why_bias_stays(ctx, n, bias);
    if (why.empty()) {
      const bool permuted = sole_permute(n) != nullptr;
      ctx.applied("convolution bias " + node_name(n) + " -> " + std::string(n->kind().toQualString()) +
                  " without bias + aten::add" + (permuted ? " after its permute" : "") + ", fused with its readers");
      split(ctx, n, *bias);
    } else {
      ctx.refused("convolution bias " + node_name(n) + " stays in the convolution: " + why);
    }
  }
}

}  // namespace torchfuse
