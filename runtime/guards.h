// Guards: what a specialization assumes of its inputs, and why a call needs a new one.
#pragma once

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
// Which guard of `now` differs from `before`, in words.
std::string why_recompile(const std::vector<std::string>& now, const std::vector<std::string>& before);

}  // namespace torchfuse
