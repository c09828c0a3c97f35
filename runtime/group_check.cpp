// compare_groups: each fusion group's kernel against its own TorchScript ops (its fallback graph)
// on the same inputs, during one fused call (docs/architecture.md, "Checking each group").
#include <ATen/ATen.h>

#include <algorithm>
#include <iomanip>
#include <set>
#include <sstream>

#include "runtime/compare.h"
#include "runtime/compiled_module.h"
#include "runtime/fused_kernel.h"
#include "runtime/group_check.h"
#include "runtime/reference.h"

namespace torchfuse {
namespace {

constexpr size_t kOpsColumn = 40;

// The lowest floating precision the group computes in: the dtypes of its inputs and values.
c10::ScalarType group_working_dtype(const FusionGroup& g) {
  std::vector<c10::ScalarType> dtypes;
  for (const ir::Value* v : g.inputs)
    if (v->type.is_tensor()) dtypes.push_back(v->type.dtype);
  for (const ir::Node* n : g.nodes)
    for (const ir::Value* v : n->outputs)
      if (v->type.is_tensor()) dtypes.push_back(v->type.dtype);
  return runtime::working_dtype(dtypes);
}

GroupComparison row_of(const runtime::FusedKernel& k) {
  GroupComparison row;
  row.group = k.group().id;
  row.kernel_name = k.group().kernel_name;
  row.description = k.group().describe();
  return row;
}

c10::IValue as_tuple(std::vector<c10::IValue> values) { return c10::ivalue::Tuple::create(std::move(values)); }

// Folds the per-output rows of a comparison into the group's row: the largest errors, and the
// first output that fails.
void fold(GroupComparison& row, const ComparisonReport& report) {
  row.compared = true;
  for (size_t i = 0; i < report.outputs.size(); ++i) {
    const OutputComparison& o = report.outputs[i];
    row.max_abs_error = std::max(row.max_abs_error, o.max_abs_error);
    row.max_rel_error = std::max(row.max_rel_error, o.max_rel_error);
    if (i == 0) {
      row.tolerance = o.tolerance;
      row.worst_index = o.worst_index;
    }
    if (o.passed || !row.passed) continue;
    row.passed = false;
    row.problem = o.name + ": " + o.problem;
    row.tolerance = o.tolerance;
    row.worst_index = o.worst_index;
  }
}

// Watches the fused calls of one forward() on this thread and judges each group as it returns,
// before later ops of the graph could write its inputs or outputs.
class GroupChecker : public runtime::GroupProbe {
 public:
  explicit GroupChecker(const Tolerance* tolerance) : tolerance_(tolerance) {}

  void fused_call(const runtime::FusedKernel& k, const std::vector<c10::IValue>& inputs,
                  const std::vector<at::Tensor>& outputs) override {
    seen_.insert(&k);
    rows_.push_back(runtime::judge_group(k, inputs, outputs, tolerance_));
  }

  bool saw(const runtime::FusedKernel* k) const { return seen_.count(k) > 0; }
  std::vector<GroupComparison> take_rows() { return std::move(rows_); }

 private:
  const Tolerance* tolerance_;
  std::vector<GroupComparison> rows_;
  std::set<const runtime::FusedKernel*> seen_;
};

// A group that did not run fused on the call: nothing of its own to compare.
GroupComparison not_run_row(const runtime::FusedKernel& k) {
  GroupComparison row = row_of(k);
  row.note = k.fell_back() ? "runs its ATen fallback for good: " + runtime::first_line_of_error(k.fallback_reason())
                           : "ran its ATen fallback on this call (its inputs differed from the profiled types, "
                             "or its outputs ran out of memory)";
  return row;
}

// Why no group was compared.
std::string nothing_checked(const CompiledModuleImpl& impl, const std::vector<c10::IValue>& inputs, size_t groups) {
  if (groups > 0) return "no fusion group ran fused on this call (each row says why)";
  const std::string why = impl.why_eager(inputs);
  if (!why.empty()) return "no fusion group ran: forward ran eager: " + why;
  return "no fusion groups: nothing in the graph fused for these inputs (explain() lists the refusals)";
}

std::string clip(const std::string& s, size_t width) {
  return s.size() <= width ? s : s.substr(0, width - 3) + "...";
}

std::string index_str(const std::vector<int64_t>& index) {
  std::string s = "[";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  return s + "]";
}

}  // namespace

namespace runtime {

GroupComparison judge_group(const FusedKernel& k, const std::vector<c10::IValue>& inputs,
                            const std::vector<at::Tensor>& outputs, const Tolerance* tolerance) {
  GroupComparison row = row_of(k);
  if (!k.fallback_graph()) {
    row.note = "no ATen fallback to compare with: " + k.no_fallback_why();
    return row;
  }
  c10::IValue expected;
  try {
    expected = as_tuple(k.run_fallback_on(inputs));
  } catch (const std::exception& e) {
    row.passed = false;
    row.problem = "its ATen fallback failed on these inputs: " + first_line_of_error(e.what());
    return row;
  }
  const c10::IValue actual = as_tuple(std::vector<c10::IValue>(outputs.begin(), outputs.end()));
  c10::IValue reference;
  try {
    reference = as_tuple(run_float64_reference(*k.fallback_graph(), inputs));
  } catch (const std::exception& e) {
    // Judged against the fallback alone, with the dtypes' tolerances; the row says why.
    fold(row, compare_outputs(expected, actual, tolerance));
    row.note = "no float64 reference: " + first_line_of_error(e.what());
    return row;
  }
  fold(row, compare_with_reference(expected, actual, reference, tolerance, group_working_dtype(k.group())));
  return row;
}

}  // namespace runtime

const GroupComparison* GroupComparisonReport::first_mismatch() const {
  for (const GroupComparison& g : groups)
    if (!g.passed) return &g;
  return nullptr;
}

bool GroupComparisonReport::checked() const {
  return std::any_of(groups.begin(), groups.end(), [](const GroupComparison& g) { return g.compared; });
}

std::string GroupComparisonReport::to_string() const {
  std::ostringstream os;
  if (groups.empty()) return note.empty() ? "no fusion groups\n" : note + "\n";
  os << std::left << std::setw(7) << "group" << std::setw(28) << "kernel" << " " << std::setw(kOpsColumn + 2) << "ops"
     << std::setw(13) << "max abs err" << std::setw(13) << "max rel err" << std::setw(18) << "tol (rtol/atol)"
     << "verdict\n";
  for (const GroupComparison& g : groups) {
    std::ostringstream tol;
    tol << g.tolerance.rtol << "/" << g.tolerance.atol;
    os << std::left << std::setw(7) << g.group << std::setw(28) << g.kernel_name << " "
       << std::setw(kOpsColumn + 2) << clip(g.description, kOpsColumn) << std::setprecision(3);
    if (g.compared) {
      os << std::setw(13) << g.max_abs_error << std::setw(13) << g.max_rel_error << std::setw(18) << tol.str();
    } else {
      os << std::setw(13) << "-" << std::setw(13) << "-" << std::setw(18) << "-";
    }
    if (!g.passed) {
      os << "FAIL: " << g.problem << (g.worst_index.empty() ? "" : " (worst element " + index_str(g.worst_index) + ")");
    } else {
      os << (g.compared ? "PASS" : "not checked");
    }
    if (!g.note.empty()) os << " (" << g.note << ")";
    os << "\n";
  }
  if (const GroupComparison* bad = first_mismatch()) {
    os << "first mismatch: group " << bad->group << ", " << bad->kernel_name << " (" << bad->description << ")\n";
  } else if (checked()) {
    os << "every group matches its ATen ops\n";
  }
  if (!note.empty()) os << note << "\n";
  return os.str();
}

GroupComparisonReport compare_groups(CompiledModule& compiled, const std::vector<c10::IValue>& inputs,
                                     const Tolerance* tolerance) {
  GroupChecker checker(tolerance);
  {
    const runtime::GroupProbe::Scope watch(&checker);
    compiled.forward(inputs);
  }
  GroupComparisonReport report;
  report.groups = checker.take_rows();
  const auto kernels = compiled.impl_->group_kernels(inputs);
  for (const auto& k : kernels)
    if (!checker.saw(k.get())) report.groups.push_back(not_run_row(*k));
  if (!report.checked()) report.note = nothing_checked(*compiled.impl_, inputs, kernels.size());
  return report;
}

}  // namespace torchfuse
