#include "runtime/fused_kernel.h"

#include <algorithm>

#include <ATen/record_function.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include "codegen/schedule.h"
#include "runtime/driver_api.h"
#include "runtime/hot_path_clock.h"
#include "runtime/in_place_outputs.h"
#include "runtime/launch_util.h"
#include "runtime/launchers.h"
#include "src/error.h"
#include "src/frontend.h"
#include "src/logging.h"

namespace torchfuse {
namespace runtime {

namespace {

// The device the group computes on (its outputs').
c10::Device group_device(const FusionGroup& g) {
  return g.outputs.empty() ? c10::Device(c10::kCPU) : g.outputs.front()->type.device;
}

// A kernel parameter for a number or a 0-dim CPU tensor: double for floating values (exact for
// every float dtype), long long otherwise (emit_operand_param, ParamPacker::scalar).
c10::ScalarType number_param_dtype(c10::ScalarType t) {
  return c10::isFloatingType(t) ? c10::ScalarType::Double : t == c10::ScalarType::Bool ? t : c10::ScalarType::Long;
}

// A number kernel parameter for a Python number or a 0-dim CPU tensor (ir::is_host_scalar) of a
// group on `device`: fills `s` and returns true; false for a tensor the kernel reads.
bool number_operand(const ir::Value* v, const c10::Device& device, codegen::OperandShape& s) {
  if (v->type.is_scalar()) {
    s.dtype = v->type.dtype;
  } else if (ir::is_host_scalar(v->type, device)) {
    s.dtype = number_param_dtype(v->type.dtype);
  } else {
    return false;
  }
  s.is_tensor = false;
  return true;
}

// Input k as the output domain sees it: its sizes, strides and offset through the group's views
// (FusionGroup::input_views); the sizes its range and select steps found go to `seen`. False
// when the call cannot read it through them (apply_view_steps).
bool view_operand(const FusionGroup& g, size_t k, codegen::OperandShape& s, RangeSizes* seen = nullptr,
                  const CatPlaces* places = nullptr) {
  if (k >= g.input_views.size() || g.input_views[k].empty() || !s.is_tensor) return true;
  return apply_view_steps(g.input_views[k], s.sizes, s.strides, s.offset, seen, places);
}

bool has_runtime_dims(const std::vector<ViewStep>& steps) {
  return std::any_of(steps.begin(), steps.end(), [](const ViewStep& st) { return st.runtime_dims(); });
}

// Each input's view steps for this call: the group's, or a copy with the call's run-time dims
// (with_call_dims) for paths that have them. False when such a dim is not an int.
class CallSteps {
 public:
  bool take(const FusionGroup& g, const std::vector<c10::IValue>& values) {
    for (size_t k = 0; k < g.input_views.size(); ++k) {
      if (!has_runtime_dims(g.input_views[k])) continue;
      std::vector<ViewStep> steps = g.input_views[k];
      if (!with_call_dims(steps, values)) return false;
      own_.emplace(k, std::move(steps));
    }
    return true;
  }
  const std::vector<ViewStep>& of(const FusionGroup& g, size_t k) const {
    auto it = own_.find(k);
    return it == own_.end() ? g.input_views[k] : it->second;
  }
  bool has_runtime_dims_at(size_t k) const { return own_.count(k) > 0; }

 private:
  std::map<size_t, std::vector<ViewStep>> own_;
};

}  // namespace

std::vector<codegen::OperandShape> profiled_operands(const FusionGroup& g) {
  std::vector<codegen::OperandShape> ops;
  const c10::Device device = group_device(g);
  for (const ir::Value* v : g.inputs) {
    codegen::OperandShape s;
    if (number_operand(v, device, s)) {
      ops.push_back(std::move(s));
      continue;
    }
    s.is_tensor = v->type.is_tensor();
    s.dtype = v->type.dtype;
    s.sizes = v->type.sizes;
    s.strides = v->type.strides;
    // The fusion passes checked the profiled path (view_paths).
    TORCHFUSE_INTERNAL_ASSERT(view_operand(g, ops.size(), s), g.kernel_name, ": input %", v->id,
                              " cannot be read through its views");
    ops.push_back(std::move(s));
  }
  return ops;
}

FusedKernel::FusedKernel(std::shared_ptr<const void> owner, FusionGroup group, LaunchOptions options,
                         std::shared_ptr<CompileCounters> counters, const codegen::DeviceTarget& target)
    : owner_(std::move(owner)),
      group_(std::move(group)),
      analysis_(codegen::analyze_group(group_, options.tuning)),
      options_(std::move(options)),
      counters_(std::move(counters)) {
  // The group is called by its kernel's name from here on (logs, stats, errors, profilers).
  profiled_ = plain_profiled_kernel(target);
  group_.kernel_name = profiled_.name;
  trace_ = GroupTrace(group_.kernel_name);
  wrong_answers_ = options_.fail.matches(Fault::Wrong, group_.kernel_name, false);
  const c10::Device device = group_device(group_);
  recordable_ = options_.record_launches && device.is_cuda() && !options_.profile && !options_.poison_outputs &&
                options_.fail.empty() &&
                std::all_of(group_.inputs.begin(), group_.inputs.end(), [&](const ir::Value* v) {
                  return v->type.is_tensor() && !ir::is_host_scalar(v->type, device);
                });
  for (const codegen::OperandShape& s : profiled_operands(group_)) profiled_view_sizes_.push_back(s.sizes);
  // (Poisoned outputs would overwrite the input before the kernel reads it.)
  if (options_.outputs_in_place && device.is_cuda() && !options_.poison_outputs) {
    in_place_ = in_place_candidates(group_, analysis_);
    if (std::all_of(in_place_.begin(), in_place_.end(), [](int j) { return j < 0; })) in_place_.clear();
  }
}

void FusedKernel::shape_operands(CallInputs& call) const {
  // Per-row inputs without the reduced dims ([R] for a [R, C] domain) take them back as size-1
  // dims, so that they broadcast over the reduced dims, not the trailing ones.
  if (const codegen::ReductionAnalysis* a = analysis()) {
    for (size_t k = 0; k < group_.inputs.size(); ++k) {
      const ir::Value* v = group_.inputs[k];
      auto& s = call.shapes[k];
      if (!s.is_tensor || !a->is_row(v) || v->type.sizes != a->rd.squeezed_shape() ||
          v->type.sizes == a->rd.keep_shape()) {
        continue;
      }
      for (int64_t d : a->rd.dims) {
        s.sizes.insert(s.sizes.begin() + d, 1);
        s.strides.insert(s.strides.begin() + d, 0);
      }
    }
  }
  call.domain.clear();
  for (const auto& s : call.shapes) {
    if (!s.is_tensor) continue;
    auto b = ir::broadcast_shapes(call.domain, s.sizes);
    TORCHFUSE_CHECK(b.has_value(), "torchfuse: ", group_.kernel_name, " inputs do not broadcast");
    call.domain = *b;
  }
  if (!analysis()) return;
  for (const ir::Node* r : analysis()->reductions) {
    for (size_t i = 0; i < r->pinned_sizes.size(); ++i) {
      const int64_t d = r->dims[i];
      TORCHFUSE_CHECK(d < static_cast<int64_t>(call.domain.size()) && call.domain[d] == r->pinned_sizes[i],
                      "torchfuse: ", group_.kernel_name, ": the input's dim ", d, " has size ",
                      d < static_cast<int64_t>(call.domain.size()) ? call.domain[d] : -1,
                      ", but the normalized shape says ", r->pinned_sizes[i]);
    }
  }
}

codegen::GeneratedKernel FusedKernel::plain_profiled_kernel(const codegen::DeviceTarget& target) const {
  CallInputs call;
  call.shapes = profiled_operands(group_);
  call.cat_starts = profiled_cat_starts(group_);
  shape_operands(call);
  check_output_shapes(call.domain);
  codegen::PlanRequest request{group_, analysis_, call.shapes, call.domain, target, options_.tuning, true};
  request.cat_starts = &call.cat_starts;
  return codegen::plan_and_generate(request).kernel;
}

void FusedKernel::check_output_shapes(const std::vector<int64_t>& domain) const {
  // The kernel writes each output per element or per row as the reduction analysis classifies
  // it; on the profiled types that must give the shape the graph computes (else the result's
  // shape, and the values read from it, would be wrong).
  const auto sizes = output_sizes(group_, analysis(), domain);
  for (size_t k = 0; k < sizes.size(); ++k) {
    const ir::Value* v = group_.outputs[k];
    TORCHFUSE_INTERNAL_ASSERT(sizes[k] == v->type.sizes, group_.kernel_name, " would write output %", v->id, " as ",
                              ir::shape_str(sizes[k]), ", the graph computes ", v->type.str());
  }
}

codegen::GeneratedKernel FusedKernel::kernel_for_profiled_types() const {
  return options_.fail.apply(profiled_, /*runtime_variant=*/false);
}

const codegen::GeneratedKernel& FusedKernel::kernel_for(const std::string& key,
                                                        const std::function<codegen::GeneratedKernel()>& generate) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kernels_.find(key);
    if (it != kernels_.end()) return it->second;
  }
  // Generated outside the lock, so that calls of this group whose layout already has its kernel
  // do not wait for code generation. Two threads may generate the same variant: the first kept wins.
  codegen::GeneratedKernel k = generate();
  const bool runtime_variant = k.source != profiled_.source;
  k = options_.fail.apply(std::move(k), runtime_variant);
  std::lock_guard<std::mutex> lock(mu_);
  const auto [it, inserted] = kernels_.emplace(key, std::move(k));
  if (inserted) variant_order_.push_back(key);
  return it->second;  // map nodes never move: the reference stays valid
}

void FusedKernel::prepare(int device) {
  const codegen::GeneratedKernel k = kernel_for_profiled_types();
  load_function(k, k.name, device, counters_.get());
  std::lock_guard<std::mutex> lock(mu_);
  prepared_ = k;
}

// ---- fallback ----

void FusedKernel::set_fallback(std::shared_ptr<torch::jit::Graph> graph) {
  fallback_graph_ = graph;
  fallback_code_ = std::make_shared<torch::jit::Code>(std::move(graph), group_.kernel_name + "_fallback");
}

std::string FusedKernel::fallback_reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fallback_reason_;
}

std::vector<c10::IValue> FusedKernel::run_fallback_on(const std::vector<c10::IValue>& inputs) const {
  TORCHFUSE_CHECK(fallback_code_ != nullptr, "torchfuse: fusion group ", group_.kernel_name,
                  " has no ATen fallback to run: ", no_fallback_why_);
  std::vector<c10::IValue> stack = inputs;
  torch::jit::InterpreterState(*fallback_code_).run(stack);
  return stack;
}

void FusedKernel::fail(const KernelFailure& failure, const std::string& when) {
  TORCHFUSE_CHECK(!options_.strict, "torchfuse (strict): fusion group ", group_.kernel_name, " (", group_.describe(),
                  ") cannot run fused ", when, ": ", failure.what());
  TORCHFUSE_CHECK(fallback_code_ != nullptr, failure.what(), "\n(fusion group ", group_.kernel_name,
                  " has no fallback: ", no_fallback_why_, ")");
  fall_back(failure.what(), failure.kernel_source(), /*warn=*/true);
}

void FusedKernel::fall_back(const std::string& error, const std::string& kernel_source, bool warn) {
  TORCHFUSE_INTERNAL_ASSERT(fallback_code_ != nullptr, group_.kernel_name, " has no fallback graph");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (fell_back_) return;  // another thread's failure was first
    fallback_reason_ = error;
    fell_back_ = true;
  }
  if (!warn) return;
  std::string message = "torchfuse: fusion group " + group_.kernel_name + " (" + group_.describe() +
                        ") cannot run fused; from now on its TorchScript ops run through ATen (the rest of the "
                        "graph stays fused):\n" + error;
  if (error.find("--- kernel source ---") == std::string::npos) message += "\n--- kernel source ---\n" + kernel_source;
  log_warn(message);
}

bool FusedKernel::fall_back_for_this_call(const std::string& error) {
  TORCHFUSE_CHECK(!options_.strict, "torchfuse (strict): fusion group ", group_.kernel_name, " (", group_.describe(),
                  ") cannot run fused at run time: CUDA out of memory allocating its outputs: ", error);
  if (fallback_code_ == nullptr) return false;
  ++oom_calls_;
  if (!oom_logged_.exchange(true)) {
    log_warn("torchfuse: fusion group " + group_.kernel_name + " (" + group_.describe() +
             ") ran out of CUDA memory allocating its outputs; this call runs its TorchScript ops through ATen "
             "and later calls try the kernel again (logged once per group; stats() counts these calls as "
             "oom_calls):\n" + error);
  }
  return true;
}

// An input holding no elements has no data pointer (LibTorch 2.x gives nullptr), and a kernel
// whose loads the compiler hoisted above their bounds checks reads it anyway: a reduction over
// an empty dim (a row of length 0) faulted at address 0 (fuzz seed 83, program 698), which kills
// the CUDA context. Such a call runs the group's ATen ops, which compute eager's result (or raise
// eager's error) at no cost worth a kernel, under `strict` too (an empty call is no failure of
// the kernel's); a group without a fallback raises an error instead of launching.
bool FusedKernel::empty_input_falls_back(const std::vector<c10::IValue>& stack) {
  const size_t n = group_.inputs.size();
  bool empty = false;
  for (size_t k = stack.size() - n; k < stack.size() && !empty; ++k)
    empty = stack[k].isTensor() && stack[k].toTensor().numel() == 0;
  if (!empty) return false;
  TORCHFUSE_CHECK(fallback_code_ != nullptr, "torchfuse: fusion group ", group_.kernel_name, " (", group_.describe(),
                  ") got an input with no elements, which its kernel cannot read, and has no ATen fallback to run "
                  "instead: ", no_fallback_why_);
  return true;
}

void FusedKernel::run_fallback(std::vector<c10::IValue>& stack) {
  ++fallback_calls_;
  const size_t n = group_.inputs.size();
  TORCHFUSE_INTERNAL_ASSERT(stack.size() >= n, "stack holds ", stack.size(), " values, group needs ", n);
  std::vector<c10::IValue> local(std::make_move_iterator(stack.end() - n), std::make_move_iterator(stack.end()));
  stack.erase(stack.end() - n, stack.end());
  torch::jit::InterpreterState(*fallback_code_).run(local);
  TORCHFUSE_INTERNAL_ASSERT(local.size() == group_.outputs.size(), group_.kernel_name, "'s fallback returned ",
                            local.size(), " values, the group has ", group_.outputs.size(), " outputs");
  for (auto& v : local) stack.push_back(std::move(v));
  HotPathClock::mark(HotPhase::fallback);
}

GroupStats FusedKernel::stats() const {
  GroupStats s;
  s.kernel_name = group_.kernel_name;
  s.description = group_.describe();
  s.calls = calls_;
  s.launches = launches_;
  s.fallback_calls = fallback_calls_;
  s.oom_calls = oom_calls_;
  s.recorded_calls = recorded_calls_;
  s.outputs_in_place = outputs_in_place_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s.fell_back = fell_back_;
    s.fallback_reason = fallback_reason_;
  }
  if (options_.profile) {
    const KernelTimer::Totals t = timer_.totals();
    s.timed_calls = t.calls;
    s.total_ms = t.ms;
    s.mean_ms = t.calls > 0 ? t.ms / static_cast<double>(t.calls) : 0.0;
  }
  return s;
}

std::vector<codegen::GeneratedKernel> FusedKernel::kernels() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<codegen::GeneratedKernel> out;
  if (prepared_) out.push_back(*prepared_);
  for (const std::string& key : variant_order_) {
    const codegen::GeneratedKernel& k = kernels_.at(key);
    if (!prepared_ || k.source != prepared_->source) out.push_back(k);
  }
  return out;
}

int64_t FusedKernel::variants() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(kernels_.size());
}

namespace {

// The group's inputs from the stack (input_differs found nothing wrong with them), read through
// the group's views. `views_fit` turns false when an input's strides do not let a view merge
// its dims: the guards pin ranks and which dims are size 1, so the fusion passes' check of the
// broadcast holds, but not strides (a group input computed by an ATen op may come strided on
// another call); or when a range or select does not fit the call's sizes as it fit the
// profile's (eager would raise, or a range is 0, 1 or more elements long where the profile's
// was another of these), or inputs meeting before one disagree on its dim's size: that call
// runs the fallback, which is eager.
CallInputs take_inputs(std::vector<c10::IValue>& stack, const FusionGroup& g,
                       const std::vector<std::vector<int64_t>>& profiled_view_sizes, bool& views_fit) {
  views_fit = true;
  const size_t n = g.inputs.size();
  CallInputs call;
  call.values.assign(std::make_move_iterator(stack.end() - n), std::make_move_iterator(stack.end()));
  stack.erase(stack.end() - n, stack.end());
  call.shapes.reserve(n);
  bool have_device = false;
  const c10::Device device = group_device(g);
  RangeSizes seen;
  CallSteps steps;
  if (!steps.take(g, call.values)) {
    views_fit = false;
    for (size_t k = 0; k < n; ++k) call.shapes.emplace_back();
    return call;
  }
  // Cats: the size of each piece, from the inputs read through it, places the pieces.
  std::optional<CatPlaces> places;
  if (!g.cats.empty()) {
    RangeSizes pieces;
    for (size_t k = 0; k < n && views_fit; ++k) {
      codegen::OperandShape s;
      if (number_operand(g.inputs[k], device, s) || k >= g.input_views.size()) continue;
      const at::Tensor& t = call.values[k].toTensor();
      views_fit = cat_piece_size(steps.of(g, k), t.sizes().vec(), t.strides().vec(), pieces);
    }
    if (views_fit) places = place_cat_pieces(g, std::move(pieces), &call.cat_starts);
    views_fit = views_fit && places.has_value();
    if (!views_fit) {
      // The fallback runs: the shapes are not read.
      for (size_t k = 0; k < n; ++k) call.shapes.emplace_back();
      return call;
    }
  }
  for (size_t k = 0; k < n; ++k) {
    const ir::Value* v = g.inputs[k];
    const c10::IValue& iv = call.values[k];
    codegen::OperandShape s;
    if (number_operand(v, device, s)) {
      call.shapes.push_back(s);
      continue;
    }
    const at::Tensor& t = iv.toTensor();
    if (!have_device) {
      call.device = t.device();
      have_device = true;
    }
    s.dtype = t.scalar_type();
    s.sizes = t.sizes().vec();
    s.strides = t.strides().vec();
    if (k < g.input_views.size() && !g.input_views[k].empty()) {
      // A path with run-time dims must keep the profiled result's size-1 dims, which the plan
      // rests on (the guards pin them for inputs, not for sizes the graph computes).
      views_fit = views_fit &&
                  apply_view_steps(steps.of(g, k), s.sizes, s.strides, s.offset, &seen, places ? &*places : nullptr) &&
                  (!steps.has_runtime_dims_at(k) || same_size_classes(s.sizes, profiled_view_sizes.at(k)));
    }
    call.shapes.push_back(std::move(s));
  }
  TORCHFUSE_INTERNAL_ASSERT(have_device, g.kernel_name, " has no tensor input");
  views_fit = views_fit && range_sizes_agree(std::move(seen));
  return call;
}

}  // namespace

void FusedKernel::check_can_fall_back(const std::string& why) const {
  TORCHFUSE_CHECK(!options_.strict && fallback_code_ != nullptr, "torchfuse", options_.strict ? " (strict)" : "",
                  ": fusion group ", group_.kernel_name, " (", group_.describe(), ") cannot run fused on this call: ", why,
                  options_.strict ? std::string() : " and the group has no fallback: " + no_fallback_why_);
}

void FusedKernel::run(std::vector<c10::IValue>& stack) {
  HotPathClock::mark(HotPhase::between);
  const HotPathClock::MarkOnExit exit(HotPhase::node_exit);
  // Profilers see each call of the group, fused or not, under its kernel's name (group_trace.h).
  RECORD_FUNCTION(trace_.name().c_str(), c10::ArrayRef<const c10::IValue>{});
  const GroupTrace::Range range(trace_);
  run_call(stack);
}

void FusedKernel::run_call(std::vector<c10::IValue>& stack) {
  ++calls_;
  if (fell_back_) return run_fallback(stack);
  const size_t n = group_.inputs.size();
  TORCHFUSE_INTERNAL_ASSERT(stack.size() >= n, "stack holds ", stack.size(), " values, group needs ", n);
  for (size_t k = 0; k < n; ++k) {
    const std::string why = input_differs(group_.inputs[k]->type, stack[stack.size() - n + k]);
    if (why.empty()) continue;
    // Eager's result: the group's own ops through ATen, for this call.
    check_can_fall_back("its input " + std::to_string(k) + " (%" + std::to_string(group_.inputs[k]->id) + ") " + why);
    return run_fallback(stack);
  }
  HotPathClock::mark(HotPhase::guards);
  if (recordable_ && run_recorded(stack)) return;
  // (After the recorded path: no geometry with an empty input is recorded where this applies.)
  if (empty_input_falls_back(stack)) return run_fallback(stack);
  // Recorded below when the planned launch can be repeated (taken before the stack is popped).
  CallGeometry geometry;
  const bool record = recordable_ && records_.wants_more() && GroupProbe::current() == nullptr &&
                      geometry.take(stack.data() + stack.size() - n, n) && !records_.find(geometry);
  bool views_fit = true;
  CallInputs call = take_inputs(stack, group_, profiled_view_sizes_, views_fit);
  if (!views_fit) {
    check_can_fall_back(
        "an input does not fit the group's views (strides that do not merge, or sizes its slices, selects or "
        "splits take otherwise than the profile's)");
    for (auto& v : call.values) stack.push_back(std::move(v));
    return run_fallback(stack);
  }
  shape_operands(call);
  // Not on a recording call (its pointers must tell inputs from outputs) nor under a probe (which
  // runs the group's ops on the same inputs after the kernel).
  if (!in_place_.empty() && !record && GroupProbe::current() == nullptr) {
    call.output_sizes = output_sizes(group_, analysis(), call.domain);
    call.taken = take_over(
        in_place_, call.values.data(), [&](size_t k) { return c10::IntArrayRef(call.output_sizes[k]); },
        [&](size_t k) { return group_.outputs[k]->type.dtype; });
  }
  const OnDevice on_device(call.device);
  HotPathClock::mark(HotPhase::inputs);
  std::vector<at::Tensor> outputs;
  try {
    if (record) {
      const LaunchRecorder recorder;
      outputs = launch_timed(call);
      records_.add(recorder.finish(geometry, call.values.data(), n, outputs, call.device));
    } else {
      outputs = launch_timed(call);
    }
  } catch (const KernelFailure& failure) {
    fail(failure, "at run time");
    // Nothing was launched for this call (or only a first kernel whose outputs are dropped): the
    // fallback computes it from the same inputs.
    for (auto& v : call.values) stack.push_back(std::move(v));
    return run_fallback(stack);
  } catch (const codegen::PlanRefused& refused) {
    // No layout runs this call's shapes (a scan's rows too long): nothing was launched, and the
    // next call's shapes may fit again.
    check_can_fall_back(refused.what());
    for (auto& v : call.values) stack.push_back(std::move(v));
    return run_fallback(stack);
  } catch (const c10::OutOfMemoryError& oom) {
    // Outputs, partials and counters are allocated before the launch: nothing ran. Memory may be
    // free again later, so only this call takes the fallback.
    if (!fall_back_for_this_call(oom.what_without_backtrace())) throw;
    for (auto& v : call.values) stack.push_back(std::move(v));
    return run_fallback(stack);
  }
  for (int j : call.taken) outputs_in_place_ += j >= 0 ? 1 : 0;
  after_kernel(call, outputs);
  for (auto& t : outputs) stack.emplace_back(std::move(t));
}

bool FusedKernel::run_recorded(std::vector<c10::IValue>& stack) {
  // The probe and the debug options watch each call: those calls take the planned path.
  if (!records_.any() || GroupProbe::current()) return false;
  const size_t n = group_.inputs.size();
  const c10::IValue* inputs = stack.data() + stack.size() - n;
  CallGeometry geometry;
  if (!geometry.take(inputs, n)) return false;
  const LaunchRecord* record = records_.find(geometry);
  if (!record) return false;
  HotPathClock::mark(HotPhase::recorded);
  std::vector<at::Tensor> outputs;
  try {
    int taken = 0;
    if (!launch_recorded(*record, inputs, in_place_, outputs, taken)) return false;
    outputs_in_place_ += taken;
  } catch (const c10::OutOfMemoryError&) {
    return false;  // the planned path allocates again, and falls back where it must
  }
  stack.erase(stack.end() - n, stack.end());
  for (auto& t : outputs) stack.emplace_back(std::move(t));
  count_launches(1);
  ++recorded_calls_;
  return true;
}

void FusedKernel::after_kernel(const CallInputs& call, const std::vector<at::Tensor>& outputs) const {
  if (wrong_answers_ && !outputs.empty() && outputs.front().numel() > 0) {
    // debug_fail_kernels "wrong:": a wrong answer for compare_groups to find (element 0 of the
    // first output, in place, after the kernel wrote it).
    at::Tensor first = outputs.front().reshape({-1}).narrow(0, 0, 1);
    if (first.scalar_type() == at::kBool) {
      first.logical_not_();
    } else {
      first.add_(1);
    }
  }
  if (GroupProbe* probe = GroupProbe::current()) probe->fused_call(*this, call.values, outputs);
}

namespace {

thread_local GroupProbe* installed_probe = nullptr;

}  // namespace

GroupProbe* GroupProbe::current() { return installed_probe; }

GroupProbe::Scope::Scope(GroupProbe* probe) : previous_(installed_probe) { installed_probe = probe; }

GroupProbe::Scope::~Scope() { installed_probe = previous_; }

std::string input_differs(const ir::Type& compiled, const c10::IValue& actual) {
  if (compiled.is_scalar()) {
    const bool same = compiled.dtype == c10::ScalarType::Double ? actual.isDouble()
                      : compiled.dtype == c10::ScalarType::Bool ? actual.isBool()
                                                                : actual.isInt();
    return same ? "" : "is a " + std::string(actual.tagKind()) + ", compiled for a number of dtype " +
                           c10::toString(compiled.dtype);
  }
  if (!actual.isTensor() || !actual.toTensor().defined()) return "is " + std::string(actual.tagKind()) + ", not a tensor";
  // Checked on every call: nothing is allocated unless something differs.
  const at::Tensor& t = actual.toTensor();
  auto same_class = [](int64_t a, int64_t b) { return (a == 1) == (b == 1) && (a == 0) == (b == 0); };
  bool same = t.layout() == c10::kStrided && t.scalar_type() == compiled.dtype && t.device() == compiled.device &&
              t.dim() == static_cast<int64_t>(compiled.sizes.size());
  for (int64_t d = 0; same && d < t.dim(); ++d) same = same_class(t.size(d), compiled.sizes[d]);
  if (same) return "";
  if (t.layout() != c10::kStrided) return detail::cat("is a tensor of layout ", t.layout(), ", compiled for a strided one");
  auto str = [](const ir::Type& type) { return type.str() + (type.device.is_cuda() ? "" : " on " + type.device.str()); };
  return "is " + str(type_of_ivalue(actual)) + ", compiled for " + str(compiled);
}

std::vector<at::Tensor> FusedKernel::launch_timed(const CallInputs& call) {
  if (!options_.profile) return launch_group(*this, call);
  const KernelTimer::Mark mark = timer_.start(call.device);
  std::vector<at::Tensor> outputs;
  try {
    outputs = launch_group(*this, call);
  } catch (...) {
    timer_.discard(mark);
    throw;
  }
  timer_.stop(mark);
  return outputs;
}

}  // namespace runtime
}  // namespace torchfuse
