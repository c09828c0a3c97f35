// Guards: what a specialization assumes of its inputs, and why a call needs a new one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>

namespace torchfuse {

// The guard of each input: dtype, rank, device, which dims are size 1 (or 0), layout class
// (contiguous, channels_last, strided), requires_grad under grad mode; numbers by kind. Sizes
// themselves are not part of it: kernels take them as arguments.
std::vector<std::string> input_guards(const std::vector<c10::IValue>& inputs);
// The guards joined: what a specialization is keyed by.
std::string input_signature(const std::vector<c10::IValue>& inputs);
// A tensor input's guard as numbers, for the hot path's lookup (no strings made per call): two
// calls whose inputs are all tensors have equal signatures exactly when their keys are equal.
struct TensorGuardKey {
  int16_t dtype = 0;
  int8_t device_type = 0;
  int16_t device_index = 0;
  int8_t layout = 0;  // 0 contiguous, 1 channels_last, 2 strided
  bool requires_grad = false;
  int32_t dim = 0;
  uint64_t ones = 0;   // bit d: dim d has size 1
  uint64_t zeros = 0;  // bit d: dim d has size 0
  bool operator==(const TensorGuardKey& o) const {
    return dtype == o.dtype && device_type == o.device_type && device_index == o.device_index && layout == o.layout &&
           requires_grad == o.requires_grad && dim == o.dim && ones == o.ones && zeros == o.zeros;
  }
};
// The keys of `inputs` in `keys`; false when an input is not a defined tensor of at most 64 dims
// (such calls are looked up by input_signature alone).
bool tensor_guard_keys(const std::vector<c10::IValue>& inputs, std::vector<TensorGuardKey>& keys);

// Which guard of `now` differs from `before`, in words.
std::string why_recompile(const std::vector<std::string>& now, const std::vector<std::string>& before);

}  // namespace torchfuse
