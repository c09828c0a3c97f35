// TorchScript reductions -> IR (sum, mean, amax, softmax, layer_norm, ...).
#include "src/convert_context.h"

namespace torchfuse {

const std::unordered_map<std::string, Converter>& reduction_converters() {
  static const std::unordered_map<std::string, Converter> table = {};
  return table;
}

}  // namespace torchfuse
