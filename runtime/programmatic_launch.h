// Programmatic dependent launch (sm_90 and later): a generated kernel launched with it may start
// while the kernel before it in its stream is still finishing. Its blocks wait at their first
// statement (tf_grid_dependency(), codegen/kernel.h) until that kernel has completed and its
// writes are visible, then let the kernel after them launch in turn. What it saves is the gap
// between back-to-back kernels, which at batch 1 inside a CUDA graph is a sizeable part of a
// model's wall time. In a CUDA graph capture the launches become programmatic edges.
//
// Only kernels whose every entry point waits (GeneratedKernel::grid_dependency) are launched so;
// ATen's and cuBLAS's kernels, and torchfuse's cluster and cooperative launches, keep ordinary
// launches and wait for everything before them. Off by default (at batch 1 in CUDA graphs, where
// every torchfuse kernel sits between cuBLAS GEMMs, it measured within a run's spread):
// TORCHFUSE_PDL=1 in the environment turns it on (read once).
#pragma once

#include "runtime/driver_api.h"

namespace torchfuse {
namespace runtime {

// Whether launches of kernels that wait go out with programmatic dependent launch on `device`:
// switched on, a device of compute capability 9.0 or later, and a driver with cuLaunchKernelEx.
bool programmatic_launch(int device);

// The switch, for tests and benchmarks (TORCHFUSE_PDL sets it at first use otherwise).
void set_programmatic_launch(bool on);
bool programmatic_launch_switched_on();

// For benchmarks: ordinary launches go through cuLaunchKernelEx with no attribute (where the
// driver has it) instead of cuLaunchKernel, so that the driver's cost of each call can be told
// apart from the attribute's. Off unless set.
void set_extended_launch(bool on);
bool extended_launch_switched_on();

// One launch of `fn` on `stream`, with the programmatic attribute where `programmatic`.
CUresult launch_function(CUfunction fn, unsigned grid_x, unsigned grid_y, unsigned block, unsigned shared_bytes,
                         CUstream stream, void** args, bool programmatic);

}  // namespace runtime
}  // namespace torchfuse
