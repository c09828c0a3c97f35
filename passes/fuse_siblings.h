// Sibling (horizontal) fusion: pointwise groups of one iteration shape that read a common value,
// neither reading the other, become one group: one kernel that reads the common values once and
// launches once, where there were two. The two halves of a rotation returned together are the
// case in point (q1 * c - q2 * s and q2 * c + q1 * s). Groups with reductions stay apart, as do
// groups of views alone. fuse_pointwise calls it between two rounds of growing groups towards
// their producers, under PassContext::fuse_siblings (CompileOptions::fuse_siblings).
#pragma once

#include "passes/legality.h"
#include "passes/pass_context.h"

namespace torchfuse {

// Merges sibling clusters of `set` where why_not_fuse_siblings allows, refusing the others with
// the reason; returns how many merges it made.
int merge_siblings(ClusterSet& set, PassContext& ctx);

}  // namespace torchfuse
