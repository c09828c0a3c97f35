// Kernel names: `tf_<pattern>_<hash>`, e.g. tf_softmax_3f2a91c0. The pattern says what the group
// computes (FusionGroup::pattern); the hash is 8 hex digits of the kernel's canonical source, so
// different kernels get different names and the same kernel gets the same name whichever graph it
// came from and however that graph numbers its values. Each layout variant of a group has a
// source, and so a name, of its own. Names are valid C identifiers and never depend on pointers.
//
// Generators write kNamePlaceholder wherever the name goes (the entry point, `<name>_params`, the
// `__device__` helpers); name_kernel hashes the finished source and puts the name in.
#pragma once

#include <string>

#include "codegen/kernel.h"

namespace torchfuse {
namespace codegen {

inline const std::string kNamePlaceholder = "TF_KERNEL_NAME";

// The source as the name's hash and the kernel cache key see it: code as it is, comments with
// the numbers that depend on how the graph was numbered dropped (IR value ids "%12" and the
// group id, "fusion group 3"). Generated identifiers never carry those numbers
// (FusionGroup::local_id), and comments change nothing NVRTC builds.
std::string canonical_source(const std::string& source);

// 8 lowercase hex digits of a 64-bit FNV-1a hash of `text`, bits mixed (splitmix64's finalizer).
std::string short_hash(const std::string& text);

// "tf_<pattern>_<short_hash(canonical_source(source))>" for a source written with
// kNamePlaceholder ("fused" for an empty pattern).
std::string kernel_name_for(const std::string& pattern, const std::string& source);

// The kernel of a finished source written with kNamePlaceholder: named (kernel_name_for), the
// placeholder replaced by the name, and a process-unique id.
GeneratedKernel name_kernel(std::string source, const std::string& pattern, int block_size);

}  // namespace codegen
}  // namespace torchfuse
