// View ops whose sizes come from elsewhere, spelled as view / reshape with a list of sizes:
//   x.unflatten(d, sizes)  -> x.view([x.size(0), ..., *sizes, ..., x.size(r - 1)])
//   x.view_as(y)           -> x.view([y.size(0), ..., y.size(r - 1)])
//   x.reshape_as(y)        -> x.reshape([y.size(0), ..., y.size(r - 1)])
// The converters fuse view and reshape with sizes the graph computes per call (size arithmetic),
// so these join their neighbours' kernels instead of cutting the chain. The ranks are the
// profile's (the specialization's guards pin them). Values never change: eager's view_as is
// view(other.size()), and unflatten is the view its sizes describe (sizes that do not fit the dim
// raise in the profile's eager run already, as the view would on a later call).
#pragma once

#include "passes/graph_rewrites.h"

namespace torchfuse {

void spell_view_likes(RewriteContext& ctx);

}  // namespace torchfuse
