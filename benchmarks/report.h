// What torchfuse_bench measured, printed as tables and written as JSON
// (the JSON is what scripts/bench_torch_compile.py --torchfuse-json merges).
#pragma once

#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

namespace torchfuse_bench {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One implementation (eager, TorchScript or torchfuse) on one case.
struct ImplResult {
  bool ok = false;
  std::string error;  // why it did not run, when !ok
  double us = kNaN;   // median kernel-side microseconds per call
  double min_us = kNaN;
  int reps = 0;
  int kernels = -1;   // CUDA kernels per call from the profiler; -1: not counted
};

struct CaseResult {
  std::string name;
  std::string dtype;
  int64_t min_bytes = 0;  // inputs read once + outputs written once (SUITE.md)
  bool check_ran = false;
  bool check_passed = false;
  std::string check_report;  // compare_with_eager(torchfuse, inputs).to_string()
  ImplResult eager, script, torchfuse;
  int64_t torchfuse_launches = -1;   // fused kernels per call, from stats().kernel_launches
  int64_t torchfuse_eager_calls = 0; // >0: torchfuse ran this call eager instead of fused
  int script_fusion_groups = -1;     // fusion groups in TorchScript's optimized graph
  std::string kernel_count_note;     // why kernels were not counted, if they were not
};

struct LatencyResult {
  bool ran = false;
  std::vector<int64_t> shape;
  int calls = 0;
  bool check_passed = false;
  double eager_us = kNaN, script_us = kNaN, torchfuse_us = kNaN;
  // Where torchfuse's time goes: the entry checks (arity, devices, the signature's lookup:
  // CompiledModule's why_eager does just those), and the rest (the interpreter, the fusion op,
  // its kernel's launch) as the difference.
  double entry_checks_us = kNaN;
  double alloc_us = kNaN;  // at::empty_like of the output alone: the caching allocator's share
  bool direct = false;     // the specialization runs without the interpreter (one fusion node)
  // CompileOptions::cuda_graphs: outputs copied; and with the static inputs passed and
  // zero-copy outputs (no copy kernels: the replay alone).
  bool graphs_check_passed = false;
  double graphs_us = kNaN, graphs_static_us = kNaN;
  // The same calls again with runtime::HotPathClock installed: microseconds per call in each
  // phase of the path (nonzero ones, in path order), and the wall time per call with the clock's
  // own reads in it. Without graphs, and with graphs (static inputs, zero-copy outputs).
  struct Phases {
    std::vector<std::pair<std::string, double>> us;
    double probed_us = kNaN;
  };
  Phases phases, graph_phases;
  // The direct calls again on a stream from the pool (not the legacy default stream).
  double side_stream_us = kNaN;
  Phases side_stream_phases;
  // The direct calls again with programmatic dependent launch (runtime/programmatic_launch.h;
  // cuLaunchKernelEx with its attribute where the device takes it), checked against eager.
  bool pdl = false;  // the device took it
  bool pdl_check_passed = false;
  double pdl_us = kNaN;
  Phases pdl_phases;
  // The direct calls in alternating rounds (medians of each arm): cuLaunchKernel, cuLaunchKernelEx
  // with no attribute, and with programmatic dependent launch. The host drifts by more than the
  // arms differ over one run, so the rounds are what compares them.
  int paired_rounds = 0;
  double paired_plain_us = kNaN, paired_ex_us = kNaN, paired_pdl_us = kNaN;
  // Calls that repeated a recorded launch (CompileOptions::record_launches) in the timed module,
  // and the same module compiled without records: every call plans, looks up and packs.
  int64_t recorded_calls = 0;
  double unrecorded_us = kNaN;
  Phases unrecorded_phases;
  std::string error;
};

struct CompileTimeResult {
  std::string name;
  std::string dtype;
  std::string error;
  double seconds = kNaN;        // torchfuse::compile() to the first result, synchronized
  double nvrtc_seconds = kNaN;  // stats().nvrtc_seconds after that first call
  int64_t kernels_compiled = 0;
  int64_t kernel_cache_hits = 0;  // memory + disk
  int64_t kernel_disk_hits = 0;   // cubins read from $TORCHFUSE_CACHE_DIR
};

struct BenchReport {
  std::string torch_version;
  std::string timer;  // "cuda_events" or "host_clock"
  double copy_gbs = kNaN;
  int64_t flush_bytes = 0;
  std::vector<CaseResult> cases;
  LatencyResult latency;
  std::vector<CompileTimeResult> compile_times;
};

// Achieved GB/s (1e9) for min_bytes in `us`, and that as a fraction of copy bandwidth.
double gbs(int64_t min_bytes, double us);
double efficiency(int64_t min_bytes, double us, double copy_gbs);

void print_case_header(std::ostream& os);
void print_case_row(const CaseResult& r, double copy_gbs, std::ostream& os);
// Geometric means over cases where torchfuse ran and matched eager.
void print_summary(const BenchReport& report, std::ostream& os);
void print_latency(const LatencyResult& latency, std::ostream& os);
// `cache_dir`: the kernel cache directory the process used, for the title ("off" when none).
void print_compile_times(const std::vector<CompileTimeResult>& times, const std::string& cache_dir, std::ostream& os);

// Throws std::runtime_error when the file cannot be written.
void write_json(const BenchReport& report, const std::string& path);

}  // namespace torchfuse_bench
