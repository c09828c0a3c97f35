// A Python binding of torchfuse for scripts/bench_torch_compile.py, so that torchfuse and
// torch.compile can be timed by the same timer (triton.testing.do_bench) in one process.
// Not part of the library: the script builds it at run time with torch.utils.cpp_extension
// against the libtorchfuse.so of a build directory (PyTorch's own LibTorch).
//
//   tf = torchfuse_py.compile_graph(torch.jit.script(fn).graph)
//   tf = torchfuse_py.compile_file("model.pt")   # a saved module (scripts/real_models.py)
//   out = tf(x, w)              # tensors in, a tensor or a tuple of tensors out
//   tf.stats()                  # fused and eager calls, launches, groups that fell back
//   tf.explain(x, w)            # kernels planned for these inputs (no GPU needed)
//   tf.compare_with_eager(x, w) # (passed, report): torchfuse::compare_with_eager, float64 reference
//   torchfuse_py.gemm_algorithm_choices()  # GEMM candidates timed so far (gemm_autotune)

#include <torch/extension.h>
#include <torch/script.h>

#include <torchfuse/torchfuse.h>

#include "runtime/gemm_epilogue_op.h"  // gemm_algorithm_choices (ATen's headers only)

namespace {

// Arguments and results by hand: torch's own converters (toIValue, toPyObject) are not exported
// from every libtorch_python.
std::vector<c10::IValue> to_inputs(const pybind11::args& args) {
  std::vector<c10::IValue> inputs;
  inputs.reserve(args.size());
  for (const auto& arg : args) {
    if (pybind11::isinstance<pybind11::bool_>(arg)) inputs.emplace_back(arg.cast<bool>());
    else if (pybind11::isinstance<pybind11::int_>(arg)) inputs.emplace_back(arg.cast<int64_t>());
    else if (pybind11::isinstance<pybind11::float_>(arg)) inputs.emplace_back(arg.cast<double>());
    else inputs.emplace_back(arg.cast<at::Tensor>());  // a cast_error names anything else
  }
  return inputs;
}

pybind11::object to_python(const c10::IValue& v) {
  if (v.isTensor()) return pybind11::cast(v.toTensor());
  if (v.isTuple()) {
    const auto& elements = v.toTupleRef().elements();
    pybind11::tuple t(elements.size());
    for (size_t i = 0; i < elements.size(); ++i) t[i] = to_python(elements[i]);
    return std::move(t);
  }
  if (v.isGenericDict()) {  // a traced model's output dict, keys in insertion order
    pybind11::dict d;
    for (const auto& entry : v.toGenericDict()) d[to_python(entry.key())] = to_python(entry.value());
    return std::move(d);
  }
  if (v.isList()) {
    pybind11::list l;
    for (const auto& e : v.toListRef()) l.append(to_python(e));
    return std::move(l);
  }
  if (v.isString()) return pybind11::cast(v.toStringRef());
  if (v.isDouble()) return pybind11::cast(v.toDouble());
  if (v.isInt()) return pybind11::cast(v.toInt());
  if (v.isBool()) return pybind11::cast(v.toBool());
  if (v.isNone()) return pybind11::none();
  throw std::runtime_error("torchfuse_py: cannot return a " + v.tagKind());
}

c10::IValue call(torchfuse::CompiledModule& module, const pybind11::args& args) {
  std::vector<c10::IValue> inputs = to_inputs(args);
  pybind11::gil_scoped_release no_gil;
  return module.forward(std::move(inputs));
}

// The plan for these inputs, without a GPU: each kernel's ops, and every refused fusion.
pybind11::dict explain(const torchfuse::CompiledModule& module, const pybind11::args& args) {
  const torchfuse::Explanation e = module.explain(to_inputs(args));
  std::vector<std::string> kernels;
  for (const auto& k : e.kernels) kernels.push_back(k.description);
  pybind11::dict d;
  d["kernels"] = kernels;
  d["refused"] = e.refused;
  d["rewrites"] = e.rewrites;
  d["ir_after"] = e.ir_after;
  return d;
}

}  // namespace

// runtime/programmatic_launch.h's switch, exported by libtorchfuse (its header needs the CUDA
// toolkit's, which this binding is built without): benchmarks time a variant with and without it
// in one process.
namespace torchfuse {
namespace runtime {
void set_programmatic_launch(bool on);
}  // namespace runtime
}  // namespace torchfuse

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  pybind11::class_<torchfuse::CompiledModule>(m, "CompiledModule")
      .def("__call__", [](torchfuse::CompiledModule& self, const pybind11::args& args) {
        return to_python(call(self, args));
      })
      .def("explain", &explain)
      .def("compare_with_eager",
           [](torchfuse::CompiledModule& self, const pybind11::args& args) {
             const torchfuse::ComparisonReport r = torchfuse::compare_with_eager(self, to_inputs(args));
             return pybind11::make_tuple(r.passed(), r.to_string());
           })
      .def("stats", [](const torchfuse::CompiledModule& self) {
        const torchfuse::Stats s = self.stats();
        pybind11::dict d;
        d["fused_calls"] = s.fused_calls;
        d["eager_calls"] = s.eager_calls;
        d["kernel_launches"] = s.kernel_launches;
        d["fallback_groups"] = s.fallback_groups;
        d["groups"] = static_cast<int64_t>(s.groups.size());
        d["cuda_graph_captures"] = s.cuda_graph_captures;
        d["cuda_graph_replays"] = s.cuda_graph_replays;
        d["recorded_calls"] = s.recorded_calls;
        d["outputs_in_place"] = s.outputs_in_place;
        pybind11::list refusals;
        for (const auto& r : s.cuda_graph_refusals) refusals.append(r);
        d["cuda_graph_refusals"] = refusals;
        return d;
      });
  m.def(
      "compile_file",
      [](const std::string& path, bool cuda_graphs, bool rewrite_attention, bool gemm_epilogues,
         bool split_linear_bias, bool cache_shape_tensors, bool cublaslt_gemms,
         bool concat_linears, bool gemm_autotune, std::optional<bool> attention_autotune,
         bool split_conv_bias, bool channels_last_convs, const std::string& tune,
         bool outputs_in_place, bool concat_linears_autotune, bool fuse_siblings) -> torchfuse::CompiledModule {
        torchfuse::CompileOptions options;
        options.fuse_siblings = fuse_siblings;
        options.tune = tune;
        options.outputs_in_place = outputs_in_place;
        options.cuda_graphs = cuda_graphs;
        options.rewrite_attention = rewrite_attention;
        options.gemm_epilogues = gemm_epilogues;
        options.split_linear_bias = split_linear_bias;
        options.split_conv_bias = split_conv_bias;
        options.channels_last_convs = channels_last_convs;
        options.cache_shape_tensors = cache_shape_tensors;
        options.cublaslt_gemms = cublaslt_gemms;
        options.concat_linears = concat_linears;
        options.concat_linears_autotune = concat_linears_autotune;
        options.gemm_autotune = gemm_autotune;
        options.attention_autotune = attention_autotune;
        return torchfuse::compile(torch::jit::load(path), options);
      },
      pybind11::arg("path"), pybind11::arg("cuda_graphs") = false, pybind11::arg("rewrite_attention") = true,
      pybind11::arg("gemm_epilogues") = true, pybind11::arg("split_linear_bias") = true,
      pybind11::arg("cache_shape_tensors") = true, pybind11::arg("cublaslt_gemms") = true,
      pybind11::arg("concat_linears") = true, pybind11::arg("gemm_autotune") = false,
      pybind11::arg("attention_autotune") = pybind11::none(), pybind11::arg("split_conv_bias") = true,
      pybind11::arg("channels_last_convs") = true, pybind11::arg("tune") = "", pybind11::arg("outputs_in_place") = false,
      pybind11::arg("concat_linears_autotune") = false, pybind11::arg("fuse_siblings") = false,
      "torchfuse::compile on a saved TorchScript module (torch.jit.save), e.g. a traced model; the "
      "keywords set the CompileOptions of those names (`tune`: CompileOptions::tune, knob=value,... as "
      "TORCHFUSE_TUNE)");
  m.def(
      "gemm_algorithm_choices",
      [] {
        pybind11::list out;
        for (const auto& c : torchfuse::runtime::gemm_algorithm_choices()) {
          pybind11::dict d;
          d["call"] = c.call;
          d["labels"] = c.labels;
          d["us"] = c.us;
          d["chosen"] = c.chosen;
          d["held"] = c.held;
          d["why_not"] = c.why_not;
          out.append(d);
        }
        return out;
      },
      "the GEMM shapes whose candidates were timed in this process (gemm_autotune), in order: each "
      "call's candidate labels, median GPU us per candidate and the index kept");
  m.def("set_programmatic_launch", &torchfuse::runtime::set_programmatic_launch, pybind11::arg("on"),
        "programmatic dependent launch for torchfuse's kernels from now on (TORCHFUSE_PDL=1 at start)");
  m.def(
      "compile_graph",
      [](std::shared_ptr<torch::jit::Graph> graph, const std::string& tune) {
        torchfuse::CompileOptions options;
        options.tune = tune;
        return torchfuse::compile_graph(std::move(graph), options);
      },
      pybind11::arg("graph"), pybind11::arg("tune") = "",
      "torchfuse::compile_graph on a TorchScript graph whose inputs are the call's inputs, e.g. "
      "torch.jit.script(fn).graph; `tune` sets CompileOptions::tune (knob=value,... as TORCHFUSE_TUNE)");
}
