// `torchfuse`: explain, verify, bench and dump a saved TorchScript model (README, "Command-line
// tool"). Arguments are parsed in cli_args.cpp; this file runs the subcommands.
// Exit status: 0 success, 1 verify mismatch, 2 bad arguments, input or model, or any error.
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <torchfuse/torchfuse.h>

#include "benchmarks/kernel_count.h"
#include "runtime/hot_path_clock.h"
#include "tools/cli_args.h"
#include "tools/cli_common.h"
#include "tools/json_writer.h"
#include "tools/timing.h"

namespace tc = torchfuse_cli;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitMismatch = 1;
constexpr int kExitError = 2;
// Kernel names are tf_<pattern>_<8 hex digits>; most fit this column.
constexpr int kNameWidth = 28;

// What every subcommand sets up: the device, the model (converted), the inputs, the options.
struct Session {
  std::string device;
  torch::jit::Module module;                 // a TorchScript model
  std::shared_ptr<torch::jit::Graph> graph;  // a .pt2 program's graph (then module is empty)
  std::vector<c10::IValue> inputs;
  torchfuse::CompileOptions compile_options;
};

Session open_session(const tc::CliOptions& o, bool needs_arch) {
  Session s;
  s.device = tc::resolve_device(o);
  if (tc::is_exported(o.model)) {
    s.graph = tc::load_exported_graph(o, s.device);
    s.inputs = tc::make_graph_inputs(o, *s.graph, s.device);
  } else {
    s.module = tc::load_model(o, s.device);
    s.inputs = tc::make_inputs(o, s.module, s.device);
  }
  if (needs_arch) s.compile_options.offline_arch = tc::resolve_arch(o, s.device);
  s.compile_options.strict = o.strict;
  return s;
}

// torchfuse::compile for a TorchScript model, compile_exported (weights on the session's device)
// for a .pt2 program.
torchfuse::CompiledModule compile_session(const tc::CliOptions& o, const Session& s) {
  if (s.graph) return torchfuse::compile_exported(o.model, torch::Device(s.device), s.compile_options);
  return torchfuse::compile(s.module, s.compile_options);
}

void header_json(tc::JsonWriter& j, const tc::CliOptions& o, const Session& s) {
  j.field("command", tc::command_name(o.command));
  j.field("model", o.model);
  j.key("inputs").begin_array();
  for (const auto& spec : o.inputs) j.value(tc::describe_spec(spec));
  j.end_array();
  j.field("seed", o.seed);
  j.field("device", s.device);
  j.field("module_dtype", o.module_dtype ? tc::dtype_short_name(*o.module_dtype) : std::string(""));
}

std::string header_text(const tc::CliOptions& o, const Session& s) {
  std::ostringstream t;
  t << "model:  " << o.model << "\n";
  t << "inputs: " << tc::describe_inputs(o) << " (seed " << o.seed << ", device " << s.device;
  if (o.module_dtype) t << ", module converted to " << tc::dtype_short_name(*o.module_dtype);
  t << ")\n";
  return t.str();
}

// ---- explain ----

void explanation_json(tc::JsonWriter& j, const torchfuse::Explanation& e, bool sources) {
  j.field("arch", e.arch);
  j.key("groups").begin_array();
  for (size_t i = 0; i < e.kernels.size(); ++i) {
    const auto& k = e.kernels[i];
    j.begin_object().field("kernel", k.name).field("num_ops", k.num_ops).field("description", k.description);
    if (i < e.cubin_bytes.size()) j.field("cubin_bytes", static_cast<int64_t>(e.cubin_bytes[i]));
    if (sources) j.field("source", k.source);
    j.end_object();
  }
  j.end_array();
  j.array("refused", e.refused);
  j.array("rewrites", e.rewrites);
  j.field("ir_before", e.ir_before).field("ir_after", e.ir_after).field("rewritten_graph", e.rewritten_graph);
}

// The plan without sources: groups, refusals, the IR and the rewritten graph.
std::string plan_text(const torchfuse::Explanation& e) {
  std::ostringstream t;
  t << "arch:   " << e.arch << (e.cubin_bytes.empty() ? " (kernels not compiled: --no-nvrtc)" : "") << "\n\n";
  t << "fusion groups: " << e.kernels.size() << "\n";
  for (size_t i = 0; i < e.kernels.size(); ++i) {
    const auto& k = e.kernels[i];
    t << "  " << std::left << std::setw(kNameWidth) << k.name << " " << std::right << std::setw(4) << k.num_ops << " ops  "
      << k.description;
    if (i < e.cubin_bytes.size()) t << "  (cubin " << e.cubin_bytes[i] << " bytes)";
    t << "\n";
  }
  if (e.kernels.empty()) t << "  (none: everything runs in ATen)\n";
  t << "\ngraph rewrites: " << e.rewrites.size() << "\n";
  for (const auto& r : e.rewrites) t << "  - " << r << "\n";
  t << "\nrefused fusions: " << e.refused.size() << "\n";
  for (const auto& r : e.refused) t << "  - " << r << "\n";
  t << "\n== torchfuse IR before fusion ==\n" << e.ir_before;
  t << "\n== torchfuse IR after fusion ==\n" << e.ir_after;
  t << "\n== rewritten TorchScript graph ==\n" << e.rewritten_graph;
  return t.str();
}

std::string sources_text(const std::vector<torchfuse::KernelInfo>& kernels) {
  std::ostringstream t;
  for (const auto& k : kernels) {
    t << "\n== kernel " << k.name << " (" << k.description << ") ==\n" << k.source;
    if (!k.source.empty() && k.source.back() != '\n') t << "\n";
  }
  return t.str();
}

int run_explain(const tc::CliOptions& o) {
  Session s = open_session(o, true);
  auto compiled = compile_session(o, s);
  const torchfuse::Explanation e = compiled.explain(s.inputs, o.nvrtc);
  if (o.json) {
    tc::JsonWriter j;
    j.begin_object();
    header_json(j, o, s);
    explanation_json(j, e, o.kernel_sources);
    j.end_object();
    std::cout << j.str() << "\n";
  } else {
    std::cout << header_text(o, s) << plan_text(e);
    if (o.kernel_sources) std::cout << sources_text(e.kernels);
  }
  return kExitOk;
}

// ---- verify ----

void stats_json(tc::JsonWriter& j, const torchfuse::Stats& st) {
  j.key("stats").begin_object();
  j.field("specializations", st.specializations).field("fused_calls", st.fused_calls);
  j.field("eager_calls", st.eager_calls).field("kernels_compiled", st.kernels_compiled);
  j.field("kernel_cache_hits", st.kernel_cache_hits).field("kernel_launches", st.kernel_launches);
  j.field("nvrtc_seconds", st.nvrtc_seconds).field("fallback_groups", st.fallback_groups);
  j.field("fallback_calls", st.fallback_calls).field("oom_calls", st.oom_calls);
  j.key("groups").begin_array();
  for (const auto& g : st.groups) {
    j.begin_object().field("specialization", g.specialization).field("kernel", g.kernel_name);
    j.field("description", g.description).field("calls", g.calls).field("launches", g.launches);
    j.field("fell_back", g.fell_back).field("fallback_reason", g.fallback_reason);
    j.field("fallback_calls", g.fallback_calls).field("oom_calls", g.oom_calls).end_object();
  }
  j.end_array().end_object();
}

std::string stats_text(const torchfuse::Stats& st) {
  std::ostringstream t;
  t << "torchfuse stats: " << st.groups.size() << " fused group" << (st.groups.size() == 1 ? "" : "s") << " in "
    << st.specializations << " specialization" << (st.specializations == 1 ? "" : "s") << ", " << st.fused_calls
    << " fused calls, " << st.eager_calls << " eager calls, " << st.kernels_compiled << " kernels compiled ("
    << std::fixed << std::setprecision(2) << st.nvrtc_seconds << " s NVRTC), " << st.fallback_groups
    << " fallback groups, " << st.fallback_calls << " fallback calls\n";
  for (const auto& g : st.groups) {
    t << "  " << std::left << std::setw(kNameWidth) << g.kernel_name << " " << std::right << g.description << ": " << g.calls
      << " calls, " << g.launches << " launches";
    if (g.fell_back) t << ", FELL BACK: " << g.fallback_reason;
    if (g.fallback_calls) t << ", " << g.fallback_calls << " fallback calls";
    t << "\n";
  }
  return t.str();
}

std::string cpu_note(const Session& s) {
  return s.device == "cpu" ? "note: the inputs are on the CPU; torchfuse runs CPU calls eager, so nothing is fused\n"
                           : "";
}

void groups_json(tc::JsonWriter& j, const torchfuse::GroupComparisonReport& r) {
  j.key("groups").begin_object().field("passed", r.passed()).field("checked", r.checked()).field("note", r.note);
  j.key("rows").begin_array();
  for (const auto& g : r.groups) {
    j.begin_object().field("group", g.group).field("kernel", g.kernel_name).field("description", g.description);
    j.field("compared", g.compared).field("passed", g.passed).field("problem", g.problem).field("note", g.note);
    j.field("max_abs_error", g.max_abs_error).field("max_rel_error", g.max_rel_error);
    j.field("rtol", g.tolerance.rtol).field("atol", g.tolerance.atol).array("worst_index", g.worst_index).end_object();
  }
  j.end_array();
  const auto* bad = r.first_mismatch();
  j.field("first_mismatch", bad ? bad->kernel_name : std::string()).end_object();
}

int run_verify(const tc::CliOptions& o) {
  Session s = open_session(o, false);
  auto compiled = compile_session(o, s);
  torchfuse::Tolerance tol{o.rtol.value_or(0), o.atol.value_or(0)};
  const torchfuse::ComparisonReport report =
      torchfuse::compare_with_eager(compiled, s.inputs, o.rtol ? &tol : nullptr);
  // verify --groups: each group against its own ATen ops, on the inputs it got in this call.
  std::optional<torchfuse::GroupComparisonReport> groups;
  if (o.groups) groups = torchfuse::compare_groups(compiled, s.inputs, o.rtol ? &tol : nullptr);
  const bool passed = report.passed() && (!groups || groups->passed());
  const torchfuse::Stats st = compiled.stats();
  if (o.json) {
    tc::JsonWriter j;
    j.begin_object();
    header_json(j, o, s);
    j.field("passed", passed);
    j.key("outputs").begin_array();
    for (const auto& c : report.outputs) {
      j.begin_object().field("name", c.name).field("dtype", c.dtype).array("sizes", c.sizes);
      j.field("passed", c.passed).field("problem", c.problem);
      j.field("max_abs_error", c.max_abs_error).field("max_rel_error", c.max_rel_error);
      j.field("has_reference", c.has_reference);
      j.field("max_abs_error_vs_reference", c.max_abs_error_vs_reference);
      j.field("eager_max_abs_error_vs_reference", c.eager_max_abs_error_vs_reference);
      j.field("rmse_vs_reference", c.rmse_vs_reference).field("eager_rmse_vs_reference", c.eager_rmse_vs_reference);
      j.field("rmse_multiplier", c.rmse_multiplier).array("worst_index", c.worst_index);
      j.field("rtol", c.tolerance.rtol).field("atol", c.tolerance.atol).end_object();
    }
    j.end_array();
    j.field("reference_note", report.reference_note);  // why there is no float64 reference, if not
    j.field("report", report.to_string());
    if (groups) groups_json(j, *groups);
    stats_json(j, st);
    j.end_object();
    std::cout << j.str() << "\n";
  } else {
    std::cout << header_text(o, s) << cpu_note(s) << "\n" << report.to_string();
    if (!report.to_string().empty() && report.to_string().back() != '\n') std::cout << "\n";
    if (groups) std::cout << "\nfusion groups, each against its own ATen ops (compare_groups):\n" << groups->to_string();
    std::cout << "\n" << stats_text(st) << "\n" << (passed ? "PASS" : "FAIL") << ": " << report.outputs.size()
              << " output" << (report.outputs.size() == 1 ? "" : "s") << " compared with eager\n";
  }
  return passed ? kExitOk : kExitMismatch;
}

// ---- bench ----

struct Variant {
  std::string name;
  std::function<void()> fn;
  tc::LoopTiming timing;
  int kernels = -1;
  std::string kernel_note;  // why kernels is unknown
  // bench --phases (torchfuse's variants): us per call in each phase that took time, in path
  // order, and the wall us per call of those calls (the clock's own reads in it).
  std::vector<std::pair<std::string, double>> phases;
  double probed_us = 0;
  bool phases_measured = false;
};

// `calls` calls of v with a hot-path clock installed.
void measure_phases(Variant& v, int calls, bool cuda) {
  namespace rt = torchfuse::runtime;
  rt::HotPathClock clock;
  if (cuda) torch::cuda::synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  {
    const rt::HotPathClock::Install installed(&clock);
    for (int i = 0; i < calls; ++i) v.fn();
  }
  if (cuda) torch::cuda::synchronize();
  v.probed_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls;
  v.phases_measured = true;
  v.phases = clock.named_mean_us(calls);
}

int run_bench(const tc::CliOptions& o) {
  Session s = open_session(o, false);
  const bool cuda = s.device == "cuda";
  auto compiled = compile_session(o, s);
  std::string warning;
  if (cuda && !torchfuse::cuda_available()) {
    warning = "warning: torchfuse cannot use the CUDA driver: its calls run eager\n";
  }
  // One call each first (TorchScript's profiling executor and torchfuse compile there), and a
  // check that the fused result matches eager before timing it.
  const torchfuse::ComparisonReport check = torchfuse::compare_with_eager(compiled, s.inputs);
  auto& module = s.module;
  const auto& inputs = s.inputs;
  // A .pt2 program's TorchScript baseline: its graph run by TorchScript's executor.
  std::unique_ptr<torch::jit::GraphFunction> exported_fn;
  if (s.graph) {
    exported_fn = std::make_unique<torch::jit::GraphFunction>(c10::QualifiedName("forward"), s.graph->copy(), nullptr);
  }
  std::vector<Variant> variants;
  variants.push_back({"torchscript",
                      [&] {
                        if (exported_fn) {
                          torch::jit::Stack stack(inputs.begin(), inputs.end());
                          exported_fn->run(stack);
                        } else {
                          module.forward(inputs);
                        }
                      },
                      {}, -1, "", {}});
  variants.push_back({"eager", [&] { compiled.forward_eager(inputs); }, {}, -1, "", {}});
  variants.push_back({"torchfuse", [&] { compiled.forward(inputs); }, {}, -1, "", {}});
  // With graphs: a module of its own, checked against eager once its graph is captured (the
  // check's own calls warm it up and capture it).
  std::optional<torchfuse::CompiledModule> graphed;
  std::optional<torchfuse::ComparisonReport> graphed_check;
  if (o.cuda_graphs) {
    Session gs = s;
    gs.compile_options.cuda_graphs = true;
    graphed.emplace(compile_session(o, gs));
    for (int i = 0; i <= gs.compile_options.cuda_graph_warmup_calls; ++i) graphed->forward(inputs);
    graphed_check = torchfuse::compare_with_eager(*graphed, inputs);
    variants.push_back({"torchfuse_graphs", [&] { graphed->forward(inputs); }, {}, -1, "", {}});
  }
  for (auto& v : variants) {
    v.fn();
    v.timing = tc::time_loops(v.fn, cuda, o.warmup, o.iters, o.repeats);
    if (o.phases && v.name.rfind("torchfuse", 0) == 0) measure_phases(v, o.iters, cuda);
    if (cuda) {
      v.kernels = torchfuse_bench::count_kernels(v.fn, &v.kernel_note);
    } else {
      v.kernel_note = "cpu: no kernels";
    }
  }
  const double base_us = variants[0].timing.median_us;
  const torchfuse::Stats st = compiled.stats();
  if (o.json) {
    tc::JsonWriter j;
    j.begin_object();
    header_json(j, o, s);
    j.field("timer", tc::timer_name(cuda)).field("warmup", o.warmup).field("iters", o.iters);
    j.field("repeats", o.repeats).field("matches_eager", check.passed());
    if (graphed_check) {
      const torchfuse::Stats gst = graphed->stats();
      j.field("graphs_match_eager", graphed_check->passed());
      j.field("cuda_graph_captures", gst.cuda_graph_captures).field("cuda_graph_replays", gst.cuda_graph_replays);
      j.key("cuda_graph_refusals").begin_array();
      for (const auto& r : gst.cuda_graph_refusals) j.value(r);
      j.end_array();
    }
    j.key("variants").begin_array();
    for (const auto& v : variants) {
      j.begin_object().field("name", v.name).field("median_us", v.timing.median_us).field("min_us", v.timing.min_us);
      j.key("kernels_per_call");
      if (v.kernels >= 0) {
        j.value(v.kernels);
      } else {
        j.null();
      }
      if (v.kernels < 0) j.field("kernels_note", v.kernel_note);
      if (v.phases_measured) {
        j.field("phases_probed_us", v.probed_us);
        j.key("phases_us").begin_object();
        for (const auto& [name, us] : v.phases) j.field(name, us);
        j.end_object();
      }
      j.field("speedup_vs_torchscript", v.timing.median_us > 0 ? base_us / v.timing.median_us : 0.0).end_object();
    }
    j.end_array();
    stats_json(j, st);
    j.end_object();
    std::cout << j.str() << "\n";
    return kExitOk;
  }
  std::cout << header_text(o, s) << warning << cpu_note(s);
  std::cout << "timing: " << o.repeats << " loops of " << o.iters << " calls after " << o.warmup
            << " warm-up calls (" << tc::timer_name(cuda) << ")\n";
  if (!check.passed()) {
    std::cout << "WARNING: torchfuse's output does not match eager:\n" << check.to_string() << "\n";
  }
  if (graphed_check && !graphed_check->passed()) {
    std::cout << "WARNING: torchfuse with CUDA graphs does not match eager:\n" << graphed_check->to_string() << "\n";
  }
  if (graphed) {
    const torchfuse::Stats gst = graphed->stats();
    std::cout << "cuda graphs: " << gst.cuda_graph_captures << " captured, " << gst.cuda_graph_replays << " replays";
    for (const auto& r : gst.cuda_graph_refusals) std::cout << "; uncaptured " << r;
    std::cout << "\n";
  }
  std::cout << "\n" << std::left << std::setw(13) << "variant" << std::right << std::setw(14) << "median us/call"
            << std::setw(12) << "min us" << std::setw(14) << "kernels/call" << std::setw(10) << "speedup" << "\n";
  std::string notes;
  for (const auto& v : variants) {
    std::ostringstream kernels;
    if (v.kernels >= 0) {
      kernels << v.kernels;
    } else {
      kernels << "n/a";
      if (notes.find(v.kernel_note) == std::string::npos) notes += "kernels n/a: " + v.kernel_note + "\n";
    }
    std::cout << std::left << std::setw(13) << v.name << std::right << std::fixed << std::setprecision(1)
              << std::setw(14) << v.timing.median_us << std::setw(12) << v.timing.min_us << std::setw(14)
              << kernels.str() << std::setw(9) << std::setprecision(2)
              << (v.timing.median_us > 0 ? base_us / v.timing.median_us : 0.0) << "x\n";
  }
  std::cout << notes;
  for (const auto& v : variants) {
    if (!v.phases_measured) continue;
    std::cout << v.name << " per call by phase, us (" << v.probed_us << " us per call with the clock):";
    for (const auto& [name, us] : v.phases) std::cout << " " << name << " " << std::setprecision(2) << us;
    // CPU inputs run eager (torchfuse fuses for CUDA devices): no point of the fused path is passed.
    if (v.phases.empty()) std::cout << " none timed (its calls ran eager)";
    std::cout << "\n" << std::setprecision(1);
  }
  std::cout << "\n" << stats_text(st);
  return kExitOk;
}

// ---- dump ----

std::string safe_name(const std::string& name) {
  std::string out;
  for (char c : name) out += (isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_';
  return out.empty() ? "kernel" : out;
}

// Writes one .cu per kernel into dir (names made unique); returns the paths.
std::vector<std::string> write_kernels(const std::string& dir, const std::vector<torchfuse::KernelInfo>& kernels) {
  std::vector<std::string> paths;
  if (kernels.empty()) return paths;
  tc::make_dirs(dir);
  std::map<std::string, int> seen;
  for (const auto& k : kernels) {
    std::string name = safe_name(k.name);
    if (seen[name]++) name += "_" + std::to_string(seen[name] - 1);
    const std::string path = dir + "/" + name + ".cu";
    tc::write_file(path, "// " + k.name + ": " + k.description + "\n" + k.source);
    paths.push_back(path);
  }
  return paths;
}

int run_dump(const tc::CliOptions& o) {
  Session s = open_session(o, true);
  tc::make_dirs(o.out_dir);
  std::vector<std::string> files;
  auto put = [&](const std::string& name, const std::string& text) {
    const std::string path = o.out_dir + "/" + name;
    tc::write_file(path, text);
    files.push_back(path);
  };
  auto graph = s.graph ? s.graph->copy()
                      : torch::jit::toGraphFunction(s.module.get_method("forward").function()).graph()->copy();
  torch::jit::Inline(*graph);
  put("graph_before.txt", graph->toString());
  auto compiled = compile_session(o, s);
  const torchfuse::Explanation e = compiled.explain(s.inputs, o.nvrtc);
  put("ir_before.txt", e.ir_before);
  put("ir_after.txt", e.ir_after);
  put("rewritten_graph.txt", e.rewritten_graph);
  std::string refused;
  for (const auto& r : e.refused) refused += r + "\n";
  put("refused.txt", refused);
  std::string rewrites;
  for (const auto& r : e.rewrites) rewrites += r + "\n";
  put("rewrites.txt", rewrites);
  put("plan.txt", header_text(o, s) + plan_text(e));
  for (const auto& p : write_kernels(o.out_dir + "/kernels", e.kernels)) files.push_back(p);
  bool ran = false;
  if (s.device == "cuda" && torchfuse::cuda_available()) {
    compiled.forward(s.inputs);
    torch::cuda::synchronize();
    ran = true;
    put("graph_for.txt", compiled.graph_for(s.inputs));
    for (const auto& p : write_kernels(o.out_dir + "/run_kernels", compiled.kernels())) files.push_back(p);
  }
  if (o.json) {
    tc::JsonWriter j;
    j.begin_object();
    header_json(j, o, s);
    j.field("out", o.out_dir).field("arch", e.arch).field("kernels", static_cast<int>(e.kernels.size()));
    j.field("ran_on_gpu", ran).array("files", files).end_object();
    std::cout << j.str() << "\n";
  } else {
    std::cout << "wrote " << files.size() << " files into " << o.out_dir << " (" << e.kernels.size() << " kernel"
              << (e.kernels.size() == 1 ? "" : "s") << " for " << e.arch
              << (ran ? "; ran once on the GPU: graph_for.txt, run_kernels/" : "") << "):\n";
    for (const auto& f : files) std::cout << "  " << f << "\n";
  }
  return kExitOk;
}

bool wants_json(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--json") return true;
  }
  return false;
}

int report_error(const std::string& message, bool json, const char* command) {
  std::cerr << "torchfuse: error: " << message << "\n";
  if (json) {
    tc::JsonWriter j;
    j.begin_object().field("command", command).field("ok", false).field("error", message).end_object();
    std::cout << j.str() << "\n";
  }
  return kExitError;
}

}  // namespace

int main(int argc, char** argv) {
  const bool json = wants_json(argc, argv);
  tc::CliOptions o;
  try {
    o = tc::parse_args(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const tc::UsageError& e) {
    return report_error(e.what(), json, "");
  }
  if (o.help) {
    std::cout << (o.command == tc::Command::None ? tc::usage() : tc::usage(o.command));
    return kExitOk;
  }
  try {
    torch::NoGradGuard no_grad;
    // A .pt2 program without --input runs on the shapes it was exported with.
    if (tc::is_exported(o.model) && o.inputs.empty()) o.inputs = tc::exported_example_inputs(o.model);
    switch (o.command) {
      case tc::Command::Explain: return run_explain(o);
      case tc::Command::Verify: return run_verify(o);
      case tc::Command::Bench: return run_bench(o);
      case tc::Command::Dump: return run_dump(o);
      default: return report_error("no command", json, "");
    }
  } catch (const std::exception& e) {
    return report_error(tc::one_line(e), json, tc::command_name(o.command));
  } catch (...) {
    return report_error("unknown exception", json, tc::command_name(o.command));
  }
}
