#include "runtime/guards.h"

#include <c10/core/GradMode.h>

#include "src/frontend.h"
#include "src/ir.h"

namespace torchfuse {
namespace {

// What a specialization assumes of one input: the guard.
std::string guard_of(const c10::IValue& iv) {
  // Containers are guarded element by element (a dtype or requires_grad inside a list counts).
  auto joined = [](const char* open, const auto& elements, const char* close) {
    std::string g = open;
    for (const auto& e : elements) g += guard_of(e) + ", ";
    return g + close;
  };
  if (iv.isTuple()) return joined("(", iv.toTupleRef().elements(), ")");
  if (iv.isList()) return joined("[", iv.toListRef(), "]");
  if (iv.isGenericDict()) {
    std::string g = "{";
    for (const auto& entry : iv.toGenericDict()) g += guard_of(entry.key()) + ": " + guard_of(entry.value()) + ", ";
    return g + "}";
  }
  if (!iv.isTensor() || !iv.toTensor().defined()) return type_of_ivalue(iv).str();
  const at::Tensor& t = iv.toTensor();
  std::string g = std::string(ir::dtype_short_name(t.scalar_type())) + " rank " + std::to_string(t.dim()) + " ";
  g += t.device().is_cuda() ? "cuda:" + std::to_string(t.device().index()) : std::string(c10::DeviceTypeName(t.device().type(), true));
  // Which dims are size 1 (they broadcast) or 0.
  g += " dims ";
  for (int64_t s : t.sizes()) g += s == 1 ? '1' : s == 0 ? '0' : 'n';
  // The memory layout class.
  if (t.is_contiguous()) g += " contiguous";
  else if (t.dim() == 4 && t.is_contiguous(at::MemoryFormat::ChannelsLast)) g += " channels_last";
  else g += " strided";
  if (t.requires_grad() && c10::GradMode::is_enabled()) g += " requires_grad";
  return g;
}

}  // namespace

bool tensor_guard_keys(const std::vector<c10::IValue>& inputs, std::vector<TensorGuardKey>& keys) {
  keys.clear();
  keys.reserve(inputs.size());
  const bool grad_mode = c10::GradMode::is_enabled();
  for (const c10::IValue& iv : inputs) {
    if (!iv.isTensor()) return false;
    const at::Tensor& t = iv.toTensor();
    if (!t.defined() || t.dim() > 64) return false;
    TensorGuardKey k;
    k.dtype = static_cast<int16_t>(t.scalar_type());
    k.device_type = static_cast<int8_t>(t.device().type());
    k.device_index = static_cast<int16_t>(t.device().index());
    k.dim = static_cast<int32_t>(t.dim());
    const c10::IntArrayRef sizes = t.sizes();
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] == 1) k.ones |= uint64_t{1} << d;
      if (sizes[d] == 0) k.zeros |= uint64_t{1} << d;
    }
    // As guard_of classes them.
    k.layout = t.is_contiguous() ? 0 : (t.dim() == 4 && t.is_contiguous(at::MemoryFormat::ChannelsLast)) ? 1 : 2;
    k.requires_grad = t.requires_grad() && grad_mode;
    keys.push_back(k);
  }
  return true;
}

std::vector<std::string> input_guards(const std::vector<c10::IValue>& inputs) {
  std::vector<std::string> guards;
  for (const auto& iv : inputs) guards.push_back(guard_of(iv));
  return guards;
}

std::string input_signature(const std::vector<c10::IValue>& inputs) {
  std::string sig;
  for (const auto& g : input_guards(inputs)) sig += g + "; ";
  return sig;
}

std::string why_recompile(const std::vector<std::string>& now, const std::vector<std::string>& before) {
  for (size_t i = 0; i < now.size() && i < before.size(); ++i) {
    if (now[i] != before[i]) return "input " + std::to_string(i) + " is '" + now[i] + "', was '" + before[i] + "'";
  }
  return "first call";
}

}  // namespace torchfuse
