// torchfuse_bench: the fusion benchmark suite (shared/bench/SUITE.md) timed for eager,
// TorchScript and torchfuse in one run, on the same inputs, against the copy bandwidth
// measured in the same run. See benchmarks/README.md.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/util/Exception.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <torchfuse/torchfuse.h>

#include "attention_sweep.h"
#include "gpu_timing.h"
#include "kernel_count.h"
#include "report.h"
#include "runtime/compiled_module.h"
#include "runtime/hot_path_clock.h"
#include "runtime/programmatic_launch.h"
#include "src/prepare_graph.h"
#include "suite_cases.h"

namespace tb = torchfuse_bench;

namespace {

const char* kUsage = R"(usage: torchfuse_bench [options]
  --cases a,b       suite cases to run (default, or "all": all twelve; --list names them)
  --dtypes a,b      dtypes to run: float32,bfloat16 (default); float16 is accepted too
  --reps N          timed calls per measurement (default: enough for ~0.2 s, 50..2000)
  --json PATH       also write every result as JSON (scripts/bench_torch_compile.py merges it)
  --latency         also measure small-tensor latency (64x1024 fp32 tanh-GELU, 2000 calls)
  --compile-time    also measure compile time per case (runs first, before any other compile; cold
                    unless $TORCHFUSE_CACHE_DIR already holds the kernels: the disk hits say)
  --no-suite        skip the suite timings (use with --latency / --compile-time; with
                    --compile-time alone nothing else runs, not even the copy-bandwidth measurement)
  --torchfuse-only  time torchfuse alone (still checked against eager): quick tuning runs
  --row-length N    off-suite shapes: the cases over rows of 4096 (softmax_manual, layernorm_manual,
                    rmsnorm_manual, add_layernorm, col_sum, logsumexp_rows) with rows of N, as many
                    elements in all, reported as <case>@N; other cases are an error
  --rows N          the same cases with N rows of their length (after --row-length), reported as
                    <case>#N: --rows 1 --row-length 131072 is a softmax over [1, 131072]
  --list            print the case names and exit
  --attention-sweep time the timed attention's candidates (ATen's pick, flash attention,
                    torchfuse's kernel) over batch, tokens, head dim, masks, then exit
Exit status: 0; 1 when torchfuse failed on a case or its output did not match eager;
2 on bad arguments.
)";

constexpr int kLatencyCalls = 2000;
constexpr int kPairedRounds = 7;  // alternating rounds of the launch calls (LatencyResult::paired_rounds)
constexpr int kWarmupCalls = 5;  // TorchScript's profiling executor fuses from its 2nd call

struct Options {
  std::vector<tb::SuiteCase> cases;
  std::vector<c10::ScalarType> dtypes;
  tb::TimingOptions timing;
  std::string json_path;
  bool suite = true;
  bool latency = false;
  bool compile_time = false;
  bool list = false;
  bool attention_sweep = false;
  bool torchfuse_only = false;  // time torchfuse alone (tuning runs)
  int64_t row_length = 0;       // --row-length (0: the suite's shapes)
  int64_t rows = 0;             // --rows (0: the suite's shapes)
};

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) parts.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return parts;
}

std::vector<tb::SuiteCase> select_cases(const std::string& names) {
  std::vector<tb::SuiteCase> selected;
  for (const auto& name : split_commas(names)) {
    bool found = false;
    for (const auto& c : tb::suite_cases()) {
      if (c.name == name) {
        selected.push_back(c);
        found = true;
      }
    }
    if (!found) throw std::invalid_argument("unknown case '" + name + "' (--list names them)");
  }
  return selected;
}

// Throws std::invalid_argument on anything it does not understand.
Options parse_args(int argc, char** argv) {
  Options opt;
  opt.cases = tb::suite_cases();
  opt.dtypes = {c10::ScalarType::Float, c10::ScalarType::BFloat16};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--cases") {
      const std::string names = value();
      opt.cases = names == "all" ? tb::suite_cases() : select_cases(names);
    } else if (arg == "--dtypes") {
      opt.dtypes.clear();
      for (const auto& name : split_commas(value())) opt.dtypes.push_back(tb::parse_dtype(name));
    } else if (arg == "--reps") {
      opt.timing.reps = std::stoi(value());
      if (opt.timing.reps < 1) throw std::invalid_argument("--reps must be >= 1");
    } else if (arg == "--json") {
      opt.json_path = value();
    } else if (arg == "--latency") {
      opt.latency = true;
    } else if (arg == "--compile-time") {
      opt.compile_time = true;
    } else if (arg == "--no-suite") {
      opt.suite = false;
    } else if (arg == "--torchfuse-only") {
      opt.torchfuse_only = true;
    } else if (arg == "--list") {
      opt.list = true;
    } else if (arg == "--attention-sweep") {
      opt.attention_sweep = true;
    } else if (arg == "--row-length") {
      opt.row_length = std::stoll(value());
    } else if (arg == "--rows") {
      opt.rows = std::stoll(value());
    } else {
      throw std::invalid_argument("unknown argument '" + arg + "'");
    }
  }
  if (opt.row_length != 0) {
    for (auto& c : opt.cases) c = tb::with_row_length(c, opt.row_length);
  }
  if (opt.rows != 0) {
    for (auto& c : opt.cases) c = tb::with_rows(c, opt.rows);
  }
  return opt;
}

// One line for a table: c10::Error without its C++ backtrace, newlines folded, capped.
std::string short_error(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10_error ? c10_error->what_without_backtrace() : e.what();
  for (char& ch : text) {
    if (ch == '\n') ch = ' ';
  }
  return text.size() > 400 ? text.substr(0, 400) + "..." : text;
}

// Fusion groups TorchScript's fuser made in the graph its executor last ran on this thread
// (NNC: prim::TensorExprGroup; older fusers: prim::CudaFusionGroup, prim::FusionGroup).
int count_fusion_groups(const torch::jit::Block* block) {
  int groups = 0;
  for (const torch::jit::Node* node : block->nodes()) {
    const std::string kind = node->kind().toQualString();
    if (kind == "prim::TensorExprGroup" || kind == "prim::CudaFusionGroup" || kind == "prim::FusionGroup") {
      ++groups;
    }
    for (const torch::jit::Block* sub : node->blocks()) groups += count_fusion_groups(sub);
  }
  return groups;
}

int last_script_fusion_groups() {
  const auto graph = torch::jit::lastExecutedOptimizedGraph();
  return graph ? count_fusion_groups(graph->block()) : -1;
}

// Warm-up, kernels per call, then the timing. Never throws: failures land in `error`.
tb::ImplResult measure_impl(tb::GpuTimer& timer, const std::function<void()>& fn, std::string* kernel_note) {
  tb::ImplResult r;
  try {
    for (int i = 0; i < kWarmupCalls; ++i) fn();
    torch::cuda::synchronize();
    std::string why;
    r.kernels = tb::count_kernels(fn, &why);
    if (r.kernels < 0 && kernel_note->empty()) *kernel_note = why;
    const tb::Timing t = timer.time(fn);
    r.us = t.median_us;
    r.min_us = t.min_us;
    r.reps = t.reps;
    r.ok = true;
  } catch (const std::exception& e) {
    r.error = short_error(e);
  }
  return r;
}

// Checks torchfuse against eager, then times eager, TorchScript and torchfuse on one case.
tb::CaseResult run_case(const tb::SuiteCase& c, c10::ScalarType dtype, tb::GpuTimer& timer, bool torchfuse_only) {
  tb::CaseResult r;
  r.name = c.name;
  r.dtype = tb::dtype_name(dtype);
  torch::jit::Module module = tb::make_module(c);
  const std::vector<c10::IValue> inputs = tb::make_inputs(c, dtype);
  // min bytes: the inputs and the outputs, each once (TorchScript's first call gives the outputs).
  r.min_bytes = tb::tensor_bytes(inputs) + tb::tensor_bytes({module.forward(inputs)});

  std::optional<torchfuse::CompiledModule> compiled;
  try {
    compiled = torchfuse::compile(module);
    const torchfuse::ComparisonReport check = torchfuse::compare_with_eager(*compiled, inputs);
    r.check_ran = true;
    r.check_passed = check.passed();
    r.check_report = check.to_string();
  } catch (const std::exception& e) {
    r.torchfuse.error = short_error(e);
  }

  if (torchfuse_only) {
    r.eager.error = r.script.error = "not timed (--torchfuse-only)";
  } else if (compiled) {
    r.eager = measure_impl(timer, [&] { compiled->forward_eager(inputs); }, &r.kernel_count_note);
  } else {
    r.eager.error = "needs torchfuse::compile (eager runs through forward_eager)";
  }

  // TorchScript as users run it: NNC on (the default), in case torchfuse::compile switched it off.
  torch::jit::setTensorExprFuserEnabled(true);
  if (!torchfuse_only) {
    r.script = measure_impl(timer, [&] { module.forward(inputs); }, &r.kernel_count_note);
    if (r.script.ok) r.script_fusion_groups = last_script_fusion_groups();
  }

  if (r.check_ran) {
    r.torchfuse = measure_impl(timer, [&] { compiled->forward(inputs); }, &r.kernel_count_note);
    // Fused launches of one call, and whether that call ran fused at all.
    const torchfuse::Stats before = compiled->stats();
    compiled->forward(inputs);
    const torchfuse::Stats after = compiled->stats();
    r.torchfuse_launches = after.kernel_launches - before.kernel_launches;
    r.torchfuse_eager_calls = after.eager_calls - before.eager_calls;
  }
  return r;
}

// run_case, with a failure outside the per-implementation checks (e.g. out of memory while
// making the inputs) recorded on the case instead of ending the run.
tb::CaseResult run_case_or_error(const tb::SuiteCase& c, c10::ScalarType dtype, tb::GpuTimer& timer, bool torchfuse_only) {
  try {
    return run_case(c, dtype, timer, torchfuse_only);
  } catch (const std::exception& e) {
    tb::CaseResult r;
    r.name = c.name;
    r.dtype = tb::dtype_name(dtype);
    r.eager.error = r.script.error = r.torchfuse.error = "case setup failed: " + short_error(e);
    return r;
  }
}

double median_wall_us(const std::function<void()>& fn) {
  std::vector<double> runs;
  for (int i = 0; i < 3; ++i) runs.push_back(tb::wall_us_per_call(fn, kLatencyCalls));
  return tb::median(runs);
}

// The calls of `fn` with a hot-path clock installed: each phase's mean and the probed total.
tb::LatencyResult::Phases phases_of(const std::function<void()>& fn) {
  namespace rt = torchfuse::runtime;
  tb::LatencyResult::Phases p;
  for (int i = 0; i < 100; ++i) fn();
  rt::HotPathClock clock;
  {
    const rt::HotPathClock::Install installed(&clock);
    p.probed_us = tb::wall_us_per_call(fn, kLatencyCalls, 0);
  }
  p.us = clock.named_mean_us(kLatencyCalls);
  return p;
}

tb::LatencyResult measure_latency() {
  const tb::SuiteCase c = tb::latency_case();
  tb::LatencyResult l;
  l.shape = c.shapes.at(0);
  l.calls = kLatencyCalls;
  try {
    torch::jit::Module module = tb::make_module(c);
    const std::vector<c10::IValue> inputs = tb::make_inputs(c, c10::ScalarType::Float);
    // Through the implementation, whose why_eager runs the entry checks alone.
    auto impl = std::make_shared<torchfuse::CompiledModuleImpl>(torchfuse::prepare_module_graph(module),
                                                                torchfuse::CompileOptions{});
    torchfuse::CompiledModule compiled(impl);
    l.check_passed = torchfuse::compare_with_eager(compiled, inputs).passed();
    l.eager_us = median_wall_us([&] { compiled.forward_eager(inputs); });
    l.script_us = median_wall_us([&] { module.forward(inputs); });
    l.torchfuse_us = median_wall_us([&] { compiled.forward(inputs); });
    l.entry_checks_us = median_wall_us([&] { impl->why_eager(inputs); });
    l.direct = impl->runs_direct(inputs);
    const at::Tensor like = inputs.at(0).toTensor();
    l.alloc_us = median_wall_us([&] { at::empty_like(like); });
    l.phases = phases_of([&] { compiled.forward(inputs); });
    l.recorded_calls = compiled.stats().recorded_calls;
    {
      torchfuse::CompileOptions unrecorded;
      unrecorded.record_launches = false;
      torchfuse::CompiledModule planned = torchfuse::compile(module, unrecorded);
      planned.forward(inputs);
      l.unrecorded_us = median_wall_us([&] { planned.forward(inputs); });
      l.unrecorded_phases = phases_of([&] { planned.forward(inputs); });
    }
    {
      // Launches onto the legacy default stream may cost the driver more than onto another.
      const c10::Stream pool = c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getStreamFromGlobalPool(like.device());
      const c10::StreamGuard on_pool(pool);
      l.side_stream_us = median_wall_us([&] { compiled.forward(inputs); });
      l.side_stream_phases = phases_of([&] { compiled.forward(inputs); });
    }
    {
      // The same module's launches (recorded ones too) with programmatic dependent launch.
      namespace rt = torchfuse::runtime;
      const bool before = rt::programmatic_launch_switched_on();
      rt::set_programmatic_launch(true);
      try {
        l.pdl = rt::programmatic_launch(like.device().index());
        l.pdl_check_passed = torchfuse::compare_with_eager(compiled, inputs).passed();
        l.pdl_us = median_wall_us([&] { compiled.forward(inputs); });
        l.pdl_phases = phases_of([&] { compiled.forward(inputs); });
        std::vector<double> plain, ex, pdl;
        const auto timed = [&] { return tb::wall_us_per_call([&] { compiled.forward(inputs); }, kLatencyCalls); };
        for (int round = 0; round < kPairedRounds; ++round) {
          rt::set_programmatic_launch(false);
          plain.push_back(timed());
          rt::set_extended_launch(true);
          ex.push_back(timed());
          rt::set_extended_launch(false);
          rt::set_programmatic_launch(true);
          pdl.push_back(timed());
        }
        l.paired_rounds = kPairedRounds;
        l.paired_plain_us = tb::median(plain);
        l.paired_ex_us = tb::median(ex);
        l.paired_pdl_us = tb::median(pdl);
      } catch (...) {
        rt::set_extended_launch(false);
        rt::set_programmatic_launch(before);
        throw;
      }
      rt::set_programmatic_launch(before);
    }
    torchfuse::CompileOptions graphs;
    graphs.cuda_graphs = true;
    torchfuse::CompiledModule graphed = torchfuse::compile(module, graphs);
    for (int i = 0; i <= graphs.cuda_graph_warmup_calls; ++i) graphed.forward(inputs);
    l.graphs_check_passed = torchfuse::compare_with_eager(graphed, inputs).passed();
    l.graphs_us = median_wall_us([&] { graphed.forward(inputs); });
    graphs.cuda_graph_zero_copy_outputs = true;
    torchfuse::CompiledModule lean = torchfuse::compile(module, graphs);
    for (int i = 0; i <= graphs.cuda_graph_warmup_calls; ++i) lean.forward(inputs);
    std::vector<c10::IValue> statics;
    for (const at::Tensor& t : lean.cuda_graph_inputs(inputs)) statics.emplace_back(t);
    if (statics.size() == inputs.size()) {
      l.graphs_static_us = median_wall_us([&] { lean.forward(statics); });
      l.graph_phases = phases_of([&] { lean.forward(statics); });
    }
    l.ran = true;
  } catch (const std::exception& e) {
    l.error = short_error(e);
  }
  return l;
}

tb::CompileTimeResult measure_compile_time(const tb::SuiteCase& c, c10::ScalarType dtype) {
  tb::CompileTimeResult r;
  r.name = c.name;
  r.dtype = tb::dtype_name(dtype);
  try {
    torch::jit::Module module = tb::make_module(c);
    const std::vector<c10::IValue> inputs = tb::make_inputs(c, dtype);
    torch::cuda::synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    torchfuse::CompiledModule compiled = torchfuse::compile(module);
    compiled.forward(inputs);
    torch::cuda::synchronize();
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const torchfuse::Stats stats = compiled.stats();
    r.nvrtc_seconds = stats.nvrtc_seconds;
    r.kernels_compiled = stats.kernels_compiled;
    r.kernel_cache_hits = stats.kernel_cache_hits;
    r.kernel_disk_hits = stats.kernel_disk_hits;
  } catch (const std::exception& e) {
    r.error = short_error(e);
  }
  return r;
}

void run_suite(const Options& opt, tb::GpuTimer& timer, tb::BenchReport& report) {
  for (const c10::ScalarType dtype : opt.dtypes) {
    std::cout << "\n## " << tb::dtype_name(dtype) << "\n";
    tb::print_case_header(std::cout);
    for (const auto& c : opt.cases) {
      report.cases.push_back(run_case_or_error(c, dtype, timer, opt.torchfuse_only));
      tb::print_case_row(report.cases.back(), report.copy_gbs, std::cout);
      std::cout.flush();
    }
  }
  std::cout << "\nk eag / k scr / k tf: CUDA kernels per call (Kineto profiler); tf lch: fused launches per "
               "call (torchfuse stats); x eager / x scrpt: torchfuse's speed-up.\n";
  for (const auto& r : report.cases) {
    if (!r.kernel_count_note.empty()) {
      std::cout << "kernels not counted (" << r.name << "): " << r.kernel_count_note << "\n";
      break;
    }
  }
  tb::print_summary(report, std::cout);
}

// A wrong result or a torchfuse failure on any case makes the exit status 1.
bool torchfuse_failed(const tb::BenchReport& report) {
  for (const auto& r : report.cases) {
    if (!r.check_passed || !r.torchfuse.ok) return true;
  }
  for (const auto& c : report.compile_times) {
    if (!c.error.empty()) return true;
  }
  const tb::LatencyResult& l = report.latency;
  return l.ran && (!l.check_passed || (!std::isnan(l.pdl_us) && !l.pdl_check_passed));
}

// Writes the JSON when asked; the exit status.
int finish(const tb::BenchReport& report, const Options& opt) {
  if (!opt.json_path.empty()) {
    try {
      tb::write_json(report, opt.json_path);
      std::cout << "wrote " << opt.json_path << "\n";
    } catch (const std::exception& e) {
      std::cerr << "torchfuse_bench: " << e.what() << "\n";
      return 2;
    }
  }
  return torchfuse_failed(report) ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  try {
    opt = parse_args(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "torchfuse_bench: " << e.what() << "\n" << kUsage;
    return 2;
  }
  if (opt.list) {
    for (const auto& c : tb::suite_cases()) std::cout << c.name << "\n";
    return 0;
  }
  if (!torch::cuda::is_available() || !torchfuse::cuda_available()) {
    std::cout << "torchfuse_bench: no CUDA GPU available; nothing to measure.\n";
    return 0;
  }
  if (opt.attention_sweep) return tb::run_attention_sweep(std::cout);

  torch::NoGradGuard no_grad;  // inference: no autograd bookkeeping in any implementation
  torch::manual_seed(0);
  tb::BenchReport report;
  report.torch_version = TORCH_VERSION;
  report.timer = tb::timer_name();

  // Compile times first, before any other compile() can warm the in-memory kernel cache (the disk
  // cache is whatever $TORCHFUSE_CACHE_DIR holds: empty for a cold process).
  if (opt.compile_time) {
    for (const c10::ScalarType dtype : opt.dtypes) {
      for (const auto& c : opt.cases) report.compile_times.push_back(measure_compile_time(c, dtype));
    }
    const char* cache_env = std::getenv("TORCHFUSE_CACHE_DIR");
    tb::print_compile_times(report.compile_times,
                            cache_env ? (*cache_env ? cache_env : "off") : "default location", std::cout);
    std::cout << "(the first row also pays for loading NVRTC and the CUDA driver's module loader)\n";
  }
  if (!opt.suite && !opt.latency) return finish(report, opt);

  tb::GpuTimer timer(opt.timing);
  report.flush_bytes = timer.flush_bytes();
  report.copy_gbs = tb::copy_bandwidth_gbs(timer);
  std::cout << "\nLibTorch " << report.torch_version << ", timer " << report.timer << ", L2 flush "
            << (report.flush_bytes >> 20) << " MB, device-to-device copy bandwidth "
            << static_cast<int64_t>(report.copy_gbs) << " GB/s (read + write)\n";

  if (opt.suite) run_suite(opt, timer, report);
  if (opt.latency) {
    report.latency = measure_latency();
    std::cout << "\n";
    tb::print_latency(report.latency, std::cout);
  }
  return finish(report, opt);
}
