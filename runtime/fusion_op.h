// The TorchScript operator behind torchfuse::FusionGroup nodes. Each node carries the id of a
// FusedKernel in a process-wide registry; the operator runs that kernel.
#pragma once

#include <exception>
#include <memory>

#include <ATen/core/interned_strings.h>

#include "runtime/fused_kernel.h"

namespace torchfuse {
namespace runtime {

c10::Symbol fusion_group_symbol();  // torchfuse::FusionGroup
c10::Symbol kernel_id_attr();       // attr::kernel_id

// Registers the operator with TorchScript; safe to call many times.
void register_fusion_op();

// The TorchScript interpreter rethrows an operator's exception as a std::runtime_error with a
// traceback. The operator keeps the torchfuse::Error it threw (per thread), so that forward()
// can rethrow it as it was: null when the last error was not the operator's.
std::exception_ptr take_fusion_op_error();

// Kernels are registered while a compiled specialization holds them.
int64_t register_kernel(std::shared_ptr<FusedKernel> kernel);
void unregister_kernel(int64_t id);

}  // namespace runtime
}  // namespace torchfuse
