// Where the host time of a launch-bound call goes: a clock installed on the calling thread
// (`HotPathClock::Install`) takes the time at fixed points of the call path and adds each span to
// its phase. With no clock installed each point costs a thread-local read; the latency benchmark
// installs one to print the per-call breakdown (issue 25's "measure where the time goes").
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace torchfuse {
namespace runtime {

enum class HotPhase : int {
  entry,        // arity and device checks, the specialization's lookup by input signature
  graph_lookup, // CUDA graphs: the signature's entry, stream order, input copies
  replay,       // CUDA graphs: the graph's launch
  between,      // up to a fusion node's call: the interpreter and the ATen ops since the last node
  fallback,     // a fusion node's fallback graph (its ATen ops), where the node does not run fused
  guards,       // the fusion node's inputs against the types it was compiled for
  recorded,     // a recorded launch (launch_record.h): the inputs' geometry, its record found
  inputs,       // operand shapes read through the group's views, the call's domain
  plan,         // the layout for this shape (memoized) and whether the pointers fit its vectors
  allocate,     // the outputs, from the caching allocator
  kernel,       // the layout's generated kernel and its loaded function
  pack,         // the kernel's arguments, the context and the stream
  launch,       // the driver's cuLaunchKernel
  node_exit,    // the fusion node's return: its outputs pushed, its call's state released
  results,      // after the last fusion node: the graph's remaining ops, the outputs handed back
  kCount
};

const char* hot_phase_name(HotPhase p);

class HotPathClock {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kPhases = static_cast<int>(HotPhase::kCount);

  // The clock of this thread, or null.
  static HotPathClock* current() { return installed_; }
  // A call begins: the next mark's span starts here.
  static void begin() {
    if (installed_) installed_->last_ = Clock::now();
  }
  // The span since the last mark (or begin) belongs to `p`.
  static void mark(HotPhase p) {
    if (installed_) installed_->add(p);
  }

  // Marks `p` when the scope ends (after whatever the scope's later objects do on their way out).
  class MarkOnExit {
   public:
    explicit MarkOnExit(HotPhase p) : phase_(p) {}
    ~MarkOnExit() { mark(phase_); }
    MarkOnExit(const MarkOnExit&) = delete;
    MarkOnExit& operator=(const MarkOnExit&) = delete;

   private:
    HotPhase phase_;
  };

  class Install {
   public:
    explicit Install(HotPathClock* clock) : saved_(installed_) { installed_ = clock; }
    ~Install() { installed_ = saved_; }
    Install(const Install&) = delete;
    Install& operator=(const Install&) = delete;

   private:
    HotPathClock* saved_;
  };

  // Mean microseconds per call in each phase over `calls` calls.
  std::array<double, kPhases> mean_us(int64_t calls) const;
  // The phases that took time, named, in path order, with their means.
  std::vector<std::pair<std::string, double>> named_mean_us(int64_t calls) const;

 private:
  void add(HotPhase p) {
    const Clock::time_point now = Clock::now();
    ns_[static_cast<int>(p)] += std::chrono::duration_cast<std::chrono::nanoseconds>(now - last_).count();
    last_ = now;
  }

  static thread_local HotPathClock* installed_;
  Clock::time_point last_{};
  std::array<int64_t, kPhases> ns_{};
};

}  // namespace runtime
}  // namespace torchfuse
