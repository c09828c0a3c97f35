#include "runtime/compiled_module.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include <ATen/Context.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/constants.h>

#include "codegen/nvrtc.h"
#include "codegen/device_target.h"
#include "passes/pass_list.h"
#include "runtime/driver_api.h"
#include "runtime/fallback_graph.h"
#include "runtime/fusion_op.h"
#include "runtime/graph_rewrite.h"
#include "runtime/hot_path_clock.h"
#include "runtime/kernel_cache.h"
#include "runtime/launch_util.h"
#include "runtime/process_tuning.h"
#include "runtime/reference.h"
#include "runtime/strict.h"
#include "runtime/unplannable_groups.h"
#include "src/error.h"
#include "src/prepare_graph.h"

namespace torchfuse {


// ---- Specialization ----

Specialization::~Specialization() {
  code.reset();
  for (int64_t id : kernel_ids) runtime::unregister_kernel(id);
}

// ---- CompiledModuleImpl ----

namespace {

// Runs a rewritten graph. A torchfuse::Error of a fusion node reaches the caller as itself,
// not as the std::runtime_error the interpreter wraps it in.
c10::IValue run_rewritten(const torch::jit::Code& code, const std::vector<c10::IValue>& inputs) {
  torch::jit::Stack stack(inputs.begin(), inputs.end());
  runtime::take_fusion_op_error();  // drop a stale one
  try {
    torch::jit::InterpreterState(code).run(stack);
  } catch (const std::exception&) {
    if (std::exception_ptr own = runtime::take_fusion_op_error()) std::rethrow_exception(own);
    throw;
  }
  return graph_result(stack);
}

}  // namespace

c10::IValue Specialization::run(const std::vector<c10::IValue>& inputs) const {
  return direct ? direct->run(inputs) : run_rewritten(*code, inputs);
}

namespace {

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string(v) != "0";
}

// The options, checked: every bad value is an Error naming the field.
CompileOptions validated(CompileOptions o) {
  TORCHFUSE_CHECK(o.min_group_size >= 1, "torchfuse: CompileOptions::min_group_size must be at least 1, got ",
                  o.min_group_size);
  TORCHFUSE_CHECK(o.max_specializations >= 1, "torchfuse: CompileOptions::max_specializations must be at least 1, got ",
                  o.max_specializations);
  TORCHFUSE_CHECK(o.cuda_graph_warmup_calls >= 0,
                  "torchfuse: CompileOptions::cuda_graph_warmup_calls must be at least 0, got ", o.cuda_graph_warmup_calls);
  TORCHFUSE_CHECK(codegen::arch_major(o.offline_arch).has_value(),
                  "torchfuse: CompileOptions::offline_arch must look like \"sm_90\", got \"", o.offline_arch, "\"");
  runtime::FailureInjection::parse(o.debug_fail_kernels);  // a malformed entry is an Error now, not at the first call
  return o;
}

// The options with what the environment adds: profiling, CUDA graphs, async compile, outputs in
// place, injected failures.
CompileOptions resolve_env(CompileOptions o) {
  o.profile_kernels = o.profile_kernels || env_flag("TORCHFUSE_PROFILE_KERNELS");
  o.cuda_graphs = o.cuda_graphs || env_flag("TORCHFUSE_CUDA_GRAPHS");
  o.async_compile = o.async_compile || env_flag("TORCHFUSE_ASYNC_COMPILE");
  o.outputs_in_place = o.outputs_in_place || env_flag("TORCHFUSE_OUTPUTS_IN_PLACE");
  o.debug_fail_kernels = runtime::FailureInjection::spec_from(o.debug_fail_kernels);
  return o;
}

}  // namespace

CompiledModuleImpl::CompiledModuleImpl(std::shared_ptr<torch::jit::Graph> graph, CompileOptions options)
    : graph_(std::move(graph)),
      options_(validated(resolve_env(std::move(options)))),
      logs_(LogSwitches::from_env_and(options_.logs)),
      tuning_(runtime::resolve_tuning(options_.tune)),
      eager_code_(graph_, "torchfuse_eager"),
      counters_(std::make_shared<runtime::CompileCounters>()),
      // Compiling runs the graph once to learn its types: a graph that writes to its inputs or
      // parameters would see that write twice, so it always runs eager.
      writes_inputs_(writes_to_inputs_or_constants(graph_)) {
  runtime::register_fusion_op();
  rewrite_options_.attention = options_.rewrite_attention;
  rewrite_options_.gemm_epilogues = options_.gemm_epilogues;
  rewrite_options_.linear_bias = options_.split_linear_bias;
  rewrite_options_.conv_bias = options_.split_conv_bias;
  rewrite_options_.channels_last = options_.channels_last_convs;
  rewrite_options_.concat_linears = options_.concat_linears;
  rewrite_options_.plain_gemms = options_.cublaslt_gemms;
  rewrite_options_.gemm_candidates = options_.gemm_autotune ? kGemmAutotuneCandidates : 1;
  rewrite_options_.time_column_parts = options_.concat_linears_autotune || options_.gemm_autotune;
  rewrite_options_.attention_timed = options_.attention_autotune.value_or(options_.cuda_graphs);
  rewrite_options_.shape_tensors = options_.cache_shape_tensors;
  rewrite_options_.logs = logs_;
  // Where the frozen parameters live, for the message of a device mix.
  for (torch::jit::Node* n : graph_->nodes()) {
    if (n->kind() != c10::prim::Constant || !n->output()->type()->cast<c10::TensorType>()) continue;
    const auto value = torch::jit::toIValue(n->output());
    if (!value || !value->isTensor() || !value->toTensor().defined()) continue;
    const c10::Device d = value->toTensor().device();
    if (std::find(constant_devices_.begin(), constant_devices_.end(), d) == constant_devices_.end())
      constant_devices_.push_back(d);
  }
  if (writes_inputs_ && logs_.fusion) log_info("fusion: the graph writes to its inputs or parameters; it runs eager");
  if (options_.cuda_graphs) {
    runtime::GraphPolicy policy;
    policy.warmup_calls = options_.cuda_graph_warmup_calls;
    policy.max_graphs = options_.max_specializations;
    policy.zero_copy_outputs = options_.cuda_graph_zero_copy_outputs;
    if (options_.profile_kernels) policy.refused = "profile_kernels times every kernel with CUDA events";
    graphs_ = std::make_unique<runtime::GraphRunner>(policy);
  }
}

namespace {

// A value as messages name it: "None", "an undefined tensor", "Tensor", "a tuple of 3", "Double".
std::string kind_of(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor().defined() ? "Tensor" : "an undefined tensor";
  if (v.isTuple()) return "a tuple of " + std::to_string(v.toTupleRef().elements().size());
  if (v.isList()) return "a list";
  if (v.isGenericDict()) return "a dict";
  return v.tagKind();
}

// What is wrong with passing `v` where the graph declares `declared` ("" when nothing is):
// "must be a Tensor, got None", "element 1 must be a Tensor, got an undefined tensor". Tensors
// must be defined; lists, tuples, dicts and optionals are checked element by element (the
// interpreter would fail on them later with an internal assert or a message naming no input).
// An int is a float only at the top level (the caller converts it). Other declared types are
// left to the interpreter.
std::string misfit(const c10::Type& declared, const c10::IValue& v, bool top_level) {
  auto must = [&](const std::string& what) { return "must be " + what + ", got " + kind_of(v); };
  switch (declared.kind()) {
    case c10::TypeKind::TensorType:
      return v.isTensor() && v.toTensor().defined() ? "" : must("a Tensor");
    case c10::TypeKind::FloatType:
      return v.isDouble() || (top_level && v.isInt()) ? "" : must("a float");
    case c10::TypeKind::IntType:
      return v.isInt() ? "" : must("an int");
    case c10::TypeKind::BoolType:
      return v.isBool() ? "" : must("a bool");
    case c10::TypeKind::OptionalType:
      // TorchScript takes an undefined tensor for None.
      if (v.isNone() || (v.isTensor() && !v.toTensor().defined())) return "";
      {
        const c10::Type& element = *declared.expectRef<c10::OptionalType>().getElementType();
        const std::string why = misfit(element, v, false);
        // "must be a Tensor or None, got Int"; what is wrong inside a container stays as it is.
        return why.empty() || why.rfind("must be ", 0) != 0 ? why : must("a " + element.repr_str() + " or None");
      }
    case c10::TypeKind::ListType: {
      if (!v.isList()) return must("a " + declared.repr_str());
      const c10::Type& element = *declared.expectRef<c10::ListType>().getElementType();
      const auto list = v.toListRef();
      for (size_t i = 0; i < list.size(); ++i) {
        const std::string why = misfit(element, list[i], false);
        if (!why.empty()) return "element " + std::to_string(i) + " " + why;
      }
      return "";
    }
    case c10::TypeKind::TupleType: {
      const auto elements = declared.expectRef<c10::TupleType>().elements();
      if (!v.isTuple() || v.toTupleRef().elements().size() != elements.size()) return must("a " + declared.repr_str());
      for (size_t i = 0; i < elements.size(); ++i) {
        const std::string why = misfit(*elements[i], v.toTupleRef().elements()[i], false);
        if (!why.empty()) return "element " + std::to_string(i) + " " + why;
      }
      return "";
    }
    case c10::TypeKind::DictType: {
      if (!v.isGenericDict()) return must("a " + declared.repr_str());
      const c10::Type& value = *declared.expectRef<c10::DictType>().getValueType();
      for (const auto& entry : v.toGenericDict()) {
        const std::string why = misfit(value, entry.value(), false);
        const std::string key = entry.key().isString() ? "'" + entry.key().toStringRef() + "'"
                                : entry.key().isInt()  ? std::to_string(entry.key().toInt())
                                                       : entry.key().tagKind();
        if (!why.empty()) return "entry " + key + " " + why;
      }
      return "";
    }
    default:
      return "";
  }
}

}  // namespace

void CompiledModuleImpl::check_arity(std::vector<c10::IValue>& inputs) const {
  TORCHFUSE_CHECK(inputs.size() == graph_->inputs().size(), "torchfuse: forward expects ", graph_->inputs().size(),
                  " inputs, got ", inputs.size());
  // The types the graph declares: a tensor where a number is expected (or the reverse), None or
  // an undefined tensor where a tensor is, a list of the wrong kind are clear errors here, not
  // failures deep inside an op.
  for (size_t i = 0; i < inputs.size(); ++i) {
    const c10::Type& declared = *graph_->inputs()[i]->type();
    c10::IValue& v = inputs[i];
    // The common case first and cheaply: this runs on every call.
    if (declared.kind() == c10::TypeKind::TensorType && v.isTensor() && v.toTensor().defined()) continue;
    const std::string why = misfit(declared, v, true);
    TORCHFUSE_CHECK(why.empty(), "torchfuse: forward input ", i, " ('", graph_->inputs()[i]->debugNameBase(), "') ",
                    why);
    // As Python's call of a scripted function does: the graph computes with a float.
    if (declared.kind() == c10::TypeKind::FloatType && v.isInt()) v = static_cast<double>(v.toInt());
  }
  if (input_check_) input_check_(inputs);
}

namespace {

// Calls fn on every defined tensor of `iv`, inside tuples, lists and dicts too.
template <typename Fn>
void for_each_tensor(const c10::IValue& iv, const Fn& fn) {
  if (iv.isTensor()) {
    if (iv.toTensor().defined()) fn(iv.toTensor());
  } else if (iv.isTuple()) {
    for (const auto& e : iv.toTupleRef().elements()) for_each_tensor(e, fn);
  } else if (iv.isList()) {
    for (const auto& e : iv.toListRef()) for_each_tensor(e, fn);
  } else if (iv.isGenericDict()) {
    for (const auto& entry : iv.toGenericDict()) for_each_tensor(entry.value(), fn);
  }
}

// "f32[4, 8] on cuda:0", "list [f32[4] on cpu, f32[4] on cpu]", "Double".
std::string describe(const c10::IValue& v) {
  if (v.isTensor() && v.toTensor().defined()) {
    const at::Tensor& t = v.toTensor();
    return std::string(ir::dtype_short_name(t.scalar_type())) + ir::shape_str(t.sizes().vec()) + " on " +
           t.device().str();
  }
  auto elements = [](const char* name, const std::vector<c10::IValue>& items) {
    std::string s = std::string(name) + " [";
    for (size_t i = 0; i < items.size() && i < 4; ++i) s += (i ? ", " : "") + describe(items[i]);
    return s + (items.size() > 4 ? ", ...]" : "]");
  };
  if (v.isTuple()) {
    const auto& e = v.toTupleRef().elements();
    return elements("tuple", std::vector<c10::IValue>(e.begin(), e.end()));
  }
  if (v.isList()) return elements("list", v.toListRef().vec());
  if (v.isGenericDict()) {
    std::vector<c10::IValue> values;
    for (const auto& entry : v.toGenericDict()) values.push_back(entry.value());
    return elements("dict", values);
  }
  return kind_of(v);
}

// The message of an ATen error, without the C++ backtrace c10::Error appends.
std::string message_of(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
  return e.what();
}

}  // namespace

std::string CompiledModuleImpl::aten_failure(const std::vector<c10::IValue>& inputs, const std::exception& e) const {
  std::string inputs_text;
  std::vector<std::string> devices;
  auto add_device = [&](const c10::Device& d) {
    if (std::find(devices.begin(), devices.end(), d.str()) == devices.end()) devices.push_back(d.str());
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = i < graph_->inputs().size() ? graph_->inputs()[i]->debugNameBase() : "?";
    inputs_text += std::string(i ? ", " : "") + std::to_string(i) + " ('" + name + "') " + describe(inputs[i]);
    for_each_tensor(inputs[i], [&](const at::Tensor& t) { add_device(t.device()); });
  }
  std::string text = "torchfuse: forward failed in an ATen op; inputs: " + inputs_text;
  for (const c10::Device& d : constant_devices_) add_device(d);
  if (devices.size() > 1) {
    text += "\nits tensors are on different devices (";
    for (size_t i = 0; i < devices.size(); ++i) text += (i ? ", " : "") + devices[i];
    text += ")";
    if (!constant_devices_.empty()) {
      text += "; its tensor constants (frozen parameters) are on";
      for (const c10::Device& d : constant_devices_) text += " " + d.str();
    }
  }
  return text + "\nATen's error: " + message_of(e);
}

template <typename Fn>
auto CompiledModuleImpl::in_aten(const std::vector<c10::IValue>& inputs, Fn&& run) const {
  try {
    return run();
  } catch (const Error&) {
    throw;  // torchfuse's own (a fusion group's, a check's) says what is wrong already
  } catch (const std::exception& e) {
    throw Error(aten_failure(inputs, e));
  }
}

c10::IValue CompiledModuleImpl::forward_eager(std::vector<c10::IValue> inputs) {
  check_arity(inputs);
  return in_aten(inputs, [&] { return run_eager(inputs); });
}

c10::IValue CompiledModuleImpl::run_eager(const std::vector<c10::IValue>& inputs) {
  torch::jit::Stack stack(inputs.begin(), inputs.end());
  torch::jit::InterpreterState(eager_code_).run(stack);
  return graph_result(stack);
}

std::optional<c10::Device> CompiledModuleImpl::fused_device(const std::vector<c10::IValue>& inputs,
                                                            std::string* why_eager) const {
  std::string why;
  const auto eager = [&](std::string reason) -> std::optional<c10::Device> {
    if (why_eager) *why_eager = std::move(reason);
    return std::nullopt;
  };
  if (writes_inputs_) return eager("the graph writes its inputs or parameters");
  std::optional<c10::Device> cuda;
  for (const auto& iv : inputs) {
    for_each_tensor(iv, [&](const at::Tensor& t) {
      if (!why.empty()) return;
      if (t.requires_grad() && c10::GradMode::is_enabled()) why = "an input requires grad under grad mode";  // autograd needs eager
      if (t.device().is_cuda()) {
        // Tensors on two GPUs: eager moves them where the graph says (or fails, and says why);
        // a specialization's kernels run on one device.
        if (cuda && *cuda != t.device()) why = "its tensors are on two GPUs";
        cuda = t.device();
      } else if (!t.device().is_cpu()) {
        why = "a tensor is on " + t.device().str();
      }
    });
  }
  if (!why.empty()) return eager(why);
  if (hooks_.cpu_fallbacks) return cuda ? cuda : std::optional<c10::Device>(c10::Device(c10::kCPU));
  if (!cuda) return eager("no input is a CUDA tensor (fused kernels run on CUDA tensors)");
  std::string no_driver;
  if (runtime::driver_api(&no_driver) == nullptr) return eager("no usable CUDA driver: " + no_driver);
  return cuda;
}

std::unique_ptr<Specialization> CompiledModuleImpl::analyze(const std::vector<c10::IValue>& inputs, c10::IValue* result,
                                                            const codegen::DeviceTarget& target) const {
  auto spec = std::make_unique<Specialization>();
  auto graph = graph_->copy();
  Profile profile = profile_graph(graph, inputs);
  RewriteReport rewrites = run_graph_rewrites(*graph, profile, rewrite_options_);
  // Rewritten nodes are new values the profile has not seen: profile the rewritten graph, whose
  // result is then the one later calls reproduce.
  if (!rewrites.applied.empty()) profile = profile_graph(graph, inputs);
  if (result) *result = profile.result;
  spec->rewrites = std::move(rewrites.applied);
  spec->owned = std::move(rewrites.owned);
  spec->conversion = std::make_shared<Conversion>(convert_to_ir(*graph, profile));
  spec->graph = graph;  // the graph the conversion points into
  const ir::Graph& ir_graph = *spec->conversion->graph;
  ir::verify_or_throw(ir_graph, "conversion");
  spec->ir_before = ir::to_string(ir_graph);
  if (logs_.graph) log_info("IR before fusion:\n" + spec->ir_before);

  // Strict fuses lone ops too: a fusible op left to ATen would be an error.
  PassContext ctx(ir_graph, options_.strict ? 1 : options_.min_group_size, logs_);
  ctx.cut_column_bytes = tuning_.column_cut_kb < 0 ? 2 * target.l2_bytes : int64_t{tuning_.column_cut_kb} << 10;
  ctx.fuse_siblings = options_.fuse_siblings;
  // Ops a converter declined never reached the passes: their reasons come first, in
  // explain().refused and the fusion log alike.
  for (const std::string& why : rewrites.refused) ctx.refuse(why, {});
  for (const std::string& why : spec->conversion->declined) ctx.refuse(why, {});
  run_fusion_passes(ctx);
  spec->plan = std::move(ctx.plan);
  spec->ir_after = to_string(ir_graph, spec->plan);
  if (logs_.graph) log_info("IR after fusion:\n" + spec->ir_after);
  if (options_.strict) check_all_fused(*spec->conversion, spec->plan);

  runtime::LaunchOptions launch;
  launch.poison_outputs = options_.debug_poison_outputs;
  launch.record_launches = options_.record_launches;
  launch.outputs_in_place = options_.outputs_in_place;
  launch.strict = options_.strict;
  launch.profile = options_.profile_kernels;
  launch.fail = runtime::FailureInjection::parse(options_.debug_fail_kernels);
  launch.tuning = tuning_;
  std::shared_ptr<const void> owner = spec->conversion;
  runtime::drop_unplannable_groups(spec->plan, [&](const FusionGroup& g) {
    const runtime::FusedKernel probe(owner, g, launch, counters_, target);
    (void)probe;
  });
  for (const auto& g : spec->plan.groups) {
    auto k = std::make_shared<runtime::FusedKernel>(owner, g, launch, counters_, target);
    if (logs_.output_code) {
      log_info("generated kernel " + k->group().kernel_name + " (" + g.describe() + "):\n" +
               k->kernel_for_profiled_types().source);
    }
    spec->kernels.push_back(std::move(k));
  }
  return spec;
}

void CompiledModuleImpl::attach_fallbacks(Specialization& spec) const {
  for (const auto& k : spec.kernels) {
    try {
      k->set_fallback(runtime::build_fallback_graph(*spec.conversion, k->group()));
    } catch (const std::exception& e) {
      // Without a fallback a kernel failure stays an error; the fused path is unaffected.
      k->set_no_fallback(e.what());
    }
  }
}

void CompiledModuleImpl::finish(Specialization& spec) const {
  for (const auto& k : spec.kernels) spec.kernel_ids.push_back(runtime::register_kernel(k));
  runtime::rewrite_graph(*spec.graph, *spec.conversion, spec.plan, spec.kernel_ids);
  spec.code = std::make_unique<torch::jit::Code>(spec.graph, "torchfuse_fused");
  spec.direct = runtime::DirectCall::of(*spec.graph, spec.kernel_ids, spec.kernels);
}

void CompiledModuleImpl::bind_to_cuda(Specialization& spec, int device) const {
  attach_fallbacks(spec);
  for (const auto& k : spec.kernels) {
    // Compile now, so that the first fused call does not pay for NVRTC inside the graph.
    try {
      k->prepare(device);
    } catch (const runtime::KernelFailure& failure) {
      k->fail(failure, "when its specialization is built");
    }
  }
  finish(spec);
}

void CompiledModuleImpl::bind_to_fallbacks(Specialization& spec) const {
  attach_fallbacks(spec);
  for (const auto& k : spec.kernels) k->fall_back("run_on_fallbacks", "", /*warn=*/false);
  finish(spec);
}

c10::IValue CompiledModuleImpl::run_on_fallbacks(const std::vector<c10::IValue>& given) {
  std::vector<c10::IValue> inputs = given;
  check_arity(inputs);
  return in_aten(inputs, [&] {
    std::shared_ptr<Specialization> spec = analyze(inputs, nullptr, offline_target());
    bind_to_fallbacks(*spec);
    return run_rewritten(*spec->code, inputs);
  });
}

std::shared_ptr<Specialization> CompiledModuleImpl::build(const std::vector<c10::IValue>& inputs,
                                                          c10::Device device) const {
  if (hooks_.before_build) hooks_.before_build(inputs);
  if (!device.is_cuda()) {
    std::shared_ptr<Specialization> built = analyze(inputs, nullptr, offline_target());
    bind_to_fallbacks(*built);
    return built;
  }
  // Kernels are generated, and named, for the device they run on.
  const codegen::DeviceTarget target = runtime::target_of(runtime::device_info(device.index()), tuning_);
  std::shared_ptr<Specialization> built = analyze(inputs, nullptr, target);
  bind_to_cuda(*built, device.index());
  return built;
}

std::shared_ptr<Specialization> CompiledModuleImpl::specialization_for(const std::vector<c10::IValue>& inputs,
                                                                       c10::Device device, Unbuilt* unbuilt) {
  // Reused per thread: no allocation on a call of a known signature.
  thread_local std::vector<TensorGuardKey> keys;
  const bool keyed = tensor_guard_keys(inputs, keys);
  if (keyed) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [known, spec] : keyed_specs_)
      if (known == keys) return spec;
  }
  const std::string sig = input_signature(inputs);
  std::promise<std::shared_ptr<Specialization>> promise;
  {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = specs_.find(sig);
    if (it != specs_.end()) {
      // (Two threads may both miss the keys above: the second finds them listed here.)
      if (keyed && std::none_of(keyed_specs_.begin(), keyed_specs_.end(),
                                [&](const auto& entry) { return entry.first == keys; })) {
        keyed_specs_.emplace_back(keys, it->second);
      }
      return it->second;
    }
    if (options_.async_compile && (building_.count(sig) || failed_builds_.count(sig))) {
      auto failed = failed_builds_.find(sig);
      // Strict runs nothing fusible in ATen for good: the calls get the build's error, as they
      // would without async_compile.
      if (failed != failed_builds_.end() && options_.strict) std::rethrow_exception(failed->second.error);
      *unbuilt = building_.count(sig) ? Unbuilt::pending : Unbuilt::failed;  // never waits
      return nullptr;
    }
    auto pending = building_.find(sig);
    if (pending != building_.end()) {
      // Another thread builds this signature: wait for it (its error, if any, is this call's too).
      std::shared_future<std::shared_ptr<Specialization>> result = pending->second;
      lock.unlock();
      return result.get();
    }
    // Specializations being built count toward the limit, so that it holds however many threads
    // bring new signatures at once.
    const size_t taken = specs_.size() + building_.size();
    if (static_cast<int64_t>(taken) >= options_.max_specializations) {
      if (!warned_limit_) {
        log_warn(detail::cat("torchfuse: ", taken,
                             " specializations compiled (max_specializations); new input signatures run eager"));
        warned_limit_ = true;
      }
      *unbuilt = Unbuilt::over_limit;
      return nullptr;
    }
    if (logs_.recompiles) {
      log_info(detail::cat("recompiles: specialization #", taken, ": ",
                           why_recompile(input_guards(inputs), latest_guards_)));
    }
    latest_guards_ = input_guards(inputs);
    building_.emplace(sig, promise.get_future().share());
  }
  if (options_.async_compile) {
    build_in_background(sig, inputs, device, std::move(promise));
    *unbuilt = Unbuilt::pending;
    return nullptr;
  }
  // Built without the module's lock: calls of built signatures, and builds of other signatures,
  // go on meanwhile (profiling, conversion, fusion and NVRTC take milliseconds to seconds).
  std::shared_ptr<Specialization> built;
  try {
    built = build(inputs, device);
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      building_.erase(sig);  // nothing kept: a later call tries again
    }
    promise.set_exception(std::current_exception());
    throw;
  }
  publish(sig, built);
  promise.set_value(built);
  return built;
}

void CompiledModuleImpl::publish(const std::string& sig, const std::shared_ptr<Specialization>& built) {
  std::lock_guard<std::mutex> lock(mu_);
  built->index = static_cast<int>(specs_.size());
  specs_[sig] = built;
  building_.erase(sig);
  latest_ = built;
}

void CompiledModuleImpl::build_in_background(const std::string& sig, const std::vector<c10::IValue>& inputs,
                                             c10::Device device,
                                             std::promise<std::shared_ptr<Specialization>> promise) {
  // The worker keeps the call's tensors alive (refcounts) and reads them on its own stream after
  // the caller's stream work that made them (BackgroundBuilds::submit); the caller runs eager.
  // `this` stays valid: background_, destroyed first, waits for the running build.
  auto done = std::make_shared<std::promise<std::shared_ptr<Specialization>>>(std::move(promise));
  auto build_job = [this, sig, device, done, held = runtime::inputs_for_worker(inputs)] {
    std::shared_ptr<Specialization> built = build(held, device);
    ++background_builds_;  // (before publishing: who sees the specialization sees it counted)
    publish(sig, built);
    if (logs_.recompiles) log_info(detail::cat("recompiles: specialization #", built->index, " built in the background"));
    done->set_value(built);
  };
  auto on_failure = [this, sig, done](std::exception_ptr error) {
    background_build_failed(sig, error);
    done->set_exception(error);
  };
  try {
    background_.submit(device, std::move(build_job), on_failure);
  } catch (...) {
    on_failure(std::current_exception());  // no worker or no CUDA event: as a failed build
  }
}

void CompiledModuleImpl::background_build_failed(const std::string& sig, std::exception_ptr error) {
  std::string what = "(not a std::exception)";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  // Not retried (a failure of profiling or conversion would fail again): logged once, and the
  // signature's calls run eager, counted in Stats::async_failed_calls (under strict they throw).
  log_warn("torchfuse: the background build of the specialization for input signature '" +
           sig.substr(0, sig.size() - 2) + "' failed; its calls run eager: " + what);
  std::lock_guard<std::mutex> lock(mu_);
  ++background_build_failures_;
  building_.erase(sig);
  failed_builds_[sig] = FailedBuild{error, what.substr(0, what.find('\n'))};
}

c10::IValue CompiledModuleImpl::forward(std::vector<c10::IValue> inputs) {
  runtime::HotPathClock::begin();
  check_arity(inputs);
  return in_aten(inputs, [&] { return forward_checked(inputs); });
}

c10::IValue CompiledModuleImpl::forward_checked(const std::vector<c10::IValue>& inputs) {
  const std::optional<c10::Device> device = fused_device(inputs);
  if (!device) {
    ++eager_calls_;
    return run_eager(inputs);
  }
  Unbuilt unbuilt = Unbuilt::over_limit;
  std::shared_ptr<Specialization> spec = specialization_for(inputs, *device, &unbuilt);
  if (!spec) {
    ++eager_calls_;
    if (unbuilt == Unbuilt::pending) ++async_pending_calls_;
    else if (unbuilt == Unbuilt::failed) ++async_failed_calls_;
    else ++over_limit_calls_;
    return run_eager(inputs);
  }
  ++fused_calls_;
  runtime::HotPathClock::mark(runtime::HotPhase::entry);
  if (graphs_) {
    c10::IValue out =
        graphs_->call(inputs, *device, spec, [&spec](const std::vector<c10::IValue>& in) { return spec->run(in); });
    runtime::HotPathClock::mark(runtime::HotPhase::results);
    return out;
  }
  c10::IValue out = spec->run(inputs);
  runtime::HotPathClock::mark(runtime::HotPhase::results);
  return out;
}

Explanation CompiledModuleImpl::explain(const std::vector<c10::IValue>& given, bool compile_kernels) {
  std::vector<c10::IValue> inputs = given;
  check_arity(inputs);
  std::shared_ptr<Specialization> spec = in_aten(inputs, [&] { return analyze(inputs, nullptr, offline_target()); });
  Explanation e;
  e.ir_before = spec->ir_before;
  e.ir_after = spec->ir_after;
  e.refused = spec->plan.refusals;
  e.rewrites = spec->rewrites;
  e.arch = options_.offline_arch;
  e.cuda_graphs = "off";
  if (graphs_) {
    std::string why;
    const std::optional<c10::Device> device = fused_device(inputs, &why);
    e.cuda_graphs = device ? graphs_->status(inputs, *device) : "uncaptured: the call runs eager: " + why;
  }
  for (const auto& k : spec->kernels) {
    const codegen::GeneratedKernel gen = k->kernel_for_profiled_types();
    e.kernels.push_back({gen.name, gen.source, static_cast<int>(k->group().nodes.size()), k->group().describe()});
    if (compile_kernels) e.cubin_bytes.push_back(codegen::compile_to_cubin(gen, options_.offline_arch).image.size());
  }
  // Show the rewritten graph too; kernel ids here are placeholders, nothing is registered.
  std::vector<int64_t> ids(spec->plan.groups.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = -1 - static_cast<int64_t>(i);
  runtime::rewrite_graph(*spec->graph, *spec->conversion, spec->plan, ids);
  e.rewritten_graph = spec->graph->toString();
  return e;
}

std::vector<KernelInfo> CompiledModuleImpl::kernels() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<KernelInfo> out;
  if (!latest_) return out;
  for (const auto& k : latest_->kernels) {
    for (const auto& gen : k->kernels())
      out.push_back({gen.name, gen.source, static_cast<int>(k->group().nodes.size()), k->group().describe()});
  }
  return out;
}

Stats CompiledModuleImpl::stats() const {
  Stats s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s.specializations = static_cast<int64_t>(specs_.size());
    for (const auto& [sig, spec] : specs_) {
      for (const auto& k : spec->kernels) {
        s.kernel_launches += k->launches();
        s.kernel_variants += k->variants();
        GroupStats g = k->stats();
        g.specialization = spec->index;
        s.fallback_groups += g.fell_back ? 1 : 0;
        s.fallback_calls += g.fallback_calls;
        s.oom_calls += g.oom_calls;
        s.recorded_calls += g.recorded_calls;
        s.outputs_in_place += g.outputs_in_place;
        s.groups.push_back(std::move(g));
      }
    }
  }
  // Specializations in the order they were built, each one's groups in group order.
  std::stable_sort(s.groups.begin(), s.groups.end(),
                   [](const GroupStats& a, const GroupStats& b) { return a.specialization < b.specialization; });
  s.eager_calls = eager_calls_;
  s.fused_calls = fused_calls_;
  s.over_limit_calls = over_limit_calls_;
  s.async_pending_calls = async_pending_calls_;
  s.async_failed_calls = async_failed_calls_;
  s.background_builds = background_builds_;
  s.background_build_failures = background_build_failures_;
  s.kernels_compiled = counters_->nvrtc_compiles;
  s.kernel_memory_hits = counters_->memory_hits;
  s.kernel_disk_hits = counters_->disk_hits;
  s.kernel_cache_hits = s.kernel_memory_hits + s.kernel_disk_hits;
  s.nvrtc_seconds = counters_->nvrtc_micros / 1e6;
  if (graphs_) {
    runtime::GraphCounts g = graphs_->counts();
    s.cuda_graph_captures = g.captures;
    s.cuda_graph_replays = g.replays;
    s.cuda_graph_uncaptured_calls = g.uncaptured_calls;
    s.cuda_graph_input_copies = g.input_copies;
    s.cuda_graph_refusals = std::move(g.refusals);
  }
  return s;
}

bool CompiledModuleImpl::runs_direct(const std::vector<c10::IValue>& given) const {
  std::vector<c10::IValue> inputs = given;
  check_arity(inputs);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = specs_.find(input_signature(inputs));
  return it != specs_.end() && it->second->direct.has_value();
}

std::vector<at::Tensor> CompiledModuleImpl::cuda_graph_inputs(const std::vector<c10::IValue>& given) const {
  if (!graphs_) return {};
  std::vector<c10::IValue> inputs = given;
  check_arity(inputs);
  return graphs_->static_inputs(inputs);
}

c10::IValue CompiledModuleImpl::forward_reference(const std::vector<c10::IValue>& given) const {
  std::vector<c10::IValue> inputs = given;
  check_arity(inputs);
  torch::jit::Stack stack = runtime::run_float64_reference(*graph_, inputs);
  return graph_result(stack);
}

std::vector<c10::ScalarType> CompiledModuleImpl::value_dtypes(const std::vector<c10::IValue>& given) const {
  std::vector<c10::IValue> inputs = given;
  check_arity(inputs);
  const Profile profile = profile_graph(graph_->copy(), inputs);
  std::set<c10::ScalarType> dtypes;
  for (const auto& [value, type] : profile.types)
    if (type.is_tensor()) dtypes.insert(type.dtype);
  return {dtypes.begin(), dtypes.end()};
}

std::vector<std::shared_ptr<runtime::FusedKernel>> CompiledModuleImpl::group_kernels(
    const std::vector<c10::IValue>& given) const {
  std::vector<c10::IValue> inputs = given;
  check_arity(inputs);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = specs_.find(input_signature(inputs));
  if (it == specs_.end()) return {};
  return it->second->kernels;
}

std::string CompiledModuleImpl::why_eager(const std::vector<c10::IValue>& given) const {
  std::vector<c10::IValue> inputs = given;
  check_arity(inputs);
  std::string why;
  if (fused_device(inputs, &why)) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string sig = input_signature(inputs);
    if (specs_.count(sig)) return "";
    auto failed = failed_builds_.find(sig);
    if (options_.async_compile && building_.count(sig)) why = "its specialization is being compiled in the background";
    else if (failed != failed_builds_.end()) why = "its specialization's background build failed: " + failed->second.first_line;
    else why = "its input signature is past max_specializations";
  }
  return why;
}

std::string CompiledModuleImpl::graph_for(const std::vector<c10::IValue>& inputs) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = specs_.find(input_signature(inputs));
  if (it == specs_.end() || !it->second->graph) return "";
  return it->second->graph->toString();
}

}  // namespace torchfuse
