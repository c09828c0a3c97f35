// graph_capture.h with the CUDA runtime's stream capture and a private pool of ATen's caching
// allocator; compiled only against a LibTorch with CUDA.
//
// Not at::cuda::CUDAGraph: its capture puts the process's default CUDA generator in capture mode,
// and while it is, a random op of any other thread fails ("Offset increment outside graph
// capture"); a failed capture leaves the generator so for good. torchfuse's graphs hold no random
// ops instead: one makes the capture fail (the generator refuses to advance while the stream is
// capturing) and the call runs uncaptured, as every failed capture does.
#include "runtime/graph_capture.h"

#include <atomic>

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include "runtime/driver_api.h"
#include "src/error.h"

namespace torchfuse {
namespace runtime {

namespace {

// The first line of an exception's message (c10::Error appends a C++ backtrace).
std::string first_line(const char* what) {
  std::string s(what);
  const size_t eol = s.find('\n');
  return eol == std::string::npos ? s : s.substr(0, eol);
}

std::string cuda_failure(cudaError_t e, const char* what) {
  return std::string(what) + ": " + cudaGetErrorString(e);
}

using Pool = decltype(at::cuda::graph_pool_handle());

// One capture's memory pool and, once captured, its executable graph.
class RuntimeGraph : public CapturedGraph {
 public:
  RuntimeGraph(c10::DeviceIndex device, Pool pool) : device_(device), pool_(pool) {}
  ~RuntimeGraph() override {
    if (exec_) cudaGraphExecDestroy(exec_);
    // The pool's blocks go back to the allocator as the tensors holding them are freed.
    c10::cuda::CUDACachingAllocator::releasePool(device_, pool_);
  }
  void replay() override {
    // Set only when another device is current (the guard's restore costs a driver query).
    c10::cuda::OptionalCUDAGuard on_device;
    if (c10::cuda::current_device() != device_) on_device.set_index(device_);
    const cudaError_t e = cudaGraphLaunch(exec_, c10::cuda::getCurrentCUDAStream(device_).stream());
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      throw Error("torchfuse: " + cuda_failure(e, "cudaGraphLaunch"));
    }
  }
  cudaGraphExec_t exec_ = nullptr;

 private:
  c10::DeviceIndex device_;
  Pool pool_;
};

}  // namespace

std::string graph_capture_unavailable() { return ""; }

OwnedStream new_capture_stream(const c10::Device& device) {
  const DriverApi* api = driver_api();
  TORCHFUSE_CHECK(api && api->cuStreamCreate && api->cuStreamDestroy,
                  "torchfuse: the CUDA driver has no cuStreamCreate/cuStreamDestroy");
  make_context_current(device.index());
  CUstream raw = nullptr;
  check_cu(api->cuStreamCreate(&raw, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  c10::cuda::CUDAStream wrapped = c10::cuda::getStreamFromExternal(raw, device.index());
  // Destroying a stream with work queued is safe: CUDA releases it once the work is done.
  std::shared_ptr<void> owner(raw, [](void* s) { driver_api()->cuStreamDestroy(static_cast<CUstream>(s)); });
  return {c10::Stream(wrapped), std::move(owner)};
}

std::unique_ptr<CapturedGraph> capture_graph(const c10::Stream& stream, const std::function<void()>& run) {
  const c10::cuda::CUDAStream cuda_stream(stream);
  const c10::DeviceIndex device = stream.device_index();
  c10::cuda::CUDAStreamGuard on_stream(cuda_stream);
  // The pool (a fresh id, as ATen's graphs take) serves the allocations made on this stream while
  // it captures; the capture's id is known once it began.
  const Pool pool = at::cuda::graph_pool_handle();
  auto capture_id = std::make_shared<std::atomic<unsigned long long>>(0);
  const cudaStream_t raw = cuda_stream.stream();
  c10::cuda::CUDACachingAllocator::beginAllocateToPool(device, pool, [capture_id, raw](cudaStream_t s) {
    if (s != raw) return false;
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    return cudaStreamGetCaptureInfo(s, &status, &id) == cudaSuccess && status == cudaStreamCaptureStatusActive &&
           id == capture_id->load();
  });
  auto graph = std::make_unique<RuntimeGraph>(device, pool);  // releases the pool
  std::string failure;
  cudaError_t e = cudaStreamBeginCapture(raw, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    failure = cuda_failure(e, "cudaStreamBeginCapture");
  } else {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    if (cudaStreamGetCaptureInfo(raw, &status, &id) == cudaSuccess) capture_id->store(id);
    try {
      run();
    } catch (const std::exception& ex) {
      failure = first_line(ex.what());
    }
    cudaGraph_t captured = nullptr;
    e = cudaStreamEndCapture(raw, &captured);  // ends the capture even when run() threw
    if (e != cudaSuccess && failure.empty()) failure = cuda_failure(e, "cudaStreamEndCapture");
    if (failure.empty() && captured) {
      e = cudaGraphInstantiateWithFlags(&graph->exec_, captured, 0);
      if (e != cudaSuccess) failure = cuda_failure(e, "cudaGraphInstantiate");
    } else if (failure.empty()) {
      failure = "cudaStreamEndCapture returned no graph";
    }
    if (captured) cudaGraphDestroy(captured);
  }
  c10::cuda::CUDACachingAllocator::endAllocateToPool(device, pool);
  if (!failure.empty()) {
    (void)cudaGetLastError();  // a capture's errors are not sticky: later launch checks must not see them
    throw Error("torchfuse: CUDA graph capture failed: " + failure);
  }
  return graph;
}

bool current_stream_capturing(const c10::Device& device) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t e = cudaStreamIsCapturing(c10::cuda::getCurrentCUDAStream(device.index()).stream(), &status);
  TORCHFUSE_CHECK(e == cudaSuccess, cuda_failure(e, "cudaStreamIsCapturing"));
  return status != cudaStreamCaptureStatusNone;
}

}  // namespace runtime
}  // namespace torchfuse
