#include "runtime/cuda_graphs.h"

#include <cstring>
#include <utility>

#include <ATen/ATen.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include "runtime/driver_api.h"
#include "runtime/hot_path_clock.h"
#include "src/error.h"
#include "src/ir.h"
#include "src/logging.h"

namespace torchfuse {
namespace runtime {

// One exact input signature: its warm-up count, its graph and the graph's static buffers.
struct GraphRunner::Entry {
  int calls = 0;
  std::string refused;  // why it runs uncaptured ("" while it may be captured)
  std::string described;
  std::unique_ptr<CapturedGraph> graph;
  std::vector<at::Tensor> statics;   // per input tensor (in flatten order): its sizes and strides, memory of its own
  c10::IValue outputs;               // the graph's own, in its memory pool
  CounterArena counters;
  std::shared_ptr<void> keep;
};

namespace {

// Signatures remembered at most; calls of new ones past it run uncaptured (a stream of ever new
// sizes, as a decoding loop's growing cache, never reaches its warm-up count anyway).
constexpr size_t kMaxSignatures = 1024;

// Tensors of an input, in order, inside tuples and lists.
void flatten(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) {
    if (v.toTensor().defined()) out.push_back(v.toTensor());
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) flatten(e, out);
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) flatten(e, out);
  }
}

// `v` with its tensors replaced, in flatten's order, by tensors[next...].
c10::IValue substitute(const c10::IValue& v, const std::vector<at::Tensor>& tensors, size_t& next) {
  if (v.isTensor()) return v.toTensor().defined() ? c10::IValue(tensors.at(next++)) : v;
  if (v.isTuple()) {
    std::vector<c10::IValue> elements;
    for (const auto& e : v.toTupleRef().elements()) elements.push_back(substitute(e, tensors, next));
    return c10::ivalue::Tuple::create(std::move(elements));
  }
  if (v.isTensorList()) {
    c10::List<at::Tensor> list;
    for (const at::Tensor& t : v.toTensorVector()) list.push_back(t.defined() ? tensors.at(next++) : t);
    return list;
  }
  if (v.isList()) {
    c10::impl::GenericList list(v.toList().elementType());
    for (const auto& e : v.toListRef()) list.push_back(substitute(e, tensors, next));
    return list;
  }
  return v;
}

// Elements of storage from the tensor's first to its last (strides are never negative).
int64_t span_of(const at::Tensor& t) {
  if (t.numel() == 0) return 0;
  int64_t last = 0;
  for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  return last + 1;
}

// Copies the storage span of `src` to where `dst` (same sizes, strides and dtype) starts, on the
// current stream of their device: one driver call, a fraction of an ATen copy's host time.
void copy_span(const at::Tensor& dst, const at::Tensor& src, CUstream stream) {
  const size_t bytes = static_cast<size_t>(span_of(src)) * src.element_size();
  if (bytes == 0) return;
  check_cu(driver_api()->cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(dst.data_ptr()),
                                           reinterpret_cast<CUdeviceptr>(src.data_ptr()), bytes, stream),
           "cuMemcpyDtoDAsync");
}

// `v` with every tensor copied (outputs leaving the graph's memory), strides kept.
c10::IValue copied(const c10::IValue& v, CUstream stream) {
  std::vector<at::Tensor> tensors;
  flatten(v, tensors);
  for (at::Tensor& t : tensors) {
    at::Tensor copy = at::empty_strided(t.sizes(), t.strides(), t.options());
    copy_span(copy, t, stream);
    t = std::move(copy);
  }
  size_t next = 0;
  return substitute(v, tensors, next);
}

// The number's bytes (made on every call: no decimal formatting); with each tensor's rank
// before its sizes, a key reads back one way only.
void append(std::string& key, int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }

// Everything a graph freezes: dtypes, sizes, strides, devices, and non-tensor values.
void append_key(std::string& key, const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) {
      key += 'U';
      return;
    }
    key += 'T';
    append(key, static_cast<int64_t>(t.scalar_type()));
    append(key, static_cast<int64_t>(t.device().type()));
    append(key, t.device().index());
    append(key, t.dim());
    for (int64_t s : t.sizes()) append(key, s);
    key += '/';
    for (int64_t s : t.strides()) append(key, s);
  } else if (v.isInt()) {
    key += 'i';
    append(key, v.toInt());
  } else if (v.isDouble()) {
    const double d = v.toDouble();
    int64_t bits = 0;
    std::memcpy(&bits, &d, sizeof bits);
    key += 'd';
    append(key, bits);
  } else if (v.isBool()) {
    key += v.toBool() ? "b1" : "b0";
  } else if (v.isNone()) {
    key += 'N';
  } else if (v.isString()) {
    key += 's';
    append(key, static_cast<int64_t>(v.toStringRef().size()));
    key += v.toStringRef();
  } else if (v.isTuple()) {
    key += '(';
    for (const auto& e : v.toTupleRef().elements()) append_key(key, e);
    key += ')';
  } else if (v.isList()) {
    key += '[';
    for (const auto& e : v.toListRef()) append_key(key, e);
    key += ']';
  } else {
    key += '?';
    key += v.tagKind();
  }
  key += ';';
}

std::string signature_key(const std::vector<c10::IValue>& inputs) {
  std::string key;
  key.reserve(64 * inputs.size());
  for (const auto& v : inputs) append_key(key, v);
  return key;
}

// "f32[8, 128], i64[8, 128], int 3": the signature as refusals name it.
std::string describe(const std::vector<c10::IValue>& inputs) {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const c10::IValue& v = inputs[i];
    s += i ? ", " : "";
    if (v.isTensor() && v.toTensor().defined()) {
      const at::Tensor& t = v.toTensor();
      s += std::string(ir::dtype_short_name(t.scalar_type())) + ir::shape_str(t.sizes().vec());
      if (!t.is_contiguous()) s += " (strided)";
    } else if (v.isInt()) {
      s += "int " + std::to_string(v.toInt());
    } else {
      s += v.tagKind();
    }
  }
  return "(" + s + ")";
}

// Why a tensor inside input `index` keeps the call from being captured ("" when none does).
std::string tensor_refusal(const c10::IValue& v, size_t index, const c10::Device& device) {
  std::vector<at::Tensor> tensors;
  flatten(v, tensors);
  for (const at::Tensor& t : tensors) {
    if (t.device().is_cpu())
      return detail::cat("input ", index, " holds a CPU tensor (its values would be frozen into the graph)");
    if (t.device() != device) return detail::cat("input ", index, " is on ", t.device().str(), ", not ", device.str());
  }
  return "";
}

c10::Stream current_cuda_stream(const c10::Device& device) {
  c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
  return impl.getStream(device);
}

}  // namespace

GraphRunner::GraphRunner(GraphPolicy policy) : policy_(std::move(policy)) {}

GraphRunner::~GraphRunner() {
  // A graph's memory pool goes back to the caching allocator with it: its last replay must be
  // done first. Graphs go before the stream they were captured on.
  std::lock_guard<std::mutex> lock(replay_mu_);
  if (graphs_ > 0 && last_stream_) {
    try {
      last_stream_->synchronize();
    } catch (const std::exception& e) {
      log_warn(std::string("torchfuse: CUDA graphs: waiting for the last replay failed: ") + e.what());
    }
  }
  entries_.clear();
  capture_stream_.reset();
}

std::string GraphRunner::refusal(const std::vector<c10::IValue>& inputs, const c10::Device& device) const {
  if (!policy_.refused.empty()) return policy_.refused;
  if (!device.is_cuda()) return "the call runs on " + device.str() + ", not on a GPU";
  const std::string unavailable = graph_capture_unavailable();
  if (!unavailable.empty()) return unavailable;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const c10::IValue& v = inputs[i];
    if (v.isGenericDict()) return detail::cat("input ", i, " is a dict");
    if (!(v.isTensor() || v.isTuple() || v.isList() || v.isInt() || v.isDouble() || v.isBool() || v.isNone() ||
          v.isString()))
      return detail::cat("input ", i, " is a ", v.tagKind());
    std::string why = tensor_refusal(v, i, device);
    if (!why.empty()) return why;
  }
  return "";
}

void GraphRunner::refuse(Entry& entry, const std::string& why) {
  entry.refused = why;
  counts_.refusals.push_back(entry.described + ": " + why);
  log_info("torchfuse: CUDA graphs: calls with inputs " + entry.described + " run uncaptured: " + why);
}

c10::IValue GraphRunner::call(const std::vector<c10::IValue>& inputs, const c10::Device& device,
                              std::shared_ptr<void> keep, const Run& run) {
  const std::string key = signature_key(inputs);
  Entry* entry = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      if (entries_.size() >= kMaxSignatures) {
        ++counts_.uncaptured_calls;
        entry = nullptr;
      } else {
        it = entries_.emplace(key, std::make_unique<Entry>()).first;
        it->second->described = describe(inputs);
        const std::string why = refusal(inputs, device);
        if (!why.empty()) refuse(*it->second, why);
      }
    }
    if (it != entries_.end()) {
      entry = it->second.get();
      if (!entry->graph && (!entry->refused.empty() || entry->calls < policy_.warmup_calls)) {
        ++entry->calls;
        ++counts_.uncaptured_calls;
        entry = nullptr;
      }
    }
  }
  if (!entry) return run(inputs);
  std::lock_guard<std::mutex> replaying(replay_mu_);
  if (entry->graph) return replay(*entry, inputs, device);
  // Another thread may have failed this signature's capture meanwhile.
  bool refused = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    refused = !entry->refused.empty();
    if (!refused && graphs_ >= policy_.max_graphs)
      refuse(*entry, detail::cat(graphs_, " graphs are captured already (CompileOptions::max_specializations)"));
    refused = !entry->refused.empty();
    if (refused) ++counts_.uncaptured_calls;
  }
  if (refused) return run(inputs);
  return capture(*entry, inputs, device, std::move(keep), run);
}

c10::IValue GraphRunner::capture(Entry& entry, const std::vector<c10::IValue>& inputs, const c10::Device& device,
                                 std::shared_ptr<void> keep, const Run& run) {
  const c10::Stream current = current_cuda_stream(device);
  // This call's answer, as without graphs.
  c10::IValue result = run(inputs);
  order_after_last(current);
  // Built aside and published under mu_ (static_inputs() and status() read the entry there).
  std::vector<at::Tensor> given, statics;
  for (const auto& v : inputs) flatten(v, given);
  const CUstream raw = current_stream(device);
  for (const at::Tensor& t : given) {
    statics.push_back(at::empty_strided(t.sizes(), t.strides(), t.options()));
    copy_span(statics.back(), t, raw);
  }
  std::vector<c10::IValue> static_values;
  size_t next = 0;
  for (const auto& v : inputs) static_values.push_back(substitute(v, statics, next));
  std::unique_ptr<CapturedGraph> graph;
  c10::IValue outputs;
  CounterArena counters;
  std::string failure;
  try {
    // A run on the static buffers first, uncaptured: kernels for their layout (alignment) are
    // built and loaded now, not while capturing.
    run(static_values);
    if (!capture_stream_) capture_stream_ = new_capture_stream(device);
    graph = capture_graph(capture_stream_->stream, [&] {
      ScopedCounterArena arena(&counters);
      outputs = run(static_values);
    });
  } catch (const std::exception& e) {
    failure = e.what();
    if (failure.rfind("torchfuse: ", 0) == 0) failure = failure.substr(11);
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_.uncaptured_calls;
  if (!failure.empty()) {
    refuse(entry, failure);
    return result;
  }
  entry.graph = std::move(graph);
  entry.statics = std::move(statics);
  entry.outputs = std::move(outputs);
  entry.counters = std::move(counters);
  entry.keep = std::move(keep);
  ++graphs_;
  ++counts_.captures;
  return result;
}

c10::IValue GraphRunner::replay(Entry& entry, const std::vector<c10::IValue>& inputs, const c10::Device& device) {
  const c10::Stream current = current_cuda_stream(device);
  order_after_last(current);
  std::vector<at::Tensor> given;
  given.reserve(entry.statics.size());
  for (const auto& v : inputs) flatten(v, given);
  TORCHFUSE_INTERNAL_ASSERT(given.size() == entry.statics.size(), "a CUDA graph of ", entry.statics.size(),
                            " input tensors called with ", given.size());
  const CUstream raw = current_stream(device);
  int64_t copies = 0;
  for (size_t i = 0; i < given.size(); ++i) {
    if (given[i].data_ptr() == entry.statics[i].data_ptr()) continue;  // the caller passed the static tensor
    copy_span(entry.statics[i], given[i], raw);
    ++copies;
  }
  HotPathClock::mark(HotPhase::graph_lookup);
  entry.graph->replay();
  HotPathClock::mark(HotPhase::replay);
  c10::IValue out = policy_.zero_copy_outputs ? entry.outputs : copied(entry.outputs, raw);
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_.replays;
  counts_.input_copies += copies;
  return out;
}

void GraphRunner::order_after_last(const c10::Stream& current) {
  // Recorded on the last stream now, the event covers its replay (and maybe later work, which
  // only makes the wait longer, never wrong).
  if (last_stream_ && *last_stream_ != current) {
    c10::Event last(c10::DeviceType::CUDA);
    last.record(*last_stream_);
    last.block(current);
  }
  last_stream_ = current;
}

std::vector<at::Tensor> GraphRunner::static_inputs(const std::vector<c10::IValue>& inputs) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(signature_key(inputs));
  if (it == entries_.end() || !it->second->graph) return {};
  return it->second->statics;
}

std::string GraphRunner::status(const std::vector<c10::IValue>& inputs, const c10::Device& device) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(signature_key(inputs));
  if (it == entries_.end()) {
    const std::string why = refusal(inputs, device);
    if (!why.empty()) return "uncaptured: " + why;
    return detail::cat("not captured yet (0 of ", policy_.warmup_calls, " warm-up calls run)");
  }
  const Entry& e = *it->second;
  if (e.graph) return "captured";
  if (!e.refused.empty()) return "uncaptured: " + e.refused;
  return detail::cat("not captured yet (", e.calls, " of ", policy_.warmup_calls, " warm-up calls run)");
}

GraphCounts GraphRunner::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

}  // namespace runtime
}  // namespace torchfuse
