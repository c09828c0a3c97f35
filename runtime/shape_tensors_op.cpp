// torchfuse::shape_tensors(int id, int[] key) -> (Tensor[], int[]): what passes/cache_shape_tensors.h
// puts in place of a graph's tensors computed from sizes and constants alone. The first call with a
// key runs the cut's graph (src/shape_tensors.h); later calls with that key return the same
// tensors, which nothing writes (the pass leaves values with writers in the graph).
//
// A result is kept once the stream that computed it has finished, so that a call on another
// stream never reads it half written; a call inside a CUDA graph capture cannot wait for that and
// keeps nothing (the graph's replays compute it again). Past kMaxShapeTensorKeys keys, calls with
// a new key run the graph and keep nothing: kept results live as long as the specialization.
#include <ATen/ATen.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/interpreter.h>
#include <torch/library.h>

#include "runtime/graph_capture.h"
#include "src/error.h"
#include "src/shape_tensors.h"

namespace torchfuse {
namespace runtime {
namespace {

ShapeTensors::Result run_cut(const torch::jit::Code& code, const std::vector<int64_t>& key) {
  torch::jit::Stack stack;
  for (int64_t k : key) stack.emplace_back(k);
  torch::jit::InterpreterState state(code);
  state.run(stack);
  TORCHFUSE_INTERNAL_ASSERT(stack.size() == 2, "shape tensors returned ", stack.size(), " values");
  ShapeTensors::Result r;
  r.tensors = stack[0].toTensorVector();
  r.ints = stack[1].toIntVector();
  return r;
}

// The CUDA device of the result's tensors, if any.
c10::optional<c10::Device> cuda_device_of(const ShapeTensors::Result& r) {
  for (const at::Tensor& t : r.tensors)
    if (t.defined() && t.is_cuda()) return t.device();
  return c10::nullopt;
}

std::tuple<std::vector<at::Tensor>, std::vector<int64_t>> shape_tensors(int64_t id, std::vector<int64_t> key) {
  const std::shared_ptr<ShapeTensors> cut = find_shape_tensors(id);
  std::lock_guard<std::mutex> lock(cut->mu);
  for (const auto& [k, r] : cut->results)
    if (k == key) return {r.tensors, r.ints};
  if (!cut->code) cut->code = std::make_shared<torch::jit::Code>(cut->graph, "torchfuse_shape_tensors");
  ShapeTensors::Result r = run_cut(*cut->code, key);
  const c10::optional<c10::Device> cuda = cuda_device_of(r);
  const bool keep = cut->results.size() < kMaxShapeTensorKeys && !(cuda && current_stream_capturing(*cuda));
  if (!keep) return {r.tensors, r.ints};
  if (cuda) {
    const auto* guard = c10::impl::getDeviceGuardImpl(cuda->type());
    guard->getStream(*cuda).synchronize();
  }
  cut->results.emplace_back(std::move(key), r);
  return {r.tensors, r.ints};
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(torchfuse, m) {
  m.def("shape_tensors(int id, int[] key) -> (Tensor[], int[])", &shape_tensors);
}

}  // namespace runtime
}  // namespace torchfuse
