// The result of the fusion passes: groups of IR nodes that become one kernel each. Passes
// record their decisions here and leave the IR graph untouched.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "passes/view_steps.h"
#include "src/ir.h"

namespace torchfuse {

enum class Schedule { Pointwise, RowReduction, ColumnReduction, FullReduction };
const char* schedule_name(Schedule s);
// The one of four things that belongs to schedule `s` (registries of per-schedule objects).
template <typename T>
const T& by_schedule(Schedule s, const T& pointwise, const T& row, const T& column, const T& full) {
  switch (s) {
    case Schedule::Pointwise: return pointwise;
    case Schedule::RowReduction: return row;
    case Schedule::ColumnReduction: return column;
    case Schedule::FullReduction: return full;
  }
  return pointwise;  // (unreachable: every enumerator is handled)
}

// A cat in a pointwise group (ir::OpKind::Cat): its pieces are laid along one dim of the
// group's output domain, and the kernel reads, for each element, the piece whose range holds
// its index there.
struct GroupCat {
  const ir::Node* node = nullptr;       // the Cat
  int64_t domain_dim = 0;               // the output-domain dim it concatenates along
  std::vector<int> piece_ids;           // each piece's CatPiece view id (ViewStep::view_id)
  std::vector<int64_t> profiled_sizes;  // each piece's size along the dim in the profile
};

struct FusionGroup {
  int id = -1;
  Schedule schedule = Schedule::Pointwise;
  std::vector<const ir::Node*> nodes;     // topological order
  std::vector<const ir::Value*> inputs;   // tensors and runtime scalars read, in first-use order (see input_binds)
  std::vector<const ir::Value*> outputs;  // values used after the group, in definition order
  std::vector<int64_t> domain;            // the iteration shape (pointwise: the output shape)
  // Per input (parallel to `inputs`): the views between it and the output domain, which the
  // runtime applies to its sizes and strides (apply_view_steps); empty without views.
  std::vector<std::vector<ViewStep>> input_views;
  // What the group computes, for kernel names ("softmax", "mul_sigmoid"; group_pattern), set by
  // finalize_groups. Each kernel's name is tf_<pattern>_<hash of its source> (codegen/kernel_name.h).
  std::string pattern;
  // The name of the group's kernel for the profiled types, which logs, stats and errors call the
  // group by; set by runtime::FusedKernel when it generates that kernel ("" before).
  std::string kernel_name;
  // Per input (parallel to `inputs`): the IR values its kernel operand stands for (InputRead::
  // binds); empty for the input itself. A value read through several view paths is several
  // inputs, one per path (a, b = x.chunk(2): x twice, once per piece).
  std::vector<std::vector<const ir::Value*>> input_binds;
  // The group's cats, in node order (pointwise groups only).
  std::vector<GroupCat> cats;
  // The cat and piece input k is read through (a CatPiece step on its path), or {-1, -1}.
  std::pair<int, int> cat_piece_of_input(size_t k) const;
  bool has_views() const;
  // The value's number within the group: inputs 0, 1, ... in order, then the nodes' outputs in
  // node order; -1 for any other value. Generated identifiers use it (cache3), never IR ids,
  // so that a kernel's code does not depend on how the graph numbers its values.
  int local_id(const ir::Value* v) const;
  // One line: "add -> gelu -> add" ("relu -> permute[0, 2, 1] -> mul" with views).
  std::string describe() const;
};

struct FusionPlan {
  std::vector<FusionGroup> groups;
  std::vector<std::string> refusals;  // every refused fusion, with its reason
  std::map<int, std::vector<std::string>> refusals_by_node;  // IR node id -> the refusals naming it
};

// Where each cat piece of `g` lies on one call, from the sizes its inputs give the pieces
// (cat_piece_size on each input's path): nullopt where the call does not fit the group, which
// then runs its fallback (inputs of one piece disagree on its size, as eager's broadcast would
// raise; a piece of 0 elements along the dim, or of 1 where the profile's was longer or the
// other way round: the plan's broadcasting rests on which sizes are 1). `starts`, when given,
// gets per cat the start of each piece after the first along the dim.
std::optional<CatPlaces> place_cat_pieces(const FusionGroup& g, RangeSizes pieces,
                                          std::vector<std::vector<int64_t>>* starts = nullptr);
// Those starts on the profiled sizes.
std::vector<std::vector<int64_t>> profiled_cat_starts(const FusionGroup& g);

// The IR with each node tagged by its group: "  %5 : f32[4] = add(%3, %4)   # group 0".
std::string to_string(const ir::Graph& graph, const FusionPlan& plan);

}  // namespace torchfuse
