// CompiledModuleImpl: one prepared TorchScript graph and its specializations, one per input
// signature (dtypes, sizes, strides, devices).
#pragma once

#include <atomic>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include "passes/fusion_plan.h"
#include "passes/graph_rewrites.h"
#include "runtime/background_builds.h"
#include "runtime/cuda_graphs.h"
#include "runtime/direct_call.h"
#include "runtime/fused_kernel.h"
#include "runtime/guards.h"
#include "src/frontend.h"
#include "src/logging.h"
#include "torchfuse/torchfuse.h"

namespace torchfuse {

// Everything built for one input signature.
struct Specialization {
  // What the rewritten graph's calls refer to (RewriteReport::owned); first, so it goes last.
  std::vector<std::shared_ptr<const void>> owned;
  int index = 0;                           // in the order specializations were built
  std::shared_ptr<Conversion> conversion;  // owns the IR the kernels point into
  FusionPlan plan;
  std::vector<std::string> rewrites;  // graph rewrites done before conversion
  std::string ir_before;
  std::string ir_after;
  std::vector<std::shared_ptr<runtime::FusedKernel>> kernels;
  std::vector<int64_t> kernel_ids;                // registered ids; released in the destructor
  std::shared_ptr<torch::jit::Graph> graph;       // the rewritten graph (null until bound to CUDA)
  std::unique_ptr<torch::jit::Code> code;
  // Set where the rewritten graph is one fusion node: calls skip the interpreter.
  std::optional<runtime::DirectCall> direct;
  // The rewritten graph on these inputs: directly, or through the interpreter.
  c10::IValue run(const std::vector<c10::IValue>& inputs) const;

  ~Specialization();
};

class CompiledModuleImpl {
 public:
  CompiledModuleImpl(std::shared_ptr<torch::jit::Graph> graph, CompileOptions options);

  c10::IValue forward(std::vector<c10::IValue> inputs);
  c10::IValue forward_eager(std::vector<c10::IValue> inputs);
  Explanation explain(const std::vector<c10::IValue>& inputs, bool compile_kernels);
  std::vector<KernelInfo> kernels() const;
  Stats stats() const;
  std::vector<at::Tensor> cuda_graph_inputs(const std::vector<c10::IValue>& inputs) const;
  // For tests: whether the specialization of these inputs' signature runs without the
  // interpreter (Specialization::direct); false before it is built.
  bool runs_direct(const std::vector<c10::IValue>& inputs) const;
  std::string graph_for(const std::vector<c10::IValue>& inputs) const;
  std::vector<c10::ScalarType> value_dtypes(const std::vector<c10::IValue>& inputs) const;
  c10::IValue forward_reference(const std::vector<c10::IValue>& inputs) const;
  // The fusion groups of the specialization these inputs' signature has (none before a fused
  // call built it), in group order.
  std::vector<std::shared_ptr<runtime::FusedKernel>> group_kernels(const std::vector<c10::IValue>& inputs) const;
  // Why forward() runs these inputs eager ("" where it runs fused): fused_device's reasons, past
  // max_specializations, or (async_compile) its specialization being compiled in the background
  // or its background build having failed.
  std::string why_eager(const std::vector<c10::IValue>& inputs) const;
  // For tests without a GPU: builds the specialization for these inputs with every group on its
  // fallback graph (no kernel compiled) and runs the rewritten graph, FusionGroup nodes included.
  c10::IValue run_on_fallbacks(const std::vector<c10::IValue>& inputs);

  // Seams for tests; set before the first call.
  struct TestHooks {
    // Run by the thread that builds a specialization, outside the module's lock, before it starts
    // (a test holds a build there to see what other calls do meanwhile).
    std::function<void(const std::vector<c10::IValue>& inputs)> before_build;
    // Calls with CPU tensors take the fused path, their specializations built as CUDA calls' are
    // but with every group on its fallback graph (as run_on_fallbacks): the specialization cache,
    // its limit and its locking run without a GPU.
    bool cpu_fallbacks = false;
  };
  void set_test_hooks(TestHooks hooks) { hooks_ = std::move(hooks); }

  // A check of the inputs beyond the graph's declared types, run after them on every entry
  // (forward, explain, ...); it throws Error. compile_exported checks the exported program's
  // sizes, ranges and device with it. Set before the first call.
  using InputCheck = std::function<void(const std::vector<c10::IValue>& inputs)>;
  void set_input_check(InputCheck check) { input_check_ = std::move(check); }

 private:
  // Profiles, converts and fuses the graph for these inputs, and generates each group's kernel
  // for `target` (no GPU needed). Under strict, throws when a fusible op is left unfused.
  std::unique_ptr<Specialization> analyze(const std::vector<c10::IValue>& inputs, c10::IValue* result,
                                          const codegen::DeviceTarget& target) const;
  // explain()'s target: an H100-class part of CompileOptions::offline_arch.
  codegen::DeviceTarget offline_target() const { return codegen::offline_target(options_.offline_arch, tuning_); }
  // Gives every kernel its fallback graph; must run before the graph rewrite.
  void attach_fallbacks(Specialization& spec) const;
  // Registers the kernels and rewrites the graph into spec.code.
  void finish(Specialization& spec) const;
  // Compiles the kernels for the device (a failing group falls back), registers them and
  // rewrites the graph.
  void bind_to_cuda(Specialization& spec, int device) const;
  // Puts every group on its fallback graph (no kernel), registers them and rewrites the graph.
  void bind_to_fallbacks(Specialization& spec) const;
  // Why specialization_for returned no specialization.
  enum class Unbuilt { over_limit, pending, failed };
  // The specialization for these inputs: built, being built by another thread (waits for it), or
  // built now by this thread, outside the module's lock. Null past max_specializations. Under
  // async_compile it never waits or builds: null while the signature builds in the background
  // (this call queues the build of a new one) or after its background build failed (under
  // strict, rethrows that build's error).
  std::shared_ptr<Specialization> specialization_for(const std::vector<c10::IValue>& inputs, c10::Device device,
                                                     Unbuilt* unbuilt);
  // Queues the build of signature `sig` (reserved in building_) on background_; the worker
  // publishes it, or records the failure in failed_builds_.
  void build_in_background(const std::string& sig, const std::vector<c10::IValue>& inputs, c10::Device device,
                           std::promise<std::shared_ptr<Specialization>> promise);
  void background_build_failed(const std::string& sig, std::exception_ptr error);
  // Makes a built specialization the one of `sig` (in specs_, out of building_); takes mu_.
  void publish(const std::string& sig, const std::shared_ptr<Specialization>& built);
  // analyze + bind, for `device` (CPU: the test hooks' fallback-only specializations).
  std::shared_ptr<Specialization> build(const std::vector<c10::IValue>& inputs, c10::Device device) const;
  // The CUDA device the call runs fused on, or nullopt where it runs eager: the graph writes its
  // inputs, a tensor requires grad under grad mode, is on a device other than CPU or CUDA, the
  // tensors are on two GPUs, none is on a GPU, or the driver API is unusable. (The CPU under
  // TestHooks::cpu_fallbacks.)
  // `why_eager`, where given, receives the reason when it returns nullopt.
  std::optional<c10::Device> fused_device(const std::vector<c10::IValue>& inputs, std::string* why_eager = nullptr) const;
  // forward on inputs check_arity already took.
  c10::IValue forward_checked(const std::vector<c10::IValue>& inputs);
  // The graph op by op through ATen, on inputs check_arity already took.
  c10::IValue run_eager(const std::vector<c10::IValue>& inputs);
  // Checks the inputs against the graph's declared types (tensors defined, containers element
  // by element); an int for a float becomes a float. Throws Error naming the input.
  void check_arity(std::vector<c10::IValue>& inputs) const;
  // Runs `run` (which runs graph ops through ATen); an error of ATen's becomes an Error that
  // keeps ATen's message and names the inputs, and their devices where they differ.
  template <typename Fn>
  auto in_aten(const std::vector<c10::IValue>& inputs, Fn&& run) const;
  std::string aten_failure(const std::vector<c10::IValue>& inputs, const std::exception& e) const;

  std::shared_ptr<torch::jit::Graph> graph_;
  CompileOptions options_;
  LogSwitches logs_;
  RewriteOptions rewrite_options_;
  codegen::Tuning tuning_;  // resolved once (runtime/process_tuning.h), handed down to every kernel
  torch::jit::Code eager_code_;
  std::shared_ptr<runtime::CompileCounters> counters_;
  bool writes_inputs_ = false;
  std::vector<c10::Device> constant_devices_;  // of the graph's tensor constants (frozen parameters)

  TestHooks hooks_;
  InputCheck input_check_;

  // Guards the maps and what follows them; held for lookups only, never while building.
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Specialization>> specs_;  // built, by input signature
  // The built specializations of all-tensor signatures by their guard keys: the hot path's
  // lookup, filled as calls find them in specs_ (entries are never removed from either).
  std::vector<std::pair<std::vector<TensorGuardKey>, std::shared_ptr<Specialization>>> keyed_specs_;
  // Being built by some thread; the others asking for the signature wait on its future.
  std::map<std::string, std::shared_future<std::shared_ptr<Specialization>>> building_;
  std::shared_ptr<Specialization> latest_;
  std::vector<std::string> latest_guards_;
  bool warned_limit_ = false;
  // async_compile: signatures whose background build threw; they are not built again and their
  // calls run eager (under strict, they throw the build's error).
  struct FailedBuild {
    std::exception_ptr error;
    std::string first_line;  // of its message
  };
  std::map<std::string, FailedBuild> failed_builds_;
  std::atomic<int64_t> eager_calls_{0};
  std::atomic<int64_t> fused_calls_{0};
  std::atomic<int64_t> over_limit_calls_{0};
  // CompileOptions::cuda_graphs (null without). Declared after the specializations: its graphs
  // go before the specializations whose kernels they launch.
  std::unique_ptr<runtime::GraphRunner> graphs_;
  std::atomic<int64_t> async_pending_calls_{0};
  std::atomic<int64_t> async_failed_calls_{0};
  std::atomic<int64_t> background_builds_{0};
  std::atomic<int64_t> background_build_failures_{0};

  // Last, so that it is destroyed first: its destructor waits for the build running on its
  // worker, which uses the members above (and `this`); builds not started are dropped.
  runtime::BackgroundBuilds background_;
};

}  // namespace torchfuse
