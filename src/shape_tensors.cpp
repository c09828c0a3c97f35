#include "src/shape_tensors.h"

#include "src/error.h"
#include "src/id_registry.h"

namespace torchfuse {
namespace {

IdRegistry<ShapeTensors>& registry() {
  static auto* r = new IdRegistry<ShapeTensors>();  // outlives the static teardown of compiled modules
  return *r;
}

// Unregisters its id when the last owner lets go.
struct Registration {
  int64_t id;
  ~Registration() { registry().remove(id); }
};

}  // namespace

std::shared_ptr<const void> register_shape_tensors(std::shared_ptr<ShapeTensors> cut, int64_t* id) {
  *id = registry().add(std::move(cut));
  return std::shared_ptr<const Registration>(new Registration{*id});
}

std::shared_ptr<ShapeTensors> find_shape_tensors(int64_t id) {
  std::shared_ptr<ShapeTensors> cut = registry().find(id);
  TORCHFUSE_INTERNAL_ASSERT(cut, "no shape tensors registered with id ", id);
  return cut;
}

}  // namespace torchfuse
