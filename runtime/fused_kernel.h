// One fusion group at run time: takes the group's inputs from the TorchScript stack, allocates
// its outputs from the caching allocator, and launches its generated kernel(s) on the current
// CUDA stream. Kernels are generated per compile-time layout (schedule choices, access kinds,
// dtypes, vector and index width) and reused for every call whose layout has the same key.
//
// Fallback: when a kernel of the group cannot be built, loaded or launched (KernelFailure), the
// group switches for good to its fallback, the group's own TorchScript ops run by the
// interpreter, and the failure is logged once. When the CUDA caching allocator runs out of memory
// for the group's outputs (c10::OutOfMemoryError), only that call runs on the fallback: memory may
// be free again for the next call, which tries the kernel again (logged once per group, every
// such call counted). A call whose inputs differ from the types the group was compiled for
// (input_differs: a value that control flow computes can change dtype between calls of one
// specialization) runs the fallback for that call alone. Under strict each of these is an Error
// naming the group instead.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>

#include "codegen/kernel.h"
#include "codegen/layout.h"
#include "codegen/reduction_analysis.h"
#include "codegen/reduction_layout.h"
#include "codegen/schedule.h"
#include "codegen/tuning.h"
#include "passes/fusion_plan.h"
#include "runtime/failure_injection.h"
#include "runtime/group_trace.h"
#include "runtime/kernel_cache.h"
#include "runtime/kernel_timer.h"
#include "runtime/launch_record.h"
#include "runtime/plan_memo.h"
#include "torchfuse/torchfuse.h"

namespace torch {
namespace jit {
struct Code;
struct Graph;
}  // namespace jit
}  // namespace torch

namespace torchfuse {
namespace runtime {

class KernelFailure;
class FusedKernel;

// Sees every fused call of every group on the thread it is installed on (Scope): the group, the
// inputs it took and the outputs its kernel wrote, before the graph goes on. compare_groups
// installs one; otherwise a call pays one thread-local read.
class GroupProbe {
 public:
  virtual ~GroupProbe() = default;
  virtual void fused_call(const FusedKernel& kernel, const std::vector<c10::IValue>& inputs,
                          const std::vector<at::Tensor>& outputs) = 0;
  // The probe installed on this thread, or null.
  static GroupProbe* current();

  class Scope {
   public:
    explicit Scope(GroupProbe* probe);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    GroupProbe* previous_;
  };
};

struct LaunchOptions {
  bool poison_outputs = false;
  bool strict = false;   // a kernel failure is an Error, not a fallback
  bool profile = false;  // time every call with CUDA events
  bool record_launches = true;  // CompileOptions::record_launches
  bool outputs_in_place = false;  // CompileOptions::outputs_in_place
  FailureInjection fail;
  codegen::Tuning tuning;  // the module's knobs (resolve_tuning), for planning and launching
};

// One call's inputs, as the launchers see them.
struct CallInputs {
  std::vector<c10::IValue> values;
  std::vector<codegen::OperandShape> shapes;
  std::vector<int64_t> domain;
  // Per cat of the group (FusionGroup::cats): where each piece after the first starts along its
  // dim on this call (place_cat_pieces).
  std::vector<std::vector<int64_t>> cat_starts;
  c10::Device device{c10::DeviceType::CUDA, 0};
  // Per output, the input whose memory it takes on this call (in_place_outputs.h), or -1; empty
  // where none does.
  c10::SmallVector<int, 4> taken;
  // The outputs' sizes (output_sizes), where the call has computed them to take inputs over;
  // empty otherwise, and allocate_outputs computes them.
  std::vector<std::vector<int64_t>> output_sizes;
};

class FusedKernel {
 public:
  // `owner` keeps the IR that `group` points into alive. Generates the kernel for the profiled
  // types for `target` (the device the specialization is built for, or explain()'s offline
  // target), whose name becomes the group's (FusionGroup::kernel_name).
  FusedKernel(std::shared_ptr<const void> owner, FusionGroup group, LaunchOptions options,
              std::shared_ptr<CompileCounters> counters, const codegen::DeviceTarget& target);

  // Pops the group's inputs from `stack`, pushes its outputs.
  void run(std::vector<c10::IValue>& stack);

  // The graph the group falls back to (build_fallback_graph), or why there is none.
  void set_fallback(std::shared_ptr<torch::jit::Graph> graph);
  void set_no_fallback(const std::string& why) { no_fallback_why_ = why; }
  // Compiles the kernel for the profiled types on `device`, the device of the constructor's
  // target (at specialization time, so that NVRTC does not run inside the graph). Throws
  // KernelFailure.
  void prepare(int device);
  // A kernel of the group failed, when the specialization was built or at run time: under strict,
  // or without a fallback, throws an Error naming the group; else falls back (logged once).
  void fail(const KernelFailure& failure, const std::string& when);
  // Switches to the fallback for good (tests call it directly, with warn = false).
  void fall_back(const std::string& error, const std::string& kernel_source, bool warn);
  bool fell_back() const { return fell_back_; }
  // Why the group runs its ATen fallback for good ("" while it runs fused).
  std::string fallback_reason() const;
  // The group's fallback graph (null without one; no_fallback_why() says why).
  std::shared_ptr<torch::jit::Graph> fallback_graph() const { return fallback_graph_; }
  const std::string& no_fallback_why() const { return no_fallback_why_; }
  // Runs the fallback graph on copies of `inputs` (the group's inputs, in order) and returns its
  // outputs; counts nothing. For compare_groups. Throws Error without a fallback graph.
  std::vector<c10::IValue> run_fallback_on(const std::vector<c10::IValue>& inputs) const;
  // Counts, fallback state and (with profiling) kernel time; waits for pending timing events.
  GroupStats stats() const;

  const FusionGroup& group() const { return group_; }
  // Analysis of a reduction group (null for pointwise groups).
  const codegen::ReductionAnalysis* analysis() const { return analysis_.get(); }
  // What planning and generation need to know about the group (computed once, here).
  const codegen::GroupAnalysis& group_analysis() const { return analysis_; }
  const codegen::Tuning& tuning() const { return options_.tuning; }
  // The kernel for the profiled types, for the constructor's target (with the injected faults'
  // marks, when debug_fail_kernels names it).
  codegen::GeneratedKernel kernel_for_profiled_types() const;
  // The kernels compiled for the device in use: the one prepare() built for the profiled types,
  // then every other variant generated since for other layouts, in the order they were made.
  std::vector<codegen::GeneratedKernel> kernels() const;
  // How many kernel variants were generated (one per layout key).
  int64_t variants() const;
  int64_t launches() const { return launches_; }
  // Should this call's outputs run out of memory (debug_fail_kernels "oom:")? Uses up a fault.
  bool inject_oom() const { return options_.fail.take_oom(group_.kernel_name); }

  // Used by the launchers.
  // The kernel generated for layout `key` (kept for the kernel's lifetime; never copied per call).
  const codegen::GeneratedKernel& kernel_for(const std::string& key, const std::function<codegen::GeneratedKernel()>& generate);
  // The layouts planned for this group's call shapes (launch_group).
  PlanMemo& plan_memo() { return plan_memo_; }
  CompileCounters* counters() const { return counters_.get(); }
  bool poison_outputs() const { return options_.poison_outputs; }
  void count_launches(int n) { launches_ += n; }

 private:
  // Fills call.domain; per-row inputs given without the reduced dims get them back as size 1.
  void shape_operands(CallInputs& call) const;
  codegen::GeneratedKernel plain_profiled_kernel(const codegen::DeviceTarget& target) const;
  // Internal assert: every output, written as the schedule writes it, has its IR shape.
  void check_output_shapes(const std::vector<int64_t>& domain) const;
  // run(), inside the group's profiler record and NVTX range.
  void run_call(std::vector<c10::IValue>& stack);
  // The call as a recorded launch of its inputs' geometry (launch_record.h): false, with the
  // stack untouched, where there is none or it cannot run (the planned path takes the call).
  bool run_recorded(std::vector<c10::IValue>& stack);
  // What watches a fused call's outputs: debug_fail_kernels "wrong:" and the GroupProbe.
  void after_kernel(const CallInputs& call, const std::vector<at::Tensor>& outputs) const;
  // launch_group, between timing events when profiling.
  std::vector<at::Tensor> launch_timed(const CallInputs& call);
  // Runs the fallback graph on the group's inputs at the top of `stack`.
  // Throws (strict mode, or no fallback) where this call cannot run fused because of `why`.
  void check_can_fall_back(const std::string& why) const;
  void run_fallback(std::vector<c10::IValue>& stack);
  // The allocator ran out of memory for this call's outputs: under strict an Error; else this
  // call runs on the fallback (logged once per group). False without a fallback graph (the
  // caller rethrows the allocator's error, as eager would have).
  bool fall_back_for_this_call(const std::string& error);
  // True where this call has an input of no elements: it runs the fallback instead (throws when
  // the group has none).
  bool empty_input_falls_back(const std::vector<c10::IValue>& stack);

  std::shared_ptr<const void> owner_;
  FusionGroup group_;
  codegen::GroupAnalysis analysis_;
  LaunchOptions options_;
  std::shared_ptr<CompileCounters> counters_;
  mutable std::mutex mu_;
  std::map<std::string, codegen::GeneratedKernel> kernels_;  // by layout key
  std::vector<std::string> variant_order_;  // kernels_' keys, in the order they were generated
  PlanMemo plan_memo_;
  std::optional<codegen::GeneratedKernel> prepared_;  // what prepare() compiled (an injected failure included)
  codegen::GeneratedKernel profiled_;  // the kernel for the profiled types, without an injected failure
  GroupTrace trace_;                   // the group's profiler name (its kernel's)
  // Per input: its profiled sizes after its views; a call whose views take run-time dims must
  // keep their size-1 dims (call_view_operand).
  std::vector<std::vector<int64_t>> profiled_view_sizes_;
  bool wrong_answers_ = false;         // debug_fail_kernels "wrong:" names the group
  // Calls may be recorded and repeated: every input a GPU tensor, and nothing that watches or
  // changes a call (profiling, poisoned outputs, injected failures).
  bool recordable_ = false;
  LaunchRecords records_;
  std::atomic<int64_t> recorded_calls_{0};
  // Per output, the input whose memory it may take (in_place_candidates); empty where none may.
  std::vector<int> in_place_;
  std::atomic<int64_t> outputs_in_place_{0};
  std::atomic<int64_t> launches_{0};
  std::atomic<int64_t> calls_{0};
  // Fallback state; the reason is written once, before fell_back_ turns true.
  std::shared_ptr<torch::jit::Code> fallback_code_;
  std::shared_ptr<torch::jit::Graph> fallback_graph_;
  std::string no_fallback_why_;
  std::atomic<bool> fell_back_{false};
  std::string fallback_reason_;
  std::atomic<int64_t> fallback_calls_{0};
  std::atomic<int64_t> oom_calls_{0};      // calls whose outputs ran out of memory
  std::atomic<bool> oom_logged_{false};
  mutable KernelTimer timer_;
};

// Why `actual` cannot run in a kernel compiled for `compiled` ("" when it can): another kind of
// number, not a tensor, another dtype, rank or device, or another pattern of size-1 and size-0
// dims (broadcasting and the per-row analysis depend on it) than the profiled type's. The
// specialization's guards fix these for the graph's inputs, not for values that control flow or
// ops with run-time arguments compute.
std::string input_differs(const ir::Type& compiled, const c10::IValue& actual);
// The operands of a group as the layout planners see them, from profiled IR types.
std::vector<codegen::OperandShape> profiled_operands(const FusionGroup& g);
// The grid-stride loops never run more threads than this (the layouts' index-width bound).
constexpr int64_t kMaxGridThreads = codegen::kMaxGridThreads;

}  // namespace runtime
}  // namespace torchfuse
