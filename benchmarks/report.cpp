#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace torchfuse_bench {
namespace {

// printf into a std::string (the tables are fixed-width columns).
template <typename... Args>
std::string format(const char* fmt, Args... args) {
  const int n = std::snprintf(nullptr, 0, fmt, args...);
  std::string out(n > 0 ? n : 0, '\0');
  std::snprintf(out.data(), out.size() + 1, fmt, args...);
  return out;
}

// A number for a table cell, "-" when absent.
std::string cell(double v, int precision) {
  return std::isfinite(v) ? format("%.*f", precision, v) : "-";
}

std::string kernels_cell(int k) { return k >= 0 ? std::to_string(k) : "?"; }

double speedup(const ImplResult& other, const ImplResult& torchfuse) {
  return other.ok && torchfuse.ok ? other.us / torchfuse.us : kNaN;
}

// ---- JSON ----

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) out += format("\\u%04x", c);
        else out += c;
    }
  }
  return out + "\"";
}

// JSON has no NaN: absent numbers are null.
std::string json_number(double v) {
  return std::isfinite(v) ? format("%.6g", v) : "null";
}

std::string json_impl(const ImplResult& r, int64_t min_bytes, double copy_gbs) {
  std::ostringstream os;
  os << "{\"ok\": " << (r.ok ? "true" : "false") << ", \"error\": " << json_string(r.error)
     << ", \"us\": " << json_number(r.us) << ", \"min_us\": " << json_number(r.min_us)
     << ", \"reps\": " << r.reps << ", \"gbs\": " << json_number(gbs(min_bytes, r.us))
     << ", \"eff\": " << json_number(efficiency(min_bytes, r.us, copy_gbs))
     << ", \"kernels\": " << r.kernels << "}";
  return os.str();
}

std::string json_case(const CaseResult& r, double copy_gbs) {
  std::ostringstream os;
  os << "    {\"case\": " << json_string(r.name) << ", \"dtype\": " << json_string(r.dtype)
     << ", \"min_bytes\": " << r.min_bytes << ",\n"
     << "     \"check\": {\"ran\": " << (r.check_ran ? "true" : "false")
     << ", \"passed\": " << (r.check_passed ? "true" : "false")
     << ", \"report\": " << json_string(r.check_report) << "},\n"
     << "     \"eager\": " << json_impl(r.eager, r.min_bytes, copy_gbs) << ",\n"
     << "     \"script\": " << json_impl(r.script, r.min_bytes, copy_gbs) << ",\n"
     << "     \"torchfuse\": " << json_impl(r.torchfuse, r.min_bytes, copy_gbs) << ",\n"
     << "     \"torchfuse_launches_per_call\": " << r.torchfuse_launches
     << ", \"torchfuse_eager_calls\": " << r.torchfuse_eager_calls
     << ", \"script_fusion_groups\": " << r.script_fusion_groups
     << ", \"kernel_count_note\": " << json_string(r.kernel_count_note) << ",\n"
     << "     \"speedup_vs_eager\": " << json_number(speedup(r.eager, r.torchfuse))
     << ", \"speedup_vs_script\": " << json_number(speedup(r.script, r.torchfuse)) << "}";
  return os.str();
}

std::string json_phases(const LatencyResult::Phases& p) {
  std::ostringstream os;
  os << "{\"probed_us\": " << json_number(p.probed_us) << ", \"us\": {";
  for (size_t i = 0; i < p.us.size(); ++i) os << (i ? ", " : "") << json_string(p.us[i].first) << ": " << json_number(p.us[i].second);
  os << "}}";
  return os.str();
}

std::string json_latency(const LatencyResult& l) {
  std::ostringstream os;
  os << "{\"ran\": " << (l.ran ? "true" : "false") << ", \"shape\": [";
  for (size_t i = 0; i < l.shape.size(); ++i) os << (i ? ", " : "") << l.shape[i];
  os << "], \"calls\": " << l.calls << ", \"check_passed\": " << (l.check_passed ? "true" : "false")
     << ", \"eager_us\": " << json_number(l.eager_us) << ", \"script_us\": " << json_number(l.script_us)
     << ", \"torchfuse_us\": " << json_number(l.torchfuse_us) << ", \"entry_checks_us\": " << json_number(l.entry_checks_us)
     << ", \"alloc_us\": " << json_number(l.alloc_us) << ", \"direct\": " << (l.direct ? "true" : "false")
     << ", \"graphs_check_passed\": " << (l.graphs_check_passed ? "true" : "false")
     << ", \"graphs_us\": " << json_number(l.graphs_us) << ", \"graphs_static_zero_copy_us\": " << json_number(l.graphs_static_us)
     << ", \"phases\": " << json_phases(l.phases) << ", \"graph_phases\": " << json_phases(l.graph_phases)
     << ", \"side_stream_us\": " << json_number(l.side_stream_us)
     << ", \"side_stream_phases\": " << json_phases(l.side_stream_phases)
     << ", \"pdl\": " << (l.pdl ? "true" : "false") << ", \"pdl_check_passed\": " << (l.pdl_check_passed ? "true" : "false")
     << ", \"pdl_us\": " << json_number(l.pdl_us) << ", \"pdl_phases\": " << json_phases(l.pdl_phases)
     << ", \"paired_rounds\": " << l.paired_rounds << ", \"paired_plain_us\": " << json_number(l.paired_plain_us)
     << ", \"paired_ex_us\": " << json_number(l.paired_ex_us)
     << ", \"paired_pdl_us\": " << json_number(l.paired_pdl_us)
     << ", \"recorded_calls\": " << l.recorded_calls << ", \"unrecorded_us\": " << json_number(l.unrecorded_us)
     << ", \"unrecorded_phases\": " << json_phases(l.unrecorded_phases)
     << ", \"error\": " << json_string(l.error)
     << "}";
  return os.str();
}

std::string json_compile_time(const CompileTimeResult& c) {
  std::ostringstream os;
  os << "    {\"case\": " << json_string(c.name) << ", \"dtype\": " << json_string(c.dtype)
     << ", \"seconds\": " << json_number(c.seconds) << ", \"nvrtc_seconds\": " << json_number(c.nvrtc_seconds)
     << ", \"kernels_compiled\": " << c.kernels_compiled << ", \"kernel_cache_hits\": " << c.kernel_cache_hits
     << ", \"kernel_disk_hits\": " << c.kernel_disk_hits
     << ", \"error\": " << json_string(c.error) << "}";
  return os.str();
}

}  // namespace

double gbs(int64_t min_bytes, double us) { return static_cast<double>(min_bytes) / (us * 1e-6) / 1e9; }

double efficiency(int64_t min_bytes, double us, double copy_gbs) { return gbs(min_bytes, us) / copy_gbs; }

void print_case_header(std::ostream& os) {
  os << format("%-18s %8s | %9s %9s %9s | %7s %5s | %5s %5s %5s %6s | %7s %7s | %s\n", "case", "min MB",
               "eager us", "script us", "tfuse us", "tf GB/s", "tf eff", "k eag", "k scr", "k tf",
               "tf lch", "x eager", "x scrpt", "check");
}

void print_case_row(const CaseResult& r, double copy_gbs, std::ostream& os) {
  std::string check = !r.check_ran ? "not run" : r.check_passed ? "ok" : "FAIL";
  if (r.torchfuse_eager_calls > 0) check += " (ran eager)";
  os << format("%-18s %8.1f | %9s %9s %9s | %7s %5s | %5s %5s %5s %6s | %7s %7s | %s\n", r.name.c_str(),
               r.min_bytes / 1e6, cell(r.eager.us, 1).c_str(), cell(r.script.us, 1).c_str(),
               cell(r.torchfuse.us, 1).c_str(), cell(gbs(r.min_bytes, r.torchfuse.us), 0).c_str(),
               cell(efficiency(r.min_bytes, r.torchfuse.us, copy_gbs), 2).c_str(),
               kernels_cell(r.eager.kernels).c_str(), kernels_cell(r.script.kernels).c_str(),
               kernels_cell(r.torchfuse.kernels).c_str(),
               r.torchfuse_launches >= 0 ? std::to_string(r.torchfuse_launches).c_str() : "?",
               cell(speedup(r.eager, r.torchfuse), 2).c_str(), cell(speedup(r.script, r.torchfuse), 2).c_str(),
               check.c_str());
  // Say why a column is empty rather than leave a bare "-".
  for (const auto* impl : {&r.eager, &r.script, &r.torchfuse}) {
    if (!impl->ok && !impl->error.empty()) {
      const char* which = impl == &r.eager ? "eager" : impl == &r.script ? "script" : "torchfuse";
      os << "    " << which << " did not run: " << impl->error << "\n";
    }
  }
  if (r.script.ok && r.script_fusion_groups == 0) {
    os << "    TorchScript's fuser made no fusion group for this case\n";
  }
  if (r.check_ran && !r.check_passed) os << r.check_report << "\n";
}

void print_summary(const BenchReport& report, std::ostream& os) {
  // Per dtype: geometric means of torchfuse's speed-ups and efficiency over the cases it passed.
  std::vector<std::string> dtypes;
  for (const auto& r : report.cases) {
    if (std::find(dtypes.begin(), dtypes.end(), r.dtype) == dtypes.end()) dtypes.push_back(r.dtype);
  }
  for (const auto& dtype : dtypes) {
    double log_eager = 0, log_script = 0, log_eff = 0;
    int n = 0, n_eff = 0, total = 0;
    for (const auto& r : report.cases) {
      if (r.dtype != dtype) continue;
      ++total;
      if (!r.check_passed || !r.torchfuse.ok) continue;
      log_eff += std::log(efficiency(r.min_bytes, r.torchfuse.us, report.copy_gbs));
      ++n_eff;
      if (!r.eager.ok || !r.script.ok) continue;
      log_eager += std::log(speedup(r.eager, r.torchfuse));
      log_script += std::log(speedup(r.script, r.torchfuse));
      ++n;
    }
    if (n_eff == 0) {
      os << format("%s: no case both ran and passed its check\n", dtype.c_str());
      continue;
    }
    if (n == 0) {
      os << format("%s geomean over %d/%d cases: torchfuse efficiency %.2f (eager and TorchScript not timed)\n",
                   dtype.c_str(), n_eff, total, std::exp(log_eff / n_eff));
      continue;
    }
    os << format("%s geomean over %d/%d cases: torchfuse %.2fx vs eager, %.2fx vs TorchScript, efficiency %.2f\n",
                 dtype.c_str(), n, total, std::exp(log_eager / n), std::exp(log_script / n),
                 std::exp(log_eff / n_eff));
  }
}

void print_latency(const LatencyResult& l, std::ostream& os) {
  if (!l.ran || l.shape.size() != 2) {
    os << "Small-tensor latency: did not run: " << l.error << "\n";
    return;
  }
  os << format("Small-tensor latency (%lldx%lld fp32 tanh-GELU chain, %d calls, wall clock per call): "
               "eager %s us, TorchScript %s us, torchfuse %s us%s\n",
               static_cast<long long>(l.shape.at(0)), static_cast<long long>(l.shape.at(1)), l.calls,
               cell(l.eager_us, 1).c_str(), cell(l.script_us, 1).c_str(), cell(l.torchfuse_us, 1).c_str(),
               l.check_passed ? "" : " (torchfuse output did NOT match eager)");
  os << format("  torchfuse: entry checks %s us, %s + fusion op + launch %s us (of which allocating the output %s "
               "us); with CUDA graphs %s us, static inputs and zero-copy outputs %s us%s\n",
               cell(l.entry_checks_us, 1).c_str(), l.direct ? "direct call" : "interpreter",
               cell(l.torchfuse_us - l.entry_checks_us, 1).c_str(), cell(l.alloc_us, 1).c_str(),
               cell(l.graphs_us, 1).c_str(), cell(l.graphs_static_us, 1).c_str(),
               l.graphs_check_passed ? "" : " (graphs' output did NOT match eager)");
  const auto print_phases = [&](const char* what, const LatencyResult::Phases& p) {
    if (p.us.empty()) return;
    os << "  " << what << ", per call with the hot-path clock (" << cell(p.probed_us, 2) << " us):";
    for (const auto& [name, us] : p.us) os << " " << name << " " << cell(us, 2);
    os << "\n";
  };
  print_phases("direct", l.phases);
  if (!std::isnan(l.unrecorded_us)) {
    os << "  recorded launches: " << l.recorded_calls << " calls; without them (record_launches = false) "
       << cell(l.unrecorded_us, 1) << " us per call\n";
  }
  print_phases("direct without recorded launches", l.unrecorded_phases);
  if (!std::isnan(l.side_stream_us)) os << "  direct on a pool stream: " << cell(l.side_stream_us, 1) << " us per call\n";
  print_phases("direct on a pool stream", l.side_stream_phases);
  if (!std::isnan(l.pdl_us)) {
    os << "  direct with programmatic dependent launch" << (l.pdl ? "" : " (not taken by this device)") << ": "
       << cell(l.pdl_us, 1) << " us per call, " << (l.pdl_check_passed ? "matches eager" : "DOES NOT match eager") << "\n";
  }
  print_phases("direct with programmatic dependent launch", l.pdl_phases);
  if (l.paired_rounds > 0) {
    os << "  direct, " << l.paired_rounds << " alternating rounds (medians): cuLaunchKernel " << cell(l.paired_plain_us, 2)
       << " us, cuLaunchKernelEx without attributes " << cell(l.paired_ex_us, 2)
       << " us, with programmatic dependent launch " << cell(l.paired_pdl_us, 2) << " us per call\n";
  }
  print_phases("graphs (static inputs, zero-copy)", l.graph_phases);
}

void print_compile_times(const std::vector<CompileTimeResult>& times, const std::string& cache_dir, std::ostream& os) {
  os << "Compile time (torchfuse::compile() to the first synchronized result; kernel cache: " << cache_dir << ")\n";
  os << format("%-18s %-9s %9s %9s %7s %8s %8s %9s\n", "case", "dtype", "total ms", "nvrtc ms", "nvrtc %",
               "compiled", "mem hits", "disk hits");
  for (const auto& c : times) {
    if (!c.error.empty()) {
      os << format("%-18s %-9s failed: %s\n", c.name.c_str(), c.dtype.c_str(), c.error.c_str());
      continue;
    }
    os << format("%-18s %-9s %9.1f %9.1f %6.0f%% %8lld %8lld %9lld\n", c.name.c_str(), c.dtype.c_str(),
                 1e3 * c.seconds, 1e3 * c.nvrtc_seconds, 100.0 * c.nvrtc_seconds / c.seconds,
                 static_cast<long long>(c.kernels_compiled),
                 static_cast<long long>(c.kernel_cache_hits - c.kernel_disk_hits),
                 static_cast<long long>(c.kernel_disk_hits));
  }
}

void write_json(const BenchReport& report, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << "{\n  \"tool\": \"torchfuse_bench\",\n"
      << "  \"torch_version\": " << json_string(report.torch_version) << ",\n"
      << "  \"timer\": " << json_string(report.timer) << ",\n"
      << "  \"copy_bandwidth_gbs\": " << json_number(report.copy_gbs) << ",\n"
      << "  \"l2_flush_bytes\": " << report.flush_bytes << ",\n"
      << "  \"results\": [\n";
  for (size_t i = 0; i < report.cases.size(); ++i) {
    out << json_case(report.cases[i], report.copy_gbs) << (i + 1 < report.cases.size() ? ",\n" : "\n");
  }
  out << "  ],\n  \"latency\": " << json_latency(report.latency) << ",\n  \"compile_time\": [\n";
  for (size_t i = 0; i < report.compile_times.size(); ++i) {
    out << json_compile_time(report.compile_times[i]) << (i + 1 < report.compile_times.size() ? ",\n" : "\n");
  }
  out << "  ]\n}\n";
  if (!out) throw std::runtime_error("error writing " + path);
}

}  // namespace torchfuse_bench
