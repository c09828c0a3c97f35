// graph_capture.h for a LibTorch built without CUDA: nothing can be captured.
#include "runtime/graph_capture.h"

#include "src/error.h"

namespace torchfuse {
namespace runtime {

namespace {
constexpr const char* kNoCuda =
    "this torchfuse was built against a LibTorch without CUDA (at::cuda::CUDAGraph is missing)";
}  // namespace

std::string graph_capture_unavailable() { return kNoCuda; }

OwnedStream new_capture_stream(const c10::Device& device) {
  throw Error(std::string("torchfuse: no CUDA graph capture: ") + kNoCuda);
}

std::unique_ptr<CapturedGraph> capture_graph(const c10::Stream&, const std::function<void()>&) {
  throw Error(std::string("torchfuse: no CUDA graph capture: ") + kNoCuda);
}

bool current_stream_capturing(const c10::Device&) { return false; }

}  // namespace runtime
}  // namespace torchfuse
