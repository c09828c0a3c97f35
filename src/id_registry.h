// A process-wide table of shared objects by id, for TorchScript nodes that carry an id attribute or
// argument and find their object at run time (fused kernels, shape-tensor cuts). Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace torchfuse {

template <typename T>
class IdRegistry {
 public:
  int64_t add(std::shared_ptr<T> item) {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t id = next_id_++;
    items_.emplace(id, std::move(item));
    return id;
  }
  // Null when no item has the id.
  std::shared_ptr<T> find(int64_t id) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = items_.find(id);
    return it == items_.end() ? nullptr : it->second;
  }
  void remove(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    items_.erase(id);
  }

 private:
  mutable std::mutex mu_;
  int64_t next_id_ = 0;
  std::map<int64_t, std::shared_ptr<T>> items_;
};

}  // namespace torchfuse
