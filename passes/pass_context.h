// What every fusion pass sees: the IR (read-only), the plan being built, options and logs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "passes/fusion_plan.h"
#include "src/ir.h"
#include "src/logging.h"

namespace torchfuse {

struct PassContext {
  const ir::Graph& graph;
  FusionPlan plan;
  int min_group_size = 2;
  // Column groups reading more element-input bytes than this are cut at their reductions
  // (passes/cut_column_epilogues.h); 0: never.
  int64_t cut_column_bytes = 0;
  // Whether fuse_siblings merges sibling groups (CompileOptions::fuse_siblings).
  bool fuse_siblings = false;
  LogSwitches logs;

  PassContext(const ir::Graph& g, int min_size, LogSwitches l) : graph(g), min_group_size(min_size), logs(l) {}
  // Records a refused fusion and logs it under the "fusion" switch. `node_ids`: the IR nodes it
  // concerns (strict mode names them when they end up unfused).
  void refuse(const std::string& why, const std::vector<int>& node_ids);
};

}  // namespace torchfuse
