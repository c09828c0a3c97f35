#include "src/shape_tensors.h"

#include <map>

#include "src/error.h"

namespace torchfuse {
namespace {

struct Registry {
  std::mutex mu;
  int64_t next_id = 0;
  std::map<int64_t, std::shared_ptr<ShapeTensors>> cuts;
};

Registry& registry() {
  static Registry* r = new Registry();  // outlives the static teardown of compiled modules
  return *r;
}

// Unregisters its id when the last owner lets go.
struct Registration {
  int64_t id;
  ~Registration() {
    auto& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.cuts.erase(id);
  }
};

}  // namespace

std::shared_ptr<const void> register_shape_tensors(std::shared_ptr<ShapeTensors> cut, int64_t* id) {
  auto& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    *id = r.next_id++;
    r.cuts.emplace(*id, std::move(cut));
  }
  return std::shared_ptr<const Registration>(new Registration{*id});
}

std::shared_ptr<ShapeTensors> find_shape_tensors(int64_t id) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.cuts.find(id);
  TORCHFUSE_INTERNAL_ASSERT(it != r.cuts.end(), "no shape tensors registered with id ", id);
  return it->second;
}

}  // namespace torchfuse
