#include "passes/rewrite_attention.h"

namespace torchfuse {

void rewrite_attention(RewriteContext&) {}

}  // namespace torchfuse
