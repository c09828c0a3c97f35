// CompileOptions::cuda_graphs: a module's fused calls replayed as CUDA graphs.
//
// Per exact input signature (dtypes, sizes, strides, device, and the values of non-tensor
// inputs), the first `warmup_calls` calls run as they are; the next one captures the whole
// rewritten graph (fused kernels and the ATen ops between them) on a stream of the module's own,
// reading static copies of its inputs, in a memory pool of the graph's own; later calls copy their
// inputs into those static buffers (not when the caller passes the static tensors themselves,
// graph_inputs()) and replay it. Outputs are copied out of the graph's memory unless
// zero_copy_outputs (then they are the graph's own tensors, overwritten by the next call that
// replays the same graph).
//
// The replays of one module are ordered: one thread at a time queues its copies and replay, and a
// call on another stream than the last one first waits for the last one's work, so static inputs
// and outputs are never written while a replay on another stream still reads them.
//
// What runs uncaptured, and why (reasons in stats() and explain()): a build without CUDA graphs, a
// CPU tensor or a dict among the inputs (their values would be frozen into the graph), a capture
// that failed (a host synchronization, data-dependent sizes, a copy from pageable memory...), more
// signatures than the limit. Such calls run the rewritten graph as without the option.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Event.h>

#include "runtime/graph_capture.h"
#include "runtime/launch_util.h"

namespace torchfuse {
namespace runtime {

struct GraphPolicy {
  int warmup_calls = 2;            // uncaptured calls of a signature before it is captured
  int max_graphs = 8;              // graphs held at once (each holds a memory pool)
  bool zero_copy_outputs = false;  // return the graph's own output tensors
  std::string refused;             // why no call of this module may be captured ("" if they may)
};

struct GraphCounts {
  int64_t captures = 0;          // graphs captured
  int64_t replays = 0;           // calls answered by a replay
  int64_t uncaptured_calls = 0;  // calls that ran without a graph (warm-up and refused)
  int64_t input_copies = 0;      // input tensors copied into static buffers
  std::vector<std::string> refusals;  // "<signature>: <why>", once per signature
};

class GraphRunner {
 public:
  using Run = std::function<c10::IValue(const std::vector<c10::IValue>&)>;
  explicit GraphRunner(GraphPolicy policy);
  ~GraphRunner();
  GraphRunner(const GraphRunner&) = delete;
  GraphRunner& operator=(const GraphRunner&) = delete;

  // The call's result: from `run` (warm-up, refused), or from its signature's graph. `keep`
  // (the specialization whose kernels a graph launches) stays alive as long as the graph.
  c10::IValue call(const std::vector<c10::IValue>& inputs, const c10::Device& device, std::shared_ptr<void> keep,
                   const Run& run);
  // The static input tensors of the graph these inputs' signature has (empty when none is
  // captured): a caller that writes its inputs into them and passes them saves the copies.
  std::vector<at::Tensor> static_inputs(const std::vector<c10::IValue>& inputs) const;
  // "captured", "not captured yet (1 of 2 warm-up calls run)", or why these inputs run uncaptured.
  std::string status(const std::vector<c10::IValue>& inputs, const c10::Device& device) const;
  GraphCounts counts() const;

 private:
  struct Entry;
  // Why these inputs cannot be captured ("" if they can).
  std::string refusal(const std::vector<c10::IValue>& inputs, const c10::Device& device) const;
  c10::IValue capture(Entry& entry, const std::vector<c10::IValue>& inputs, const c10::Device& device,
                      std::shared_ptr<void> keep, const Run& run);
  c10::IValue replay(Entry& entry, const std::vector<c10::IValue>& inputs, const c10::Device& device);
  // Makes the current stream wait for the last replay's work when that ran on another stream.
  void order_after_last(const c10::Stream& current);
  // Records why the entry's calls run uncaptured (under mu_).
  void refuse(Entry& entry, const std::string& why);

  const GraphPolicy policy_;
  mutable std::mutex mu_;  // the entries and counts
  std::map<std::string, std::unique_ptr<Entry>> entries_;
  int graphs_ = 0;
  GraphCounts counts_;
  // Held while capturing or replaying: one at a time per module.
  std::mutex replay_mu_;
  std::optional<OwnedStream> capture_stream_;
  std::optional<c10::Event> done_;
  std::optional<c10::Stream> last_stream_;
};

}  // namespace runtime
}  // namespace torchfuse
