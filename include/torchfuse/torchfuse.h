// torchfuse: a graph-level operator fusion compiler for LibTorch.
//
//   auto compiled = torchfuse::compile(module);          // torch::jit::Module
//   auto out = compiled.forward({x, b});                 // same results as eager, fewer kernels
//
// Each distinct input signature (dtype, rank, device, size-1 dims, layout class) is profiled once,
// converted to torchfuse's IR, fused, and its fusion groups compiled with NVRTC.
// Everything torchfuse does not fuse runs through LibTorch as before.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <ATen/core/ivalue.h>
#include <ATen/core/Tensor.h>

namespace torch {
namespace jit {
struct Module;
struct Graph;
}  // namespace jit
}  // namespace torch

namespace torchfuse {

// A user-facing error: bad input, unsupported request, NVRTC or driver failure.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CompileOptions {
  // Comma-separated log switches, added to those of $TORCHFUSE_LOGS:
  // output_code, graph, fusion, passes, recompiles, all.
  std::string logs;
  // Groups with fewer ops than this are left to ATen (a single op gains nothing from fusion).
  int min_group_size = 2;
  // Sibling fusion: pointwise groups of one output shape that read a common value and neither of
  // which reads the other (the two halves of a rotation returned together) become one kernel,
  // which reads the common values once and saves a launch (passes/fuse_siblings.h). Off by
  // default: built and tested on the CPU (plans, NVRTC), not yet run on a GPU.
  bool fuse_siblings = false;
  // Specializations kept per compiled module (those being built count too). A call with a new
  // input signature past the limit runs eager: logged once per module, counted in
  // Stats::over_limit_calls (and eager_calls); signatures already compiled stay fused.
  int max_specializations = 8;
  // Fill every fused output with a poison value before its kernel runs (tests use it to
  // prove that every element is written).
  bool debug_poison_outputs = false;
  // Repeat a fusion group's launch for inputs of a geometry it has launched for before (sizes,
  // strides, pointer alignment), patching only the pointers: the launch-bound call's shortcut
  // (docs/architecture.md, "Recorded launches"). Off: every call plans, looks up and packs.
  bool record_launches = true;
  // A fused group's output may take the memory of an input that dies at the group (an
  // intermediate the call holds the only reference to, with no view of it anywhere: never a
  // graph input or a value read later), as Inductor's in_out_ptr does: the kernel writes over
  // elements it has read, into lines the producer just left in L2, and one allocation fewer
  // (docs/architecture.md, "Outputs in place"). Off by default: measured no faster in BERT
  // (docs/performance.md), and not yet through the stress and fuzz runs. Off: every output is a
  // fresh tensor.
  bool outputs_in_place = false;
  // Architecture NVRTC targets when no GPU is present (explain() and offline checks), e.g. "sm_90".
  std::string offline_arch = "sm_90";
  // Every op torchfuse can fuse must run fused. A specialization that leaves an elementwise op or
  // a reduction to ATen (a legality refusal) is an Error naming the ops and the reasons, and so
  // is a group whose kernel fails to build or launch (no fallback). Lone fusible ops become
  // groups of their own (min_group_size is taken as 1). Opaque ops (matmul, conv, ops the
  // converters do not take) run in ATen as always, and so does a group's call with an input of
  // no elements (its kernel cannot read one; the group's ATen ops give eager's result).
  bool strict = false;
  // Time every group's kernels with CUDA events; stats().groups reports the milliseconds. Also
  // on with $TORCHFUSE_PROFILE_KERNELS=1. Costs nothing when off.
  bool profile_kernels = false;
  // Testing aid: makes the kernels of matching groups fail through the paths real failures take,
  // so that their fallback runs. Comma-separated entries [kind[#count]:][runtime:]pattern, the
  // pattern "*" (every group) or a substring of the kernel name ("tf_add_relu_mul"). Kinds:
  //   nvrtc (default)  NVRTC rejects the source (an #error line);
  //   load             cuModuleLoadData answers CUDA_ERROR_INVALID_IMAGE;
  //   launch           cuLaunchKernel answers CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  //   oom              the caching allocator throws c10::OutOfMemoryError for the group's outputs
  //                    (asked for more memory than the device has); "oom#2:..." only twice per
  //                    specialization, then the kernel runs;
  //   wrong            no failure: after the kernel ran, element 0 of the group's first output
  //                    gets 1 added, a wrong answer for compare_groups to find.
  // After nvrtc, load and launch failures the group runs through ATen for good; after an oom only
  // that call does (see GroupStats). "runtime:" (not for oom or wrong) spares the kernel built when the
  // specialization is built and hits only variants generated later for new layouts. E.g.
  // "load:tf_add_relu", "launch:runtime:*", "oom#1:tf_softmax". A malformed entry is an Error from
  // compile(). Also taken from $TORCHFUSE_DEBUG_FAIL_KERNELS when empty.
  std::string debug_fail_kernels;
  // Schedule knobs for this module, "name=value,..." (the knobs of codegen/tuning.h), over the
  // defaults and $TORCHFUSE_TUNE; for tuning runs. An unknown knob or a value out of range is an
  // Error when the module is compiled.
  std::string tune;
  // CUDA graphs (also on with $TORCHFUSE_CUDA_GRAPHS=1): for each exact input signature (dtypes,
  // sizes, strides, device, the values of non-tensor inputs), after cuda_graph_warmup_calls
  // calls, the whole fused forward (fused kernels and the ATen ops between them: GEMMs,
  // attention) is captured once as a CUDA graph, in a memory pool of its own, and later calls
  // replay it: one launch on the host instead of one per op. Inputs are copied into the graph's
  // static input tensors (not when the call passes those very tensors: cuda_graph_inputs()).
  // Each new signature captures a graph of its own, up to max_specializations graphs. Calls that
  // cannot be captured (a CPU tensor input, a host synchronization such as .item() or
  // data-dependent sizes, a LibTorch without CUDA) run as without the option; stats() and
  // explain() say why. The replays of one module are ordered across threads and streams.
  bool cuda_graphs = false;
  int cuda_graph_warmup_calls = 2;
  // With cuda_graphs: outputs are the graph's own tensors instead of copies. They stay valid
  // until the next call of this module with the same input signature, which overwrites them (in
  // any thread): copy what must outlive it. Saves one copy per output.
  bool cuda_graph_zero_copy_outputs = false;
  // Background compilation: the first calls of a new input signature run eager while its
  // specialization (profiling, fusion, NVRTC) is built on the module's worker thread; once built,
  // calls of it run fused. A new shape then starts at eager's latency instead of waiting for
  // NVRTC. Calls of a signature being built never wait (Stats::async_pending_calls); a build that
  // fails is logged once with the signature and not retried: that signature runs eager
  // (Stats::async_failed_calls; under `strict` its calls throw the build's error). Destroying the
  // module waits for the build in progress and drops those not started. Also on with
  // $TORCHFUSE_ASYNC_COMPILE=1. Off: the calling thread builds.
  bool async_compile = false;
  // Graph rewrites before fusion (explain().rewrites lists what each did, explain().refused what
  // it left alone and why; the "fusion" log says both):
  // attention spelled out as matmul(q, k^T), scaling, an optional mask, softmax(-1), eval-mode
  // dropout and matmul(., v) becomes one call of ATen's scaled-dot-product attention (flash,
  // memory-efficient or cuDNN kernels), where its semantics provably match.
  bool rewrite_attention = true;
  // linear/addmm/matmul followed by a bias add, an activation (GELU, ReLU), a residual add or a
  // cast becomes one cuBLASLt call with the matching epilogue (CUDA tensors; elsewhere the call
  // runs the same ops through ATen).
  bool gemm_epilogues = true;
  // A float32 linear whose result only feeds elementwise ops runs without its bias, which joins
  // the fused kernel after it (cuBLASLt's float32 bias epilogue measured slower than the plain
  // GEMM; see passes/rewrite_linear_bias.cpp).
  bool split_linear_bias = true;
  // A convolution whose result only feeds elementwise ops (a frozen ResNet's conv + folded batch
  // norm + ReLU, a residual add) runs without its bias, which joins the fused kernel after it: ATen
  // adds a cuDNN convolution's bias in a kernel of its own (see passes/rewrite_conv_bias.cpp).
  bool split_conv_bias = true;
  // 16-bit 2-D convolutions with frozen weights and the elementwise ops between them run
  // channels-last (NHWC), which cuDNN's convolutions work in: no transposes around each
  // convolution. Values are eager's; a value read where its layout could matter (a view, a graph
  // output) is contiguous() first. Float32 ones on CUDA stay NCHW, where cuDNN would otherwise run
  // them in TF32 (see passes/rewrite_channels_last.h).
  bool channels_last_convs = true;
  // 16-bit linears reading one input with frozen weights (q, k and v projections written apart, an MLP's
  // gate and up projections) run as one GEMM, each result a slice of it. compile() stores such
  // weights in one buffer (no second copy); a linear whose result is read as a contiguous tensor
  // of its own (a view merging its last dim, a graph output) stays apart, with the reason, and so
  // do float32 linears (merged, they measured slower).
  bool concat_linears = true;
  // A GEMM merged that way times itself on a shape's first call outside a CUDA graph capture: the
  // whole GEMM against one GEMM per original linear, each writing its columns of the same output
  // (two host synchronizations, once per shape and process), and runs apart where that saves 3%
  // or more of the GPU time and more than the host time of the extra calls. Off by default:
  // cuBLASLt's heuristic gives some shapes of either form a tile that loses 2-6% of a Llama call
  // to the other form, but timed on their own the two forms differ by 1-4%, less than the same
  // GEMM moves between rounds, and the timing kept merged at every shape of Llama and BERT
  // (docs/performance.md, "Merged or apart, timed"). Which form runs can change a result's
  // rounding, within the GEMM's tolerance.
  bool concat_linears_autotune = false;
  // Every other 16-bit linear/addmm/matmul with a 2-D weight on CUDA tensors runs as one cuBLASLt
  // call whose descriptors and algorithm are made once per shape and thread (ATen's GEMM derives
  // them on every call: host time that launch-bound models pay per layer). Float32 GEMMs stay
  // ATen's (cuBLASLt's heuristic picked slower float32 kernels). Elsewhere (CPU tensors, LibTorch
  // < 2.3) the call runs ATen's linear.
  bool cublaslt_gemms = true;
  // The cuBLASLt calls above (epilogues, merged and plain GEMMs) time the first 8 algorithms
  // cuBLASLt's heuristic offers for a shape, with up to 21 split-K variants of its first three
  // unsplit ones (K split 2 to 16 ways, partial sums in float32), on its first call outside a CUDA
  // graph capture (a few milliseconds, once per shape and process, L2 written over before each
  // timed call) and run the fastest, kept when it beats candidate 0 by 3% or more. Candidate 0 is
  // the heuristic's first, and for float32 calls ATen's own GEMM: timed, float32 GEMMs without an
  // epilogue take part too (untimed they stay ATen's, above), and run ATen's unless a cuBLASLt
  // algorithm beats it. Off (the default): the heuristic's first, untimed. Off by default because it measured no gain in the models
  // (docs/performance.md: Llama, BERT, ViT at batch 1 with CUDA graphs within 1%). Which algorithm
  // runs can change a result's rounding (split-K sums in another order), within the GEMM's
  // tolerance. A merged GEMM (concat_linears) also times itself whole against apart, as under
  // concat_linears_autotune, each form on its own timed algorithms (runtime/gemm_parts.h).
  bool gemm_autotune = false;
  // Each rewritten 16-bit attention call times ATen's own pick (cuDNN's kernel where it applies)
  // against flash attention (where it can run the call: no mask, a square causal or no causal
  // mask) and torchfuse's own attention kernel (additive masks too; sm_80 and later, head dims of
  // 16 to 128) on a shape's first call outside a CUDA graph capture (each captured into a graph of
  // 8 calls and replayed, then a host synchronization: once per shape and process) and runs the
  // fastest, kept when 3% or more faster than ATen's pick and agreeing with its result
  // (runtime/attention_backends.h). In a graph cuDNN's kernel starts 2.5 us after its memset:
  // flash attention measured faster at 128 tokens (Llama, batch 1), cuDNN at 197 (ViT). Unset
  // (the default): on exactly where cuda_graphs is, whose graphs already cost a capture per shape;
  // a loop whose sequence grows by a token a call (decoding without graphs) would time every call.
  std::optional<bool> attention_autotune;
  // Tensors the graph computes from sizes and constants alone (position ids, Hugging Face's
  // causal-mask construction, rotary cos/sin tables) are computed on the first call with those
  // sizes and kept for the later ones (up to 16 sets of sizes per specialization); an attention
  // mask among them that is causal makes the call run causal without reading it. Nothing that
  // is written, random or returned is kept.
  bool cache_shape_tensors = true;
};

// What compile() built for one input signature; also what explain() returns.
struct KernelInfo {
  std::string name;         // "tf_<pattern>_<hash of its source>", e.g. "tf_softmax_3f2a91c0"
  std::string source;       // CUDA C++ handed to NVRTC
  int num_ops = 0;          // IR ops inside the group
  std::string description;  // one line: the ops of the group
};

struct Explanation {
  std::string ir_before;             // torchfuse IR after conversion
  std::string ir_after;              // after the fusion passes
  std::string rewritten_graph;       // the TorchScript graph with fusion nodes
  std::vector<KernelInfo> kernels;   // one per fusion group
  std::vector<std::string> refused;  // every refused fusion or rewrite with its reason
  std::vector<std::string> rewrites; // graph rewrites done (CompileOptions::rewrite_attention, ...)
  // With CompileOptions::cuda_graphs, what becomes of these inputs' calls: "captured", "not
  // captured yet (1 of 2 warm-up calls run)", "uncaptured: <why>"; "off" without the option.
  std::string cuda_graphs;
  // Filled when compile_kernels=true: NVRTC ran for `arch`; the size of each cubin.
  std::string arch;
  std::vector<size_t> cubin_bytes;
};

// One fusion group of one specialization.
struct GroupStats {
  int specialization = 0;     // in the order specializations were built
  std::string kernel_name;    // its kernel's for the profiled types, "tf_add_gelu_mul_5be0a1c2"
  std::string description;    // its ops: "add -> gelu -> mul"
  int64_t calls = 0;          // times the group ran (fused or on its fallback)
  int64_t launches = 0;       // kernels launched: one per fused call (split reductions combine their partials in it)
  int64_t recorded_calls = 0; // ... of the fused calls, those that repeated a recorded launch (record_launches)
  int64_t outputs_in_place = 0; // outputs written over a dying input's memory (CompileOptions::outputs_in_place)
  // Its kernel failed to compile, load or launch: it runs its TorchScript ops through ATen for good.
  bool fell_back = false;
  std::string fallback_reason;  // the failure, when fell_back
  // Calls that ran the group's ATen ops: after a failure, for one call whose inputs differed
  // from the profiled types (a value control flow computes changed dtype), or out of memory.
  int64_t fallback_calls = 0;
  // Calls whose outputs the CUDA caching allocator could not allocate: each ran the group's
  // TorchScript ops instead, and the next call tries the kernel again.
  int64_t oom_calls = 0;
  // With profile_kernels: calls timed with CUDA events, their kernel milliseconds in total and
  // per call (0 without profiling).
  int64_t timed_calls = 0;
  double total_ms = 0.0;
  double mean_ms = 0.0;
};

struct Stats {
  int64_t specializations = 0;      // input signatures compiled
  int64_t eager_calls = 0;          // calls that ran eager (CPU inputs, grad, limit reached, async_compile)
  int64_t over_limit_calls = 0;     // ... of them, new signatures past max_specializations
  int64_t fused_calls = 0;          // calls that ran the fused graph
  int64_t kernels_compiled = 0;     // NVRTC compilations done by this module
  int64_t kernel_cache_hits = 0;    // kernels found in a cache (memory or disk)
  int64_t kernel_memory_hits = 0;   // ... in the process's memory
  int64_t kernel_disk_hits = 0;     // ... on disk ($TORCHFUSE_CACHE_DIR)
  int64_t kernel_launches = 0;      // fused kernels launched
  int64_t recorded_calls = 0;       // group calls that repeated a recorded launch (every group's recorded_calls)
  int64_t outputs_in_place = 0;     // outputs written over a dying input (every group's outputs_in_place)
  int64_t kernel_variants = 0;      // kernel sources generated (one per group and compile-time layout)
  double nvrtc_seconds = 0.0;       // time spent in NVRTC
  int64_t fallback_groups = 0;      // groups whose kernel failed and that run through ATen
  int64_t fallback_calls = 0;       // group calls that ran through ATen (every group's fallback_calls)
  int64_t oom_calls = 0;            // ... of them, because outputs ran out of CUDA memory
  // CompileOptions::cuda_graphs: graphs captured, calls answered by a replay, fused calls that
  // ran without one (warm-up calls and refused signatures), input tensors copied into a graph's
  // static inputs, and why signatures run uncaptured ("(f32[8, 128]): <why>", once each).
  // Replays run no host code per group: GroupStats::calls and launches count captures, not replays.
  int64_t cuda_graph_captures = 0;
  int64_t cuda_graph_replays = 0;
  int64_t cuda_graph_uncaptured_calls = 0;
  int64_t cuda_graph_input_copies = 0;
  std::vector<std::string> cuda_graph_refusals;
  std::vector<GroupStats> groups;   // every group of every specialization
  // CompileOptions::async_compile:
  int64_t async_pending_calls = 0;        // eager calls whose specialization was being built in the background
  int64_t async_failed_calls = 0;         // eager calls whose specialization's background build had failed
  int64_t background_builds = 0;          // specializations built in the background
  int64_t background_build_failures = 0;  // background builds that threw (logged, not retried)
};

class CompiledModuleImpl;
class CompiledModule;
struct GroupComparisonReport;
struct Tolerance;
GroupComparisonReport compare_groups(CompiledModule& compiled, const std::vector<c10::IValue>& inputs,
                                     const Tolerance* tolerance);

// The result of compile(): call forward() like torch::jit::Module::forward.
class CompiledModule {
 public:
  explicit CompiledModule(std::shared_ptr<CompiledModuleImpl> impl);
  // Inputs are checked against the graph's declared types (count; tensors defined; lists, tuples
  // and dicts element by element): a wrong one is an Error naming it. An ATen op's error becomes
  // an Error keeping ATen's message and naming the inputs, and their devices where they differ.
  c10::IValue forward(std::vector<c10::IValue> inputs);
  // Runs the same graph op by op through ATen, without fusion: the eager reference.
  c10::IValue forward_eager(std::vector<c10::IValue> inputs);
  // The kernels compiled for the device in use by the most recent specialization (empty before
  // the first fused call): per group, the kernel built for the profiled layout, then any
  // variant generated since for another layout (a misaligned or differently sized input). A
  // group that fell back before its kernel was built has none.
  std::vector<KernelInfo> kernels() const;
  // IR, fusion groups and sources for these inputs, without running a kernel. Works without a GPU.
  Explanation explain(const std::vector<c10::IValue>& inputs, bool compile_kernels = false) const;
  Stats stats() const;
  // With CompileOptions::cuda_graphs: the static input tensors of the graph captured for these
  // inputs' signature (its tensors in order, inside tuples and lists too), empty while none is.
  // A caller that writes its next inputs into them and passes them to forward() saves the copies.
  std::vector<at::Tensor> cuda_graph_inputs(const std::vector<c10::IValue>& inputs) const;
  // The graph forward() runs for these inputs' signature, if compiled (for tests: count fusion nodes).
  std::string graph_for(const std::vector<c10::IValue>& inputs) const;
  // The float64 reference for these inputs: floating inputs and floating tensor constants
  // (frozen parameters and buffers) upcast to float64, integer and bool tensors as they are, and
  // every cast to a narrower float the graph asks for (.to(torch.bfloat16), .half(), a dtype
  // argument such as softmax's; inside If and Loop bodies, those with a constant dtype argument)
  // rounds to that dtype and returns to float64, so that the arithmetic the graph does is exact
  // but the roundings it asks for stay. Throws where the graph cannot run in float64 (ATen's
  // error, unwrapped).
  c10::IValue forward_reference(const std::vector<c10::IValue>& inputs);
  // The dtypes of the tensors the graph computes for these inputs, intermediates included (one
  // eager run): compare_with_eager judges by the lowest precision the graph works in.
  std::vector<c10::ScalarType> value_dtypes(const std::vector<c10::IValue>& inputs) const;

 private:
  friend GroupComparisonReport compare_groups(CompiledModule&, const std::vector<c10::IValue>&, const Tolerance*);
  std::shared_ptr<CompiledModuleImpl> impl_;
};

// A module from torch::jit::load or defined in C++ (Module::define). The module is cloned,
// put in eval mode and frozen; its forward is inlined.
CompiledModule compile(const torch::jit::Module& module, CompileOptions options = {});

// A TorchScript graph whose inputs are the call's inputs (no self).
CompiledModule compile_graph(std::shared_ptr<torch::jit::Graph> graph, CompileOptions options = {});

// A program saved by torch.export.save (a .pt2 archive: PyTorch >= 2.6's PT2 archive layout).
// forward() takes the program's user inputs in order (tensors; SymInt inputs as ints) and returns
// what it returns: one tensor, or a tuple (nested containers flattened). Parameters, buffers and
// tensor constants are read from the archive as serialized (dtype, sizes, strides, storage
// offset; tied weights stay tied) and become graph constants on `device`, the device the
// inputs will be on: the first overload keeps them on the CPU; for CUDA inputs compile with
// c10::Device("cuda") (device arguments of the program's ops, e.g. full's or arange's, are set
// to it as well). Dynamic dims keep their exported ranges: an input outside one, a different
// static size, a rank or symbol mismatch, or a tensor on another device than the weights is an
// Error naming the input and dim (sizes inside the ranges reuse the compiled kernels).
// Unsupported content (higher-order ops such as cond, an op or overload missing from this
// LibTorch, a custom op not loaded, buffer updates, the layout of PyTorch <= 2.5, pickled
// weights, a newer archive or schema version) is an Error naming the node, its op and the reason.
// docs/architecture.md, "The export front door", has the details.
CompiledModule compile_exported(const std::string& path, CompileOptions options = {});
CompiledModule compile_exported(const std::string& path, const c10::Device& device, CompileOptions options = {});

// A C++ callable, traced with example inputs (torch::jit::tracer). Tensors the callable
// captures become constants of the graph.
using TensorFn = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;
CompiledModule compile(const TensorFn& fn, const std::vector<at::Tensor>& example_inputs,
                       CompileOptions options = {});

namespace detail {
template <typename H, typename = void>
struct forward_takes_one_tensor : std::false_type {};
template <typename H>
struct forward_takes_one_tensor<H, std::void_t<decltype(std::declval<H&>()->forward(std::declval<at::Tensor>()))>>
    : std::true_type {};
}  // namespace detail

// A torch::nn::Module (a ModuleHolder such as torch::nn::Sequential or Linear, whose forward
// takes one or two tensors and returns a tensor), traced with example inputs in eval mode, as
// compile() puts TorchScript modules in eval mode (dropout is the identity); the module's own
// training flag is restored afterwards.
template <typename Holder>
CompiledModule compile_nn(Holder module, const std::vector<at::Tensor>& example_inputs,
                          CompileOptions options = {}) {
  TensorFn fn = [module](const std::vector<at::Tensor>& in) mutable -> std::vector<at::Tensor> {
    if constexpr (detail::forward_takes_one_tensor<Holder>::value) {
      if (in.size() != 1) throw Error("torchfuse::compile_nn: forward takes 1 tensor, got " +
                                      std::to_string(in.size()));
      return {module->forward(in[0])};
    } else {
      if (in.size() != 2) throw Error("torchfuse::compile_nn: forward takes 2 tensors, got " +
                                      std::to_string(in.size()));
      return {module->forward(in[0], in[1])};
    }
  };
  // Parameters are captured as graph constants, which must not require grad while tracing.
  std::vector<std::pair<at::Tensor, bool>> saved;
  for (auto& p : module->parameters()) {
    saved.emplace_back(p, p.requires_grad());
    p.requires_grad_(false);
  }
  const bool training = module->is_training();
  module->eval();
  struct Restore {
    Holder& module;
    bool training;
    std::vector<std::pair<at::Tensor, bool>>& saved;
    ~Restore() {
      for (auto& [p, flag] : saved) p.requires_grad_(flag);
      module->train(training);
    }
  } restore{module, training, saved};
  return compile(fn, example_inputs, std::move(options));
}

// ---- comparing against eager ----

struct Tolerance {
  double rtol;
  double atol;
};
// The tolerance compare_with_eager uses for a dtype (fp32 1e-5; fp16 and bf16 looser).
Tolerance default_tolerance(c10::ScalarType dtype);

struct OutputComparison {
  std::string name;         // "output 0", ...
  std::string dtype;
  std::vector<int64_t> sizes;
  double max_abs_error = 0;   // compiled vs eager
  double max_rel_error = 0;
  // Against a float64 run of the same graph, when there is one: compiled's and eager's largest
  // errors (information), and the root-mean-square errors the verdict compares (measured but not
  // judged when allclose(eager, compiled) already passed).
  bool has_reference = false;
  double max_abs_error_vs_reference = 0;
  double eager_max_abs_error_vs_reference = 0;
  double rmse_vs_reference = 0;
  double eager_rmse_vs_reference = 0;
  double rmse_multiplier = 0;       // m (see compare_with_eager)
  std::vector<int64_t> worst_index;  // the element farthest from the reference (or from eager)
  Tolerance tolerance{0, 0};
  bool passed = false;
  std::string problem;      // set when shapes/dtypes differ, NaNs do not match or errors are too large
};

struct ComparisonReport {
  std::vector<OutputComparison> outputs;
  // Set by compare_with_eager when the graph computes in floating point but its float64
  // reference could not run: "no float64 reference: <the first line of the error>"; to_string()
  // prints it below the table.
  std::string reference_note;
  bool passed() const;
  std::string to_string() const;  // a short table
};

// Runs eager (op by op through ATen) and compiled on the same inputs and compares every tensor
// output. Shapes and dtypes must match. When the graph computes in floating point (a floating
// input, a floating value it makes, or a floating tensor constant: frozen parameters, so models
// taking token ids count), it also runs in float64 (forward_reference) and a floating output
// passes as PyTorch's own accuracy check (torch._dynamo.utils.same) judges:
//   1. allclose(compiled, eager, rtol, atol), NaN positions equal; otherwise
//   2. over the elements where eager and the reference are finite,
//        rmse(compiled - ref) <= m * rmse(eager - ref) + atol / 10,
//      m = 10 for tensors of up to 10 elements, 8 up to 500, 3 for fp16/bf16 and tensors under
//      1000 elements, 2 otherwise (PyTorch's multipliers, with its larger ones for small tensors,
//      whose RMSE is mostly noise). Where the graph computes in fp16/bf16 anywhere (a cast inside
//      an fp32 graph), that dtype's tolerance and multiplier judge every output. Compiled must be finite
//      there; elsewhere it must equal eager or the reference, or be finite where the reference
//      is (a result without NaN is better than an eager result with one); where eager has a NaN
//      the reference has not, eager's float32 arithmetic failed and the element is not judged;
//   3. an outlier guard, since a few wrong elements hide in a large tensor's RMSE: no element may
//      be farther from the reference than atol + rtol * |ref| + m * (eager's worst element).
// A result closer to float64 than eager's passes even where eager rounded luckily on one element;
// the largest per-element errors and the worst element's index are reported.
// Without a reference (the graph computes in no floating dtype, or it cannot run in float64, e.g.
// an op without a float64 kernel): |compiled - eager| <= atol + rtol * |eager| per element, NaN
// exactly where eager has NaN; in the second case ComparisonReport::reference_note says why.
ComparisonReport compare_with_eager(CompiledModule& compiled, const std::vector<c10::IValue>& inputs,
                                    const Tolerance* tolerance = nullptr);
// The reference form of the check, on given results.
ComparisonReport compare_outputs_with_reference(const c10::IValue& eager, const c10::IValue& actual,
                                                const c10::IValue& reference, const Tolerance* tolerance = nullptr);
// Compares two results (tensors, or tuples/lists of tensors) directly, with the dtype's default
// tolerance or the one given (long reductions accumulate rounding in a different order).
ComparisonReport compare_outputs(const c10::IValue& expected, const c10::IValue& actual,
                                 const Tolerance* tolerance = nullptr);

// ---- checking each fusion group ----

// One fusion group in compare_groups: what its kernel wrote against what its own TorchScript ops
// compute through ATen (its fallback graph) from the same input tensors, in the same call.
struct GroupComparison {
  int group = -1;            // its id in the fused IR (explain().ir_after's "group N")
  std::string kernel_name;   // "tf_softmax_3f2a91c0"
  std::string description;   // its ops: "mul -> reduce_max -> sub -> exp -> reduce_sum -> div"
  // It ran fused on this call and was compared. Otherwise `note` says why not (it runs its ATen
  // fallback, or has none to compare with) and it passes: nothing of its own ran.
  bool compared = false;
  std::string note;
  double max_abs_error = 0;  // over its outputs, kernel against fallback
  double max_rel_error = 0;
  Tolerance tolerance{0, 0};  // its first output's, or the failing one's (compare_with_eager's)
  bool passed = true;
  std::string problem;               // "output 1: error above tolerance"
  std::vector<int64_t> worst_index;  // in the output that failed (or the first)
};

struct GroupComparisonReport {
  std::vector<GroupComparison> groups;  // in the order they ran, then those that did not run fused
  // Set when no group ran fused, with the reason ("forward ran eager: no input is a CUDA tensor
  // ...", "no fusion groups: ...").
  std::string note;
  // The first group, in the order they ran, whose kernel's result differs from its fallback's;
  // null when none does.
  const GroupComparison* first_mismatch() const;
  bool passed() const { return first_mismatch() == nullptr; }
  // Some group ran fused and was compared.
  bool checked() const;
  std::string to_string() const;  // one row per group, then the first mismatch or the note
};

// Runs `compiled` once on `inputs` and checks each fusion group on its own: when a group's kernel
// has run, its fallback (the group's TorchScript ops through ATen) runs on the same input tensors,
// and so does a float64 run of those ops where it can, and the kernel's outputs are judged as
// compare_with_eager judges a model's (the dtype's tolerance, that of the group's lowest working
// precision, and the RMSE against float64 beside eager's). first_mismatch() names the first group
// that differs, where compare_with_eager sees only that the outputs do; later groups get the
// same inputs on both sides, so a wrong group does not make the ones after it differ. Needs a
// GPU: where the call runs eager (CPU inputs, no usable CUDA driver) nothing is checked and
// `note` says why. Groups called from other threads, or inside forks, are not watched.
GroupComparisonReport compare_groups(CompiledModule& compiled, const std::vector<c10::IValue>& inputs,
                                     const Tolerance* tolerance = nullptr);

// True when a CUDA device and driver are usable from this process.
bool cuda_available();

}  // namespace torchfuse
