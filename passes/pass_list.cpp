#include "passes/pass_list.h"

#include "passes/cut_column_epilogues.h"
#include "passes/finalize_groups.h"
#include "passes/fuse_pointwise.h"
#include "passes/fuse_reductions.h"
#include "passes/prune_groups.h"

namespace torchfuse {

void PassContext::refuse(const std::string& why, const std::vector<int>& node_ids) {
  plan.refusals.push_back(why);
  for (int id : node_ids) plan.refusals_by_node[id].push_back(why);
  if (logs.fusion) log_info("fusion: " + why);
}

namespace {

struct Pass {
  const char* name;
  void (*run)(PassContext&);
};

// Order matters:
//  1. fuse_reductions seeds groups around each reduction (prologue, epilogue), so that
//  2. fuse_pointwise only grows groups over the remaining pointwise chains and never pulls a
//     reduction's prologue away from it. Under CompileOptions::fuse_siblings it merges sibling
//     groups between two rounds of growth (passes/fuse_siblings.h).
//  3. prune_groups drops groups too small to gain anything (their ops run through ATen).
//  4. cut_column_epilogues parts large column groups at their reductions after pruning: the
//     epilogue it cuts off (often one subtract) runs faster as a group than in ATen.
//  5. finalize_groups computes each group's inputs, outputs, domain and kernel name, and must
//     run last: the others change group membership.
const Pass kPasses[] = {
    {"fuse_reductions", fuse_reductions},
    {"fuse_pointwise", fuse_pointwise},
    {"prune_groups", prune_groups},
    {"cut_column_epilogues", cut_column_epilogues},
    {"finalize_groups", finalize_groups},
};

}  // namespace

void run_fusion_passes(PassContext& ctx) {
  for (const Pass& pass : kPasses) {
    pass.run(ctx);
    if (ctx.logs.passes) log_info(std::string("IR after ") + pass.name + ":\n" + to_string(ctx.graph, ctx.plan));
  }
}

}  // namespace torchfuse
