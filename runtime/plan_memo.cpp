#include "runtime/plan_memo.h"

#include "runtime/fused_kernel.h"

namespace torchfuse {
namespace runtime {

namespace {
constexpr size_t kMaxPlans = 256;
}  // namespace

std::vector<int64_t> PlanMemo::key_of(const CallInputs& call) {
  std::vector<int64_t> key;
  key.reserve(8 + 8 * call.shapes.size());
  key.push_back(call.device.index());
  key.push_back(static_cast<int64_t>(call.domain.size()));
  key.insert(key.end(), call.domain.begin(), call.domain.end());
  for (const codegen::OperandShape& s : call.shapes) {
    // A separator that no size takes (-1 - rank) keeps different splits of the same numbers apart.
    key.push_back(-1 - static_cast<int64_t>(s.sizes.size()));
    key.push_back(s.is_tensor ? static_cast<int64_t>(s.dtype) : -1);
    key.push_back(s.offset);
    key.insert(key.end(), s.sizes.begin(), s.sizes.end());
    key.insert(key.end(), s.strides.begin(), s.strides.end());
  }
  for (const auto& starts : call.cat_starts) {
    key.push_back(-1 - static_cast<int64_t>(starts.size()));
    key.insert(key.end(), starts.begin(), starts.end());
  }
  return key;
}

size_t PlanMemo::Hash::operator()(const std::vector<int64_t>& v) const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the values
  for (int64_t x : v) {
    h ^= static_cast<uint64_t>(x);
    h *= 1099511628211ull;
  }
  return static_cast<size_t>(h);
}

std::shared_ptr<const MemoPlan> PlanMemo::find(const std::vector<int64_t>& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plans_.find(key);
  return it == plans_.end() ? nullptr : it->second;
}

void PlanMemo::store(std::vector<int64_t> key, std::shared_ptr<const MemoPlan> plan) {
  std::lock_guard<std::mutex> lock(mu_);
  if (plans_.size() >= kMaxPlans) plans_.clear();
  plans_.emplace(std::move(key), std::move(plan));
}

}  // namespace runtime
}  // namespace torchfuse
