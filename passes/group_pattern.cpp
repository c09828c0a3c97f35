#include "passes/group_pattern.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <vector>

namespace torchfuse {
namespace {

constexpr size_t kMaxParts = 3;

// Ops that say little about a group beside others: arithmetic, casts and views.
bool is_plain(const std::string& part) {
  static const std::set<std::string> plain = {
      "add",  "sub",    "rsub",   "mul",      "div",     "true_divide", "neg",       "to",   "type_as",
      "float", "half",  "bfloat16", "double", "contiguous", "permute", "transpose", "t",    "view",
      "reshape", "flatten", "unsqueeze", "squeeze"};
  return plain.count(part) > 0;
}

std::string part_of(const ir::Node* n) {
  return pattern_part(n->origin_op.empty() ? ir::op_name(n->kind) : n->origin_op);
}

void add_distinct(std::vector<std::string>& parts, const std::string& part) {
  if (part.empty() || std::find(parts.begin(), parts.end(), part) != parts.end()) return;
  parts.push_back(part);
}

// The first kMaxParts parts joined by '_', as many as fit kMaxPatternLength (the first one cut).
std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size() && i < kMaxParts; ++i) {
    const std::string next = out.empty() ? parts[i] : out + "_" + parts[i];
    if (next.size() > kMaxPatternLength) break;
    out = next;
  }
  if (out.empty() && !parts.empty()) out = parts.front().substr(0, kMaxPatternLength);
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "fused" : out;
}

}  // namespace

std::string pattern_part(const std::string& op) {
  std::string out;
  for (char c : op) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      out += static_cast<char>(std::tolower(u));
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

std::string group_pattern(const FusionGroup& g) {
  std::vector<std::string> all;
  std::vector<std::string> reductions;
  for (const ir::Node* n : g.nodes) {
    add_distinct(all, part_of(n));
    if (ir::along_dims(n->kind)) add_distinct(reductions, part_of(n));
  }
  if (!reductions.empty()) return join(reductions);
  if (all.size() <= kMaxParts) return join(all);
  std::vector<std::string> telling;
  for (const std::string& p : all)
    if (!is_plain(p)) telling.push_back(p);
  return join(telling.empty() ? all : telling);
}

}  // namespace torchfuse
