// The TorchScript operator behind torchfuse::FusionGroup nodes. Each node carries the id of a
// FusedKernel in a process-wide registry; the operator runs that kernel.
#pragma once

#include <memory>

#include <ATen/core/interned_strings.h>

#include "runtime/fused_kernel.h"

namespace torchfuse {
namespace runtime {

c10::Symbol fusion_group_symbol();  // torchfuse::FusionGroup
c10::Symbol kernel_id_attr();       // attr::kernel_id

// Registers the operator with TorchScript; safe to call many times.
void register_fusion_op();

// Kernels are registered while a compiled specialization holds them.
int64_t register_kernel(std::shared_ptr<FusedKernel> kernel);
void unregister_kernel(int64_t id);

}  // namespace runtime
}  // namespace torchfuse
