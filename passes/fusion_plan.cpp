#include "passes/fusion_plan.h"

#include <map>
#include <sstream>

namespace torchfuse {

const char* schedule_name(Schedule s) {
  switch (s) {
    case Schedule::Pointwise: return "pointwise";
    case Schedule::RowReduction: return "row_reduction";
    case Schedule::ColumnReduction: return "column_reduction";
    case Schedule::FullReduction: return "full_reduction";
  }
  return "?";
}

std::string FusionGroup::describe() const {
  std::string s;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i) s += " -> ";
    s += ir::op_name(nodes[i]->kind);
    // (A cat piece's place along the dim is the profile's: sizes stay out of kernel sources.)
    if (nodes[i]->kind == ir::OpKind::CatPiece) s += ir::shape_str({nodes[i]->dims.at(0), nodes[i]->dims.at(1)});
    else if (ir::is_view(nodes[i]->kind)) s += ir::shape_str(nodes[i]->dims);
  }
  return s;
}

int FusionGroup::local_id(const ir::Value* v) const {
  int id = 0;
  for (const ir::Value* in : inputs) {
    if (in == v) return id;
    ++id;
  }
  for (const ir::Node* n : nodes) {
    for (const ir::Value* out : n->outputs) {
      if (out == v) return id;
      ++id;
    }
  }
  return -1;
}

std::pair<int, int> FusionGroup::cat_piece_of_input(size_t k) const {
  if (k >= input_views.size()) return {-1, -1};
  for (const ViewStep& s : input_views[k]) {
    if (s.kind != ir::OpKind::CatPiece) continue;
    for (size_t c = 0; c < cats.size(); ++c) {
      const auto& ids = cats[c].piece_ids;
      for (size_t j = 0; j < ids.size(); ++j)
        if (ids[j] == s.view_id) return {static_cast<int>(c), static_cast<int>(j)};
    }
  }
  return {-1, -1};
}

std::optional<CatPlaces> place_cat_pieces(const FusionGroup& g, RangeSizes pieces,
                                          std::vector<std::vector<int64_t>>* starts) {
  if (!range_sizes_agree(pieces)) return std::nullopt;
  std::map<int, int64_t> size_of(pieces.begin(), pieces.end());
  CatPlaces places;
  if (starts) starts->clear();
  for (const GroupCat& c : g.cats) {
    int64_t offset = 0;
    std::vector<int64_t> begin;
    for (size_t j = 0; j < c.piece_ids.size(); ++j) {
      const int64_t profiled = c.profiled_sizes[j];
      auto it = size_of.find(c.piece_ids[j]);
      // Every input of the piece broadcast in the dim: the piece is as long as they are, 1.
      const int64_t size = it != size_of.end() ? it->second : 1;
      if (size <= 0 || (size == 1) != (profiled == 1)) return std::nullopt;
      if (j) begin.push_back(offset);
      places[c.piece_ids[j]].offset = offset;
      offset += size;
    }
    for (int id : c.piece_ids) places[id].total = offset;
    if (starts) starts->push_back(std::move(begin));
  }
  return places;
}

std::vector<std::vector<int64_t>> profiled_cat_starts(const FusionGroup& g) {
  std::vector<std::vector<int64_t>> starts;
  for (const GroupCat& c : g.cats) {
    std::vector<int64_t> begin;
    int64_t offset = 0;
    for (size_t j = 0; j < c.profiled_sizes.size(); ++j) {
      if (j) begin.push_back(offset);
      offset += c.profiled_sizes[j];
    }
    starts.push_back(std::move(begin));
  }
  return starts;
}

bool FusionGroup::has_views() const {
  for (const auto& steps : input_views)
    if (!steps.empty()) return true;
  return has_view(nodes);
}

std::string to_string(const ir::Graph& graph, const FusionPlan& plan) {
  std::map<const ir::Node*, int> group_of;
  for (const auto& g : plan.groups)
    for (const ir::Node* n : g.nodes) group_of[n] = g.id;
  std::ostringstream os;
  std::istringstream lines(ir::to_string(graph));
  std::string line;
  // Node lines appear in node order after the header and constants; tag them by matching text.
  std::map<std::string, const ir::Node*> by_text;
  for (const ir::Node* n : graph.nodes()) by_text["  " + ir::to_string(*n)] = n;
  while (std::getline(lines, line)) {
    os << line;
    auto it = by_text.find(line);
    if (it != by_text.end()) {
      auto g = group_of.find(it->second);
      if (g != group_of.end()) os << "   # group " << g->second;
    }
    os << "\n";
  }
  for (const auto& g : plan.groups) {
    os << "group " << g.id << " (" << schedule_name(g.schedule) << ", " << g.pattern << ", domain [";
    for (size_t i = 0; i < g.domain.size(); ++i) os << (i ? ", " : "") << g.domain[i];
    os << "]): inputs(";
    for (size_t i = 0; i < g.inputs.size(); ++i) os << (i ? ", " : "") << "%" << g.inputs[i]->id;
    os << ") outputs(";
    for (size_t i = 0; i < g.outputs.size(); ++i) os << (i ? ", " : "") << "%" << g.outputs[i]->id;
    os << ") ops: " << g.describe() << "\n";
    for (size_t i = 0; i < g.input_views.size() && i < g.inputs.size(); ++i) {
      if (!g.input_views[i].empty()) os << "  input %" << g.inputs[i]->id << " read through " << describe_steps(g.input_views[i]) << "\n";
    }
  }
  return os.str();
}

}  // namespace torchfuse
