// Views inside pointwise groups. A pointwise kernel computes one element of the group's output
// domain per thread and reads each input through strides; a view between two ops changes no
// value, only which element is which. So a group with views reads each input through the
// sequence of views between it and the output domain: the runtime applies those steps to the
// input's sizes and strides (apply_view_steps) before the domain is built, and the kernel sees
// ordinary strided inputs. Every value the group computes must reach the outputs through exactly
// one sequence of views (view_paths says where that fails); an input may be read through several
// when views of it begin each (InputRead).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>

#include "src/ir.h"

namespace torchfuse {

// One view applied to an input on its way to the output domain.
struct ViewStep {
  ir::OpKind kind = ir::OpKind::Permute;  // an ir::is_view kind
  std::vector<int64_t> dims;              // as ir::Node::dims
  int64_t rank = 0;                       // the IR rank of the value the view applies to
  std::vector<int64_t> in_sizes;          // its profiled sizes (plan-time checks, messages)
  // The view's output value id: inputs read through one range or select node must see one size
  // of its dim (RangeSizes). Not compared: equal steps are the same index map.
  int view_id = -1;
  // Entries of `dims` that ints computed at run time give (ir::Node::dim_operands): the int
  // values, parallel to dims (null for a constant), or empty. `dims` holds their profiled
  // values; finalize_groups sets `dim_inputs`, the group input each call's value comes from
  // (-1 for a constant), and the runtime reads them there (with_call_dims).
  std::vector<const ir::Value*> dim_values;
  std::vector<int> dim_inputs;
  bool runtime_dims() const { return !dim_values.empty(); }
  // (A cat piece is compared by its view id too: its place in the dim comes from the sizes of
  // its cat's other pieces, per call.)
  bool operator==(const ViewStep& o) const {
    return kind == o.kind && dims == o.dims && rank == o.rank && in_sizes == o.in_sizes && dim_values == o.dim_values &&
           (kind != ir::OpKind::CatPiece || view_id == o.view_id);
  }
  bool operator!=(const ViewStep& o) const { return !(*this == o); }
};
ViewStep view_step_of(const ir::Node& view);
// "permute[0, 2, 1]", steps joined by " -> ".
std::string describe_steps(const std::vector<ViewStep>& steps);

// Applies `steps` to a tensor's sizes, strides and storage offset (in elements, added to), in
// order: before each step the tensor is left-padded with size-1, stride-0 dims to the step's
// rank (broadcasting aligns ranks that way); then permute reorders, unsqueeze inserts size 1 /
// stride 0, squeeze drops a size-1 dim, flatten merges dims [s, e] into one (a merge needs
// stride[i] == stride[i+1] * size[i+1] for each pair of adjacent dims of size > 1 in the range);
// slice, narrow, chunk and split take their range of the dim (ir::view_range: the offset moves
// to its start, the stride times the step), select one index of it (the offset moves there, the
// dim goes away), expand grows size-1 dims to stride 0, contiguous changes nothing. A dim of
// size 1 that the step's profiled input has longer is the tensor broadcast there: a range or an
// index of it is that one element again. Returns false, leaving the outputs unspecified, where
// the call cannot read through the steps as eager would compute them: strides that do not merge,
// a squeezed dim not of size 1, a higher rank than a step expects, a range or index eager
// rejects (out of range, another number of pieces), an expand of a dim neither 1 nor the target,
// or a range whose length is 0, 1 or more where the profile's was another of these (the fusion
// plan relies on the profile's size-1 dims, which the guards pin for inputs, not for ranges).
// `seen`, when given, gets the size each range or select step found in its dim (RangeSizes).
using RangeSizes = std::vector<std::pair<int, int64_t>>;  // (ViewStep::view_id, size)
// Where a cat piece (a CatPiece step, by its view id) lies in its cat's dim on one call: its
// first index there and the cat's size along the dim (place_cat_pieces in fusion_plan.h).
struct CatPlace {
  int64_t offset = 0;
  int64_t total = 0;
};
using CatPlaces = std::map<int, CatPlace>;
// A cat piece step moves the offset back by the piece's place (the tensor, indexed by the cat's
// index along the dim, is read only in the piece's range: the kernel picks the piece per
// element) and gives the dim the cat's size; a tensor broadcast in that dim stays broadcast.
// Without `places` the profile's place (the step's dims) is taken; with them, a piece missing
// from them does not fit.
bool apply_view_steps(const std::vector<ViewStep>& steps, std::vector<int64_t>& sizes, std::vector<int64_t>& strides,
                      int64_t& offset, RangeSizes* seen = nullptr, const CatPlaces* places = nullptr);
// The size the first cat piece on `steps` has in its cat's dim, read from a tensor of `sizes`
// and `strides` read through them (the steps before the piece applied), added to `pieces` as
// (view id, size); nothing when there is no piece on the path or the tensor is broadcast in
// that dim. False where the steps before the piece do not fit (as apply_view_steps).
bool cat_piece_size(const std::vector<ViewStep>& steps, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                    RangeSizes& pieces);
// The dim of the output domain (of rank `domain_rank`) that dim `dim` of a value of rank `rank`
// becomes through `steps`, or nullopt where a step takes a range of it, selects it, squeezes or
// merges it (`why` says which).
std::optional<int64_t> dim_through_steps(int64_t dim, int64_t rank, const std::vector<ViewStep>& steps,
                                         int64_t domain_rank, std::string* why = nullptr);
// Do the inputs read through one range or select step (one view_id) see one size of its dim?
// Eager broadcasts them against each other before the view and raises where they differ; a
// range taken of each would hide that (x[:, :4] of [4, 10] + [4, 12] inputs), so such a call
// falls back and eager raises. (Inputs broadcast in that dim record nothing.)
bool range_sizes_agree(RangeSizes seen);

// The steps with each run-time dim taken from the call's values (`values[dim_inputs[j]]`, an
// int); false when one is not an int.
bool with_call_dims(std::vector<ViewStep>& steps, const std::vector<c10::IValue>& values);
// Do the call's sizes after the views have the profiled ones' size-1 and size-0 dims? The plan
// rests on them; the guards pin them for the inputs, not for sizes computed at run time.
bool same_size_classes(const std::vector<int64_t>& call, const std::vector<int64_t>& profiled);

// One path a group input is read through into the output domain.
struct InputRead {
  std::vector<ViewStep> steps;
  // The values whose register this read is: the input itself (where ops read it directly), or
  // the outputs of the views of it that begin the path (the pieces of a, b = x.chunk(2): one
  // input read through two paths, each a kernel operand of its own).
  std::vector<const ir::Value*> binds;
};

// The views of a set of nodes that would be one group (topological order).
struct ViewPaths {
  // For each node, the views from its output to the group's output domain.
  std::map<const ir::Node*, std::vector<ViewStep>> after;
  // For each tensor input (values read but not computed by the nodes), the paths it is read
  // through to the output domain, one per distinct sequence of views, in first-use order.
  std::map<const ir::Value*, std::vector<InputRead>> input_reads;
  // The broadcast of the shapes in the output domain (nodes with no views after them).
  std::vector<int64_t> domain;
  // For each Cat node: the output-domain dim its pieces are laid along.
  std::map<const ir::Node*, int64_t> cat_dims;
  // Why the nodes cannot be one group with views ("" when they can).
  std::string why_not;
};
// `escapes(v)`: v is needed outside the nodes (a graph output or read by another node).
ViewPaths view_paths(const std::vector<const ir::Node*>& nodes, const std::function<bool(const ir::Value*)>& escapes);
bool has_view(const std::vector<const ir::Node*>& nodes);

}  // namespace torchfuse
