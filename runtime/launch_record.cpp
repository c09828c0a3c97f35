#include "runtime/launch_record.h"

#include <cstring>

#include "runtime/hot_path_clock.h"
#include "runtime/in_place_outputs.h"
#include "runtime/launch_util.h"
#include "runtime/programmatic_launch.h"

namespace torchfuse {
namespace runtime {

namespace {

thread_local LaunchRecorder* recorder = nullptr;

// Pointer alignment kept in the geometry (vector widths and the pointwise vector flag depend on
// it); outputs from the caching allocator are aligned far beyond it.
constexpr int64_t kAlignment = 64;
// Refused tries after which a group stops recording (its calls take the planned path).
constexpr int kMaxRefused = 8;
// Argument words a recorded launch may have (a copy of them sits on the stack per call).
constexpr size_t kMaxWords = 512;

bool storage_holds(const at::Tensor& t, uintptr_t p) {
  const auto base = reinterpret_cast<uintptr_t>(t.storage().data());
  return base != 0 && p >= base && p < base + t.storage().nbytes();
}

}  // namespace

bool CallGeometry::take(const c10::IValue* inputs, size_t n) {
  words_.clear();
  for (size_t k = 0; k < n; ++k) {
    if (!inputs[k].isTensor()) return false;
    const at::Tensor& t = inputs[k].toTensor();
    if (!t.defined() || !t.is_cuda() || t.layout() != c10::kStrided || t.numel() == 0) return false;
    const int64_t misalign = static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.data_ptr()) % kAlignment);
    words_.push_back(t.dim() | (int64_t{t.device().index()} << 8) | (misalign << 16));
    const c10::IntArrayRef sizes = t.sizes();
    const c10::IntArrayRef strides = t.strides();
    words_.append(sizes.begin(), sizes.end());
    words_.append(strides.begin(), strides.end());
  }
  return true;
}

bool CallGeometry::operator==(const std::vector<int64_t>& recorded) const {
  return recorded.size() == words_.size() &&
         std::memcmp(recorded.data(), words_.data(), words_.size() * sizeof(int64_t)) == 0;
}

LaunchRecorder::LaunchRecorder() : saved_(recorder) { recorder = this; }

LaunchRecorder::~LaunchRecorder() { recorder = saved_; }

LaunchRecorder* LaunchRecorder::current() { return recorder; }

void LaunchRecorder::launched(CUfunction fn, unsigned grid_x, unsigned grid_y, unsigned block, unsigned shared_bytes,
                              const int64_t* words, size_t n_words, const int* pointer_words, size_t n_pointers,
                              bool grid_dependency) {
  ++launches_;
  if (n_words > kMaxWords) refused_ = true;
  if (refused_ || launches_ > 1) return;
  launch_.function = fn;
  launch_.grid_x = grid_x;
  launch_.grid_y = grid_y;
  launch_.block = block;
  launch_.shared_bytes = shared_bytes;
  launch_.grid_dependency = grid_dependency;
  launch_.params.assign(words, words + n_words);
  pointer_words_.assign(pointer_words, pointer_words + n_pointers);
}

std::unique_ptr<LaunchRecord> LaunchRecorder::finish(const CallGeometry& geometry, const c10::IValue* inputs,
                                                     size_t n_inputs, const std::vector<at::Tensor>& outputs,
                                                     const c10::Device& device) const {
  if (refused_ || launches_ != 1) return nullptr;
  auto r = std::make_unique<LaunchRecord>(launch_);
  r->geometry = geometry.words();
  r->device = device;
  for (const at::Tensor& t : outputs) {
    if (!t.defined() || t.numel() == 0 || !t.is_contiguous() || t.storage_offset() != 0) return nullptr;
    if (reinterpret_cast<uintptr_t>(t.data_ptr()) % kAlignment != 0) return nullptr;
    r->outputs.push_back({t.sizes().vec(), t.scalar_type()});
  }
  for (int w : pointer_words_) {
    const auto p = static_cast<uintptr_t>(launch_.params.at(w));
    if (p == 0) continue;  // a pointer the kernel does not use on this layout
    LaunchRecord::Pointer ptr;
    ptr.word = w;
    int owners = 0;
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (reinterpret_cast<uintptr_t>(outputs[k].data_ptr()) != p) continue;
      ptr.output = static_cast<int>(k);
      ++owners;
    }
    for (size_t k = 0; k < n_inputs; ++k) {
      const at::Tensor& t = inputs[k].toTensor();
      if (!storage_holds(t, p)) continue;
      ptr.input = static_cast<int>(k);
      ptr.delta = static_cast<int64_t>(p - reinterpret_cast<uintptr_t>(t.data_ptr()));
      ++owners;
    }
    // Partials, counters, or inputs sharing a storage on this call: not repeatable from pointers.
    if (owners != 1) return nullptr;
    r->pointers.push_back(ptr);
  }
  return r;
}

const LaunchRecord* LaunchRecords::find(const CallGeometry& geometry) const {
  for (const auto& slot : slots_) {
    const LaunchRecord* r = slot.load(std::memory_order_acquire);
    if (!r) return nullptr;
    if (geometry == r->geometry) return r;
  }
  return nullptr;
}

bool LaunchRecords::wants_more() const {
  return used_.load(std::memory_order_relaxed) < kMax && refused_.load(std::memory_order_relaxed) < kMaxRefused;
}

void LaunchRecords::add(std::unique_ptr<LaunchRecord> record) {
  if (!record) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  const int used = used_.load(std::memory_order_relaxed);
  if (used >= kMax) return;
  // Two threads may record one geometry: the first record stands.
  for (int i = 0; i < used; ++i)
    if (slots_[i].load(std::memory_order_relaxed)->geometry == record->geometry) return;
  owned_.push_back(std::move(record));
  slots_[used].store(owned_.back().get(), std::memory_order_release);
  used_.store(used + 1, std::memory_order_relaxed);
}

bool launch_recorded(const LaunchRecord& r, const c10::IValue* inputs, const std::vector<int>& in_place,
                     std::vector<at::Tensor>& outputs, int& taken) {
  const OnDevice on_device(r.device);
  outputs.clear();
  outputs.reserve(r.outputs.size());
  taken = 0;
  const c10::SmallVector<int, 4> over = in_place.empty()
      ? c10::SmallVector<int, 4>()
      : take_over(
            in_place, inputs, [&](size_t k) { return c10::IntArrayRef(r.outputs[k].sizes); },
            [&](size_t k) { return r.outputs[k].dtype; });
  for (size_t k = 0; k < r.outputs.size(); ++k) {
    const LaunchRecord::Output& o = r.outputs[k];
    if (!over.empty() && over[k] >= 0) {
      outputs.push_back(inputs[over[k]].toTensor());
      ++taken;
      continue;
    }
    outputs.push_back(new_output(o.sizes, o.dtype, r.device, false));
  }
  HotPathClock::mark(HotPhase::allocate);
  for (const at::Tensor& t : outputs) {
    if (reinterpret_cast<uintptr_t>(t.data_ptr()) % kAlignment == 0) continue;
    outputs.clear();
    return false;
  }
  int64_t words[kMaxWords];
  std::memcpy(words, r.params.data(), r.params.size() * sizeof(int64_t));
  for (const LaunchRecord::Pointer& p : r.pointers) {
    const void* base = p.output >= 0 ? outputs[p.output].data_ptr() : inputs[p.input].toTensor().data_ptr();
    words[p.word] = static_cast<int64_t>(reinterpret_cast<intptr_t>(base)) + p.delta;
  }
  make_context_current(r.device.index());
  void* args[] = {words};
  const CUstream stream = current_stream(r.device);
  HotPathClock::mark(HotPhase::pack);
  const CUresult result = launch_function(r.function, r.grid_x, r.grid_y, r.block, r.shared_bytes, stream, args,
                                          r.grid_dependency && programmatic_launch(r.device.index()));
  HotPathClock::mark(HotPhase::launch);
  if (result == CUDA_SUCCESS) return true;
  outputs.clear();
  return false;
}

}  // namespace runtime
}  // namespace torchfuse
