// Recorded launches: the shortcut of a launch-bound call. A fusion group's call whose inputs are
// all tensors on its GPU and which launched one plain kernel is kept as that launch (the function,
// the grid, the argument words, where in them each input's and output's pointer sits, the outputs'
// sizes), keyed by the inputs' geometry. A later call of the same geometry allocates its outputs,
// patches the pointers into a copy of the words and launches: no view steps, no plan lookup, no
// variant lookup, no packing. Everything those steps compute follows from the geometry (sizes,
// strides, pointer alignment): the planned path would pack the same words.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/util/SmallVector.h>

#include "runtime/driver_api.h"

namespace torchfuse {
namespace runtime {

// What a call's launch depends on beyond its pointers: per input, its rank, device and pointer
// alignment, then its sizes and strides.
class CallGeometry {
 public:
  // False (and nothing to record or look up) unless each of the n inputs is a non-empty strided
  // tensor on a GPU.
  bool take(const c10::IValue* inputs, size_t n);
  bool operator==(const std::vector<int64_t>& recorded) const;
  std::vector<int64_t> words() const { return {words_.begin(), words_.end()}; }

 private:
  c10::SmallVector<int64_t, 40> words_;
};

struct LaunchRecord {
  std::vector<int64_t> geometry;  // CallGeometry's words
  c10::Device device{c10::DeviceType::CUDA, 0};
  CUfunction function = nullptr;
  unsigned grid_x = 1, grid_y = 1, block = 1, shared_bytes = 0;
  bool grid_dependency = false;  // the kernel may go out with programmatic dependent launch
  std::vector<int64_t> params;  // the recorded call's argument words
  // An argument word holding a pointer: input k's data pointer plus `delta` bytes, or output k's.
  struct Pointer {
    int word = 0;
    int input = -1;
    int output = -1;
    int64_t delta = 0;
  };
  std::vector<Pointer> pointers;
  struct Output {
    std::vector<int64_t> sizes;
    c10::ScalarType dtype = c10::ScalarType::Float;
  };
  std::vector<Output> outputs;
};

// Collects the launches of the current thread while a call is recorded (runtime::launch and its
// clustered and cooperative forms report to it).
class LaunchRecorder {
 public:
  LaunchRecorder();
  ~LaunchRecorder();
  LaunchRecorder(const LaunchRecorder&) = delete;
  LaunchRecorder& operator=(const LaunchRecorder&) = delete;

  // The recorder of this thread, or null.
  static LaunchRecorder* current();
  // A plain launch went out with these argument words; `pointer_words` index the words
  // ParamPacker::ptr wrote; `grid_dependency`: the kernel's (codegen::GeneratedKernel).
  void launched(CUfunction fn, unsigned grid_x, unsigned grid_y, unsigned block, unsigned shared_bytes,
                const int64_t* words, size_t n_words, const int* pointer_words, size_t n_pointers,
                bool grid_dependency);
  // A launch the shortcut cannot repeat (clustered, cooperative): nothing is recorded.
  void refuse() { refused_ = true; }

  // The record of the call, or null when it cannot be repeated from its pointers alone: not
  // exactly one plain launch, an argument pointer that is neither an input's (of one input's
  // storage only) nor an output's, an empty or non-contiguous output.
  std::unique_ptr<LaunchRecord> finish(const CallGeometry& geometry, const c10::IValue* inputs, size_t n_inputs,
                                       const std::vector<at::Tensor>& outputs, const c10::Device& device) const;

 private:
  LaunchRecorder* saved_;
  bool refused_ = false;
  int launches_ = 0;
  LaunchRecord launch_;
  std::vector<int> pointer_words_;
};

// A fusion group's records: a few geometries, found without a lock (records are published once
// and never change).
class LaunchRecords {
 public:
  static constexpr int kMax = 4;
  const LaunchRecord* find(const CallGeometry& geometry) const;
  bool any() const { return used_.load(std::memory_order_acquire) > 0; }
  // Whether a call should record itself: room left, and not too many refused tries.
  bool wants_more() const;
  // Keeps `record` (null: a refused try, counted).
  void add(std::unique_ptr<LaunchRecord> record);

 private:
  std::array<std::atomic<const LaunchRecord*>, kMax> slots_{};
  std::atomic<int> refused_{0};
  std::atomic<int> used_{0};
  std::mutex mu_;
  std::vector<std::unique_ptr<LaunchRecord>> owned_;
};

// Launches `record` for inputs of its geometry on the current stream, into fresh outputs or, per
// output, the memory of the input `in_place` names (in_place_candidates; empty: none) where the
// call can take it over; `taken` counts those. False (nothing launched, `outputs` empty) when an
// output's pointer lacks the recorded alignment or the driver refuses the launch: the planned path
// then runs the call and reports any error. Throws the caching allocator's c10::OutOfMemoryError.
bool launch_recorded(const LaunchRecord& record, const c10::IValue* inputs, const std::vector<int>& in_place,
                     std::vector<at::Tensor>& outputs, int& taken);

}  // namespace runtime
}  // namespace torchfuse
