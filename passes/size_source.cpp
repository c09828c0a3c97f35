// The earliest value with a size (see size_source.h).
#include "passes/size_source.h"

#include <torch/csrc/jit/ir/ir.h>

#include "src/ir.h"

namespace torchfuse {

namespace {

// Ops whose result has their first input's sizes on every call, and which fuse: sizes read
// through them come from the input.
bool keeps_sizes(const torch::jit::Node* p) {
  for (const char* kind : {"aten::softmax", "aten::log_softmax", "aten::_softmax", "aten::_log_softmax",
                           "aten::layer_norm", "aten::rms_norm"}) {
    if (is_kind(p, kind)) return true;
  }
  return false;
}

}  // namespace

torch::jit::Value* size_source(const RewriteContext& ctx, torch::jit::Value* x, int64_t d) {
  for (;;) {
    torch::jit::Node* p = x->node();
    const ir::Type* t = ctx.type_of(x);
    if (!t || !t->is_tensor() || d < 0 || d >= t->rank() || t->sizes[d] == 1) return x;
    if (!is_fusible_pointwise(p) && !keeps_sizes(p)) return x;
    torch::jit::Value* next = nullptr;
    for (torch::jit::Value* in : p->inputs()) {
      const ir::Type* ti = ctx.type_of(in);
      if (ti && ti->is_tensor() && ti->rank() == t->rank() && ti->sizes[d] == t->sizes[d]) {
        next = in;
        break;
      }
    }
    if (!next) return x;
    x = next;
  }
}

}  // namespace torchfuse
