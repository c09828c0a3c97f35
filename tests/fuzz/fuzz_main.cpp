// torchfuse_fuzz: the differential fuzzer. Random programs (tests/fuzz/program.h), each compiled
// by torchfuse and checked, reproducible from --seed and the program's index.
//
//   torchfuse_fuzz --mode cpu --count 200     # CI: convert, fuse, generate, NVRTC-compile for
//                                             # sm_80 and sm_90; any error fails
//   torchfuse_fuzz --mode gpu --count 10000   # GPU machine: compare_with_eager against float64,
//                                             # no fallback, no error; --start/--count split a run
//
// A failing program is shrunk (smaller programs that fail the same way) and printed with its
// inputs; the summary counts programs per op, dtype, schedule and graph rewrite. Exit status 1 when
// any failed.
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "tests/fuzz/program.h"
#include "torchfuse/torchfuse.h"

namespace {

struct Args {
  std::string mode = "cpu";
  uint64_t seed = 1;
  uint64_t start = 0;
  uint64_t count = 100;
  std::vector<std::string> archs = {"sm_80", "sm_90"};
  std::string report;
  int64_t max_elements = int64_t{1} << 22;
  bool shrink = true;
  double time_limit = 0;  // seconds; 0: none (stops between programs, reporting what ran)
  bool fuse_siblings = false;  // CompileOptions::fuse_siblings for every compile
};

struct Outcome {
  enum Kind { Pass, Skip, Fail } kind = Pass;
  std::string category;  // skip reason or failure class
  std::string detail;
  std::vector<std::string> schedules;
  std::vector<std::string> rewrites;  // the graph rewrites applied, by kind ("attention", ...)
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, sep);)
    if (!part.empty()) out.push_back(part);
  return out;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "torchfuse_fuzz: " << k << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--mode") a.mode = value();
    else if (k == "--seed") a.seed = std::stoull(value());
    else if (k == "--start") a.start = std::stoull(value());
    else if (k == "--count") a.count = std::stoull(value());
    else if (k == "--archs") a.archs = split(value(), ',');
    else if (k == "--report") a.report = value();
    else if (k == "--max-elements") a.max_elements = std::stoll(value());
    else if (k == "--no-shrink") a.shrink = false;
    else if (k == "--fuse-siblings") a.fuse_siblings = true;
    else if (k == "--time-limit") a.time_limit = std::stod(value());
    else {
      std::cerr << "torchfuse_fuzz: unknown argument " << k
                << " (--mode cpu|gpu --seed S --start I --count N --archs sm_80,sm_90 --report FILE "
                   "--max-elements E --no-shrink --time-limit SECONDS --fuse-siblings)\n";
      std::exit(2);
    }
  }
  if (a.mode != "cpu" && a.mode != "gpu") {
    std::cerr << "torchfuse_fuzz: --mode is cpu or gpu, got " << a.mode << "\n";
    std::exit(2);
  }
  return a;
}

// "row reduction", "pointwise"... from each kernel's header comment.
// The kinds of graph rewrite applied (each explain().rewrites line's first word), once each.
std::vector<std::string> rewrite_kinds(const std::vector<std::string>& rewrites) {
  std::vector<std::string> kinds;
  for (const auto& r : rewrites) kinds.push_back(r.substr(0, r.find(' ')));
  std::sort(kinds.begin(), kinds.end());
  kinds.erase(std::unique(kinds.begin(), kinds.end()), kinds.end());
  return kinds;
}

std::vector<std::string> schedules_of(const std::vector<torchfuse::KernelInfo>& kernels) {
  std::vector<std::string> out;
  for (const auto& k : kernels) {
    const size_t at = k.source.find("// torchfuse fusion group ");
    const size_t open = k.source.find('(', at);
    const size_t close = k.source.find(')', open);
    if (at == std::string::npos || open == std::string::npos || close == std::string::npos) continue;
    out.push_back(k.source.substr(open + 1, close - open - 1));
  }
  return out;
}

bool cpu_lacks_kernel(const std::string& what) { return what.find("not implemented for") != std::string::npos; }

class Checker {
 public:
  explicit Checker(const Args& a) : args_(a) {}

  Outcome check(const tffuzz::Program& p, uint64_t input_seed) const {
    torch::jit::Module m("FuzzModule");
    try {
      m.define(p.source());
    } catch (const std::exception& e) {
      return {Outcome::Skip, "script", e.what()};
    }
    torch::manual_seed(input_seed);
    return args_.mode == "cpu" ? check_cpu(m, p) : check_gpu(m, p);
  }

 private:
  // The options every compile of a run starts from.
  torchfuse::CompileOptions run_options() const {
    torchfuse::CompileOptions options;
    options.fuse_siblings = args_.fuse_siblings;
    return options;
  }

  Outcome check_cpu(const torch::jit::Module& m, const tffuzz::Program& p) const {
    const auto in = p.make_inputs(c10::kCPU, p.dtype);
    try {
      torchfuse::compile(m).forward_eager(in);
    } catch (const std::exception& e) {
      return {Outcome::Skip, cpu_lacks_kernel(e.what()) ? "cpu kernel missing" : "eager rejects", e.what()};
    }
    Outcome o;
    for (const auto& arch : args_.archs) {
      torchfuse::CompileOptions options = run_options();
      options.offline_arch = arch;
      try {
        const auto e = torchfuse::compile(m, options).explain(in, /*compile_kernels=*/true);
        if (o.schedules.empty()) o.schedules = schedules_of(e.kernels);
        if (o.rewrites.empty()) o.rewrites = rewrite_kinds(e.rewrites);
      } catch (const std::exception& e) {
        return {Outcome::Fail, "compile error (" + arch + ")", e.what()};
      }
    }
    return o;
  }

  Outcome check_gpu(const torch::jit::Module& m, const tffuzz::Program& p) const {
    const c10::Device cuda(c10::kCUDA, 0);
    torchfuse::CompileOptions options = run_options();
    options.debug_poison_outputs = true;
    auto c = torchfuse::compile(m, options);
    try {
      c.forward_eager(p.make_inputs(cuda, p.dtype));
    } catch (const std::exception& e) {
      return {Outcome::Skip, "eager rejects", e.what()};
    }
    Outcome o;
    try {
      c.forward(p.make_inputs(cuda, p.dtype));  // compiles on one draw
      const auto in = p.make_inputs(cuda, p.dtype);
      const auto report = torchfuse::compare_with_eager(c, in);
      torch::cuda::synchronize();
      o.schedules = schedules_of(c.kernels());
      o.rewrites = rewrite_kinds(c.explain(in).rewrites);
      if (!report.passed() && only_error_size(report)) {
        std::string why;
        if (passes_over_draws(c, p, report, cuda, &why)) {
          o.category = "passed over draws";
          o.detail = why;
          return o;
        }
        return {Outcome::Fail, "wrong values", report.to_string() + why + "\n" + c.graph_for(in), o.schedules};
      }
      if (!report.passed()) {
        bool shape = false;
        for (const auto& out : report.outputs) shape = shape || out.problem == "shape differs";
        return {Outcome::Fail, shape ? "wrong shape" : "wrong values", report.to_string() + c.graph_for(in), o.schedules};
      }
    } catch (const std::exception& e) {
      const std::string what = e.what();
      return {Outcome::Fail, what.find("internal error") != std::string::npos ? "internal error" : "error", what};
    }
    try {
      if (std::string why = recorded_differs(m, p, c, cuda); !why.empty()) return {Outcome::Fail, "recorded launch", why, o.schedules};
    } catch (const std::exception& e) {
      return {Outcome::Fail, "recorded launch", std::string("the recorded module threw: ") + e.what(), o.schedules};
    }
    const auto s = c.stats();
    if (s.fallback_groups > 0) {
      std::string why;
      for (const auto& g : s.groups)
        if (g.fell_back) why += g.kernel_name + ": " + g.fallback_reason + "\n";
      return {Outcome::Fail, "fallback", why, o.schedules};
    }
    if (s.fused_calls == 0) return {Outcome::Fail, "ran eager", "no call ran fused", o.schedules};
    return o;
  }

  // The program compiled again without poisoned outputs (poisoned calls never repeat a recorded
  // launch: runtime/launch_record.h), warmed up so that its launches are recorded, then called on
  // a fresh draw beside the poisoned module's planned launch: the same kernels on the same inputs,
  // so every output must be bitwise the same. "" when they are (or nothing was recorded).
  std::string recorded_differs(const torch::jit::Module& m, const tffuzz::Program& p, torchfuse::CompiledModule& planned,
                               const c10::Device& cuda) const {
    // The fuzz options but for the poisoning (check_gpu's).
    torchfuse::CompileOptions options = run_options();
    options.debug_poison_outputs = false;
    auto r = torchfuse::compile(m, options);
    for (int i = 0; i < 2; ++i) r.forward(p.make_inputs(cuda, p.dtype));
    const auto in = p.make_inputs(cuda, p.dtype);
    const int64_t before = r.stats().recorded_calls;
    const auto got = flat_tensors(r.forward(in));
    if (r.stats().recorded_calls == before) return "";
    const auto want = flat_tensors(planned.forward(in));
    if (got.size() != want.size()) return "recorded call returned " + std::to_string(got.size()) + " tensors, planned " + std::to_string(want.size());
    // An ATen op after the groups may itself differ from call to call (CUDA cumsum's scan of a
    // long row adds its tiles' prefixes in the order they arrive: seed 36, program 1364), so an
    // output two planned calls disagree on says nothing of the recorded launch.
    std::vector<at::Tensor> again;
    for (size_t i = 0; i < got.size(); ++i) {
      if (!got[i].defined() || !want[i].defined() || bitwise_same(got[i], want[i])) continue;
      if (again.empty()) again = flat_tensors(planned.forward(in));
      if (!bitwise_same(want[i], again[i])) continue;
      return "output " + std::to_string(i) + " of the recorded launch differs from the planned launch's";
    }
    return "";
  }

  // Same sizes, dtype and values, NaN matching NaN.
  static bool bitwise_same(const at::Tensor& a, const at::Tensor& b) {
    if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
    if (!a.is_floating_point()) return torch::equal(a, b);
    return ((a == b) | (a.isnan() & b.isnan())).all().item<bool>();
  }

  // True when every failing output failed only the size of its error (the RMSE rule or the outlier
  // guard), not NaN/infinity placement, shape or dtype.
  static bool only_error_size(const torchfuse::ComparisonReport& report) {
    for (const auto& out : report.outputs) {
      if (out.passed) continue;
      const bool size_only = out.problem.rfind("RMSE against", 0) == 0 || out.problem.rfind("an element farther", 0) == 0;
      if (!size_only) return false;
    }
    return true;
  }

  // The verdict again over kDraws fresh input draws, pooled: eager's error on one draw is one sample,
  // and where the result cancels (a sum of terms that add up to ~0) it swings by 10x between
  // draws, so a compiled result as accurate as eager on average can fail against a lucky draw.
  // Every draw must pass compare_with_eager's other rules; per output, the RMSE against float64 over
  // all draws must be within m x eager's pooled RMSE + atol / 10, and no element of any draw farther
  // than atol + rtol |ref| + m x eager's worst element over all draws (the same rules, on more
  // samples). A wrong kernel misses on every draw and still fails.
  bool passes_over_draws(torchfuse::CompiledModule& c, const tffuzz::Program& p, const torchfuse::ComparisonReport& first,
                         const c10::Device& device, std::string* why) const {
    constexpr int kDraws = 8;
    struct Pool {
      double sq_a = 0, sq_e = 0, n = 0, eager_worst = 0, excess = 0;
    };
    std::vector<Pool> pools(first.outputs.size());
    for (int d = 0; d < kDraws; ++d) {
      const auto in = p.make_inputs(device, p.dtype);
      const c10::IValue eager = c.forward_eager(in);
      const c10::IValue actual = c.forward(in);
      const c10::IValue reference = c.forward_reference(in);
      const auto report = torchfuse::compare_outputs_with_reference(eager, actual, reference);
      if (!report.passed() && !only_error_size(report)) {
        *why = "draw " + std::to_string(d + 1) + " of " + std::to_string(kDraws) + " fails otherwise:\n" + report.to_string();
        return false;
      }
      const auto e = flat_tensors(eager), a = flat_tensors(actual), r = flat_tensors(reference);
      for (size_t i = 0; i < pools.size() && i < e.size(); ++i) {
        if (!e[i].defined() || !e[i].is_floating_point() || e[i].numel() == 0) continue;
        const at::Tensor ed = e[i].to(at::kDouble), ad = a[i].to(at::kDouble), rd = r[i].to(at::kDouble);
        const at::Tensor judged = rd.to(e[i].scalar_type()).isfinite() & ed.isfinite();
        const at::Tensor zero = at::zeros_like(ed);
        const at::Tensor a_err = at::where(judged, (ad - rd).abs(), zero);
        const at::Tensor e_err = at::where(judged, (ed - rd).abs(), zero);
        Pool& pl = pools[i];
        pl.sq_a += a_err.square().sum().item<double>();
        pl.sq_e += e_err.square().sum().item<double>();
        pl.n += judged.sum().item<double>();
        pl.eager_worst = std::max(pl.eager_worst, e_err.max().item<double>());
        const double rtol = first.outputs[i].tolerance.rtol;
        pl.excess = std::max(pl.excess, at::where(judged, a_err - rtol * rd.abs(), zero).max().item<double>());
      }
    }
    std::ostringstream os;
    bool ok = true;
    for (size_t i = 0; i < pools.size(); ++i) {
      const Pool& pl = pools[i];
      if (pl.n == 0) continue;
      const auto& o = first.outputs[i];
      const double m = o.rmse_multiplier, atol = o.tolerance.atol;
      const double rmse_a = std::sqrt(pl.sq_a / pl.n), rmse_e = std::sqrt(pl.sq_e / pl.n);
      const bool rmse_ok = rmse_a <= m * rmse_e + atol / 10;
      const bool outlier_ok = pl.excess <= atol + m * pl.eager_worst;
      ok = ok && rmse_ok && outlier_ok;
      os << "output " << i << " over " << kDraws << " more draws: rmse vs f64 compiled " << rmse_a << ", eager " << rmse_e
         << " (m " << m << "); worst excess " << pl.excess << " vs " << atol + m * pl.eager_worst
         << (rmse_ok && outlier_ok ? ": passes" : ": fails") << "\n";
    }
    *why = os.str();
    return ok;
  }

  static std::vector<at::Tensor> flat_tensors(const c10::IValue& v) {
    std::vector<at::Tensor> out;
    if (v.isTensor()) {
      out.push_back(v.toTensor());
    } else if (v.isTuple()) {
      for (const auto& e : v.toTupleRef().elements()) {
        auto sub = flat_tensors(e);
        out.insert(out.end(), sub.begin(), sub.end());
      }
    } else if (v.isList()) {
      for (const auto& e : v.toListRef()) {
        auto sub = flat_tensors(e);
        out.insert(out.end(), sub.begin(), sub.end());
      }
    } else if (v.isGenericDict()) {
      for (const auto& entry : v.toGenericDict()) {  // in insertion order, as compare_with_eager
        auto sub = flat_tensors(entry.value());
        out.insert(out.end(), sub.begin(), sub.end());
      }
    } else {
      out.emplace_back();  // a non-tensor output keeps its position
    }
    return out;
  }

  const Args& args_;
};

std::string describe_inputs(const tffuzz::Program& p) {
  std::ostringstream os;
  os << c10::toString(p.dtype) << (p.values == tffuzz::Values::Special ? ", special values" : "") << "; inputs:";
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    os << " x" << i << " [";
    for (size_t d = 0; d < p.inputs[i].sizes.size(); ++d) os << (d ? "," : "") << p.inputs[i].sizes[d];
    os << "] " << tffuzz::layout_name(p.inputs[i].layout) << ";";
  }
  return os.str();
}

// Shrinks `p` while a smaller program fails in the same category.
tffuzz::Program shrink(const Checker& checker, tffuzz::Program p, const std::string& category, uint64_t input_seed,
                       Outcome* last, const std::function<bool()>& out_of_time) {
  for (int round = 0; round < 50 && !out_of_time(); ++round) {
    bool smaller = false;
    for (const auto& c : tffuzz::shrink_candidates(p)) {
      const Outcome o = checker.check(c, input_seed);
      if (o.kind == Outcome::Fail && o.category == category) {
        p = c;
        *last = o;
        smaller = true;
        break;
      }
    }
    if (!smaller) break;
  }
  return p;
}

struct Tally {
  int pass = 0, fail = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  if (args.mode == "gpu" && !torchfuse::cuda_available()) {
    std::cerr << "torchfuse_fuzz: --mode gpu needs a CUDA device\n";
    return 2;
  }
  tffuzz::Options gen;
  gen.max_elements = args.max_elements;
  gen.allow_half = args.mode == "gpu";  // LibTorch's CPU kernels lack fp16 for some ops
  const Checker checker(args);
  std::map<std::string, Tally> by_op, by_dtype, by_schedule, by_rewrite;
  std::map<std::string, int> skips, failures;
  std::ostringstream failed, pooled;
  int over_draws = 0;  // passed only when judged over more input draws (see passes_over_draws)
  int passed = 0, failed_count = 0, skipped = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  uint64_t ran = 0;
  for (uint64_t i = args.start; i < args.start + args.count; ++i, ++ran) {
    if (args.time_limit > 0 && elapsed() > args.time_limit) break;
    if (std::getenv("TORCHFUSE_FUZZ_TRACE")) std::ofstream(std::getenv("TORCHFUSE_FUZZ_TRACE")) << i << "\n";
    const tffuzz::Program p = tffuzz::generate(args.seed, i, gen);
    const uint64_t input_seed = args.seed * 7919 + i;
    // TORCHFUSE_FUZZ_VERBOSE=1: every program as it is checked.
    if (std::getenv("TORCHFUSE_FUZZ_VERBOSE")) std::cout << "program " << i << ": " << describe_inputs(p) << "\n" << p.source();
    Outcome o = checker.check(p, input_seed);
    if (o.kind == Outcome::Skip) {
      ++skipped;
      ++skips[o.category];
      if (std::getenv("TORCHFUSE_FUZZ_VERBOSE")) std::cout << "skip " << i << ": " << o.category << ": " << o.detail << "\n";
      continue;
    }
    const bool ok = o.kind == Outcome::Pass;
    if (ok && o.category == "passed over draws") {
      ++over_draws;
      pooled << "### program " << i << " (seed " << args.seed << "): passed over draws\n" << describe_inputs(p) << "\n```\n"
             << p.source() << "```\n" << o.detail << "\n";
    }
    (ok ? passed : failed_count)++;
    for (const auto& op : p.ops()) (ok ? by_op[op].pass : by_op[op].fail)++;
    (ok ? by_dtype[c10::toString(p.dtype)].pass : by_dtype[c10::toString(p.dtype)].fail)++;
    for (const auto& s : o.schedules) (ok ? by_schedule[s].pass : by_schedule[s].fail)++;
    for (const auto& r : o.rewrites) (ok ? by_rewrite[r].pass : by_rewrite[r].fail)++;
    if (ok) continue;
    ++failures[o.category];
    Outcome last = o;
    // Shrinking stops a minute past the time limit, so that a split run still ends with its report.
    const auto out_of_time = [&] { return args.time_limit > 0 && elapsed() > args.time_limit + 60; };
    const tffuzz::Program small = args.shrink ? shrink(checker, p, o.category, input_seed, &last, out_of_time) : p;
    failed << "### program " << i << " (seed " << args.seed << "): " << o.category << "\n"
           << describe_inputs(small) << "\n```\n" << small.source() << "```\n" << last.detail << "\n\n";
    std::cout << "FAIL program " << i << ": " << o.category << "\n" << std::flush;
  }
  const double seconds = elapsed();

  std::ostringstream summary;
  summary << "torchfuse_fuzz --mode " << args.mode << " --seed " << args.seed << " --start " << args.start << " --count "
          << args.count << " (ran " << ran << "): " << passed << " passed, " << failed_count << " failed, " << skipped << " skipped ("
          << seconds << " s)\n";
  if (over_draws > 0) summary << "  passed: judged over 8 more draws (one draw's error above eager's): " << over_draws << "\n";
  for (const auto& [k, n] : failures) summary << "  failed: " << k << ": " << n << "\n";
  for (const auto& [k, n] : skips) summary << "  skipped: " << k << ": " << n << "\n";
  auto table = [&](const char* title, const std::map<std::string, Tally>& t) {
    summary << title << ":";
    for (const auto& [k, v] : t) summary << " " << k << " " << v.pass << "/" << v.pass + v.fail;
    summary << "\n";
  };
  table("per dtype (passed/checked)", by_dtype);
  table("per op (programs using it)", by_op);
  table("per schedule (kernels)", by_schedule);
  table("per graph rewrite (programs it applied to)", by_rewrite);
  std::cout << summary.str() << failed.str() << pooled.str();
  if (!args.report.empty()) std::ofstream(args.report) << summary.str() << "\n" << failed.str() << pooled.str();
  return failed_count == 0 ? 0 : 1;
}
