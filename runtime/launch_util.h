// Shared by the launchers of every schedule: packing kernel arguments, alignment checks,
// output allocation and the driver launch on the current stream.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/SmallVector.h>

#include "codegen/kernel.h"
#include "codegen/layout.h"
#include "runtime/kernel_cache.h"
#include "torchfuse/torchfuse.h"

namespace torchfuse {
namespace runtime {

// Kernel arguments packed as the generated params struct lays them out (8 bytes each).
class ParamPacker {
 public:
  ParamPacker() { words_.reserve(32); }  // most kernels' arguments: one allocation per launch
  void i64(int64_t v) { words_.push_back(v); }
  // Word `word`, packed by i64 before, becomes `v` (a kernel launched again with one argument changed).
  void set_i64(size_t word, int64_t v) { words_.at(word) = v; }
  void f64(double v) {
    int64_t w;
    std::memcpy(&w, &v, sizeof w);
    words_.push_back(w);
  }
  void ptr(const void* p) {
    pointer_words_.push_back(static_cast<int>(words_.size()));
    words_.push_back(static_cast<int64_t>(reinterpret_cast<intptr_t>(p)));
  }
  // A stride or size array of the kernel's declared length (at least 1; empty packs a 0 or 1).
  void array(const std::vector<int64_t>& v, int64_t fill) {
    if (v.empty()) i64(fill);
    for (int64_t x : v) i64(x);
  }
  void scalar(const c10::IValue& v);
  void* data() { return words_.data(); }
  size_t size() const { return words_.size(); }
  // The words ptr() wrote (a recorded launch patches them: runtime/launch_record.h).
  const c10::SmallVector<int, 16>& pointer_words() const { return pointer_words_; }

 private:
  std::vector<int64_t> words_;
  c10::SmallVector<int, 16> pointer_words_;
};

bool aligned(const void* p, size_t bytes);

// `device` current for a scope, as c10::DeviceGuard makes it, but only when another device is
// current: the guard's restore asks the driver about the primary context on every exit, a
// sizeable cost on a launch-bound call.
class OnDevice {
 public:
  explicit OnDevice(const c10::Device& device);

 private:
  c10::OptionalDeviceGuard guard_;
};

// A synchronous failure to build, load or launch one kernel: an NVRTC error, a module load
// error, a launch-configuration error. Nothing ran, the CUDA context is intact, and the group can
// run its TorchScript ops instead. (An asynchronous fault of a kernel that did run, such as an
// illegal address, poisons the context: it is a plain Error, since nothing can recover from it.)
class KernelFailure : public Error {
 public:
  KernelFailure(const std::string& message, std::string kernel_source)
      : Error(message), source_(std::move(kernel_source)) {}
  const std::string& kernel_source() const { return source_; }

 private:
  std::string source_;
};

// Entry `entry` of `kernel` loaded on `device` (compiled if needed). Throws KernelFailure.
CUfunction load_function(const codegen::GeneratedKernel& kernel, const std::string& entry, int device,
                         CompileCounters* counters);

// PyTorch's current CUDA stream on `device` (LibTorch >= 2.3; older builds throw).
CUstream current_stream(const c10::Device& device);

// Launches `entry` of `kernel` on the current CUDA stream of `device`. Throws KernelFailure
// when the kernel cannot be built, loaded or launched.
// `shared_bytes`: the block's dynamic shared memory.
void launch(const codegen::GeneratedKernel& kernel, const std::string& entry, const c10::Device& device,
            int64_t blocks_x, int64_t blocks_y, int block, ParamPacker& params, CompileCounters* counters,
            int64_t shared_bytes = 0);
// Blocks of `kernel` (`block` threads, `shared_bytes` of dynamic shared memory) that one
// multiprocessor of `device` holds at once; at least 1.
int resident_blocks(const codegen::GeneratedKernel& kernel, const c10::Device& device, int block, int64_t shared_bytes,
                    CompileCounters* counters);
// The same with thread-block clusters of `cluster` consecutive blocks along x (blocks_x a multiple).
void launch_clustered(const codegen::GeneratedKernel& kernel, const c10::Device& device, int64_t blocks_x, int cluster,
                      int block, ParamPacker& params, CompileCounters* counters);

// The same as a cooperative launch (a grid of blocks_x x blocks_y blocks of `block` threads, all
// resident at once, or the launch fails): the blocks of split column passes wait for each other.
void launch_cooperative(const codegen::GeneratedKernel& kernel, const c10::Device& device, int64_t blocks_x,
                        int64_t blocks_y, int block, ParamPacker& params, CompileCounters* counters);

// At least n zeroed 32-bit counters private to the current CUDA stream of `device`. Split
// reductions count their finished blocks there; the last block to finish combines the partials
// and puts its counter back to zero, so the launches of one stream, which run in order, share
// them. Grown (with a fresh zeroed buffer, on that stream) when n exceeds what the stream has.
// While a CUDA graph is captured on this thread (ScopedCounterArena), the counters come from the
// arena instead: the graph keeps them, and replays of other graphs, on any stream, never share them.
void* stream_counters(const c10::Device& device, int64_t n);

// Counters owned by one captured CUDA graph (runtime/cuda_graphs.h): its split reductions run one
// after another in the graph, so they share the buffer as the launches of a stream do.
struct CounterArena {
  std::vector<at::Tensor> buffers;  // the last is the one in use; earlier ones stay for the graph's nodes
};
// Routes this thread's stream_counters to `arena` for the scope's lifetime.
class ScopedCounterArena {
 public:
  explicit ScopedCounterArena(CounterArena* arena);
  ~ScopedCounterArena();
  ScopedCounterArena(const ScopedCounterArena&) = delete;
  ScopedCounterArena& operator=(const ScopedCounterArena&) = delete;

 private:
  CounterArena* saved_;
};

// An uninitialized output (poisoned when asked).
at::Tensor new_output(const std::vector<int64_t>& sizes, c10::ScalarType dtype, const c10::Device& device, bool poison);

}  // namespace runtime
}  // namespace torchfuse
