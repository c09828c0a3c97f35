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
    if (ir::is_view(nodes[i]->kind)) s += ir::shape_str(nodes[i]->dims);
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
