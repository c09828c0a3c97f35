// Dtype casts moved past the gathers reading them (see sink_casts.h).
#include "passes/sink_casts.h"

#include <string>
#include <vector>

#include <torch/csrc/jit/ir/ir.h>

#include "src/ir.h"

namespace torchfuse {
namespace {

using torch::jit::Node;
using torch::jit::Value;

bool is_gather(const Node* n) { return is_kind(n, "aten::index") || is_kind(n, "aten::index_select"); }

// Why `cast` stays where it is ("" where it moves): a cast on one device, read only as the
// gathered tensor of gathers and by aten::size.
std::string why_cast_stays(const RewriteContext& ctx, const Node* cast) {
  const ir::Type* in = ctx.type_of(cast->input(0));
  const ir::Type* out = ctx.type_of(cast->output());
  if (!in || !out || !in->is_tensor() || !out->is_tensor()) return "its types were not profiled";
  if (in->device != out->device) return "it moves the tensor to another device";
  if (in->sizes != out->sizes) return "it changes the sizes";
  if (in->dtype == out->dtype) return "it changes no dtype";
  bool gathered = false;
  for (const torch::jit::Use& u : cast->output()->uses()) {
    if (is_kind(u.user, "aten::size") || u.user->kind() == c10::prim::device) continue;
    if (!is_gather(u.user) || u.offset != 0) return "its result is read by " + node_name(u.user);
    gathered = true;
  }
  return gathered ? "" : "no gather reads it";
}

// Each gather of the cast is made again reading the cast's input, and the cast again after it
// (fresh nodes: the gather's result changes dtype, and its profiled type must not follow it).
void sink(RewriteContext& ctx, Node* cast) {
  Value* source = cast->input(0);
  std::vector<Node*> users;
  for (const torch::jit::Use& u : cast->output()->uses()) users.push_back(u.user);
  for (Node* user : users) {
    if (is_kind(user, "aten::size") || user->kind() == c10::prim::device) {
      user->replaceInput(0, source);  // the same sizes and device
      continue;
    }
    Node* gather = ctx.graph.createClone(user, [](Value* v) { return v; });
    gather->insertBefore(user);
    gather->replaceInput(0, source);
    Node* after = ctx.graph.createClone(cast, [](Value* v) { return v; });
    after->insertAfter(gather);
    after->replaceInput(0, gather->output());
    after->output()->copyMetadata(user->output());
    ctx.inherit_type(after->output(), user->output());
    ctx.applied("cast " + node_name(cast) + " moved after the gather " + node_name(user) + ": the gather reads %" +
                source->debugName() + ", the cast joins what reads the gather");
    user->output()->replaceAllUsesWith(after->output());
    user->destroy();
  }
}

}  // namespace

void sink_casts(RewriteContext& ctx) {
  std::vector<Node*> casts;
  for (Node* n : ctx.graph.nodes()) {
    if (!is_kind(n, "aten::to") || n->outputs().size() != 1 || n->inputs().empty()) continue;
    bool read_by_gather = false;
    for (const torch::jit::Use& u : n->output()->uses()) read_by_gather = read_by_gather || is_gather(u.user);
    if (!read_by_gather) continue;
    const std::string why = why_cast_stays(ctx, n);
    if (why.empty()) {
      casts.push_back(n);
    } else {
      ctx.refused("cast " + node_name(n) + " stays before its gather: " + why);
    }
  }
  for (Node* n : casts) sink(ctx, n);
}

}  // namespace torchfuse
