// CUDA graph capture through ATen (at::cuda::CUDAGraph), behind an interface that needs no CUDA
// headers: builds against a CPU LibTorch compile graph_capture_none.cpp, which captures nothing
// and says why.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <c10/core/Device.h>
#include <c10/core/Stream.h>

namespace torchfuse {
namespace runtime {

// One captured graph: what a function queued on a stream, replayable on any stream of its device.
// Allocations made while capturing come from a memory pool of the graph's own (ATen's private
// graph pools), which lives as long as the graph; replays write the same memory again.
class CapturedGraph {
 public:
  virtual ~CapturedGraph() = default;
  // Queues the graph on the current CUDA stream of its device.
  virtual void replay() = 0;
};

// "" where this build can capture CUDA graphs, else why it cannot (built against a LibTorch
// without CUDA).
std::string graph_capture_unavailable();

// A stream of torchfuse's own on `device` to capture on (CUDA cannot capture the default stream),
// destroyed with the returned owner after every graph captured on it.
struct OwnedStream {
  c10::Stream stream;
  std::shared_ptr<void> owner;
};
OwnedStream new_capture_stream(const c10::Device& device);

// Makes `stream` current, captures what `run` queues there (in thread-local capture mode: other
// threads may go on using CUDA meanwhile) and ends the capture, whether `run` returned or threw.
// Throws torchfuse::Error "CUDA graph capture failed: <reason>" when `run` threw or queued what a
// graph cannot hold (a host synchronization such as .item(), a copy from pageable memory, ...).
std::unique_ptr<CapturedGraph> capture_graph(const c10::Stream& stream, const std::function<void()>& run);

// Whether the current stream of CUDA device `device` is capturing a graph (false in builds
// without CUDA).
bool current_stream_capturing(const c10::Device& device);

}  // namespace runtime
}  // namespace torchfuse
