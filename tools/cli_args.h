// The `torchfuse` command line: input specs and arguments, parsed apart from running anything so
// that tests can check every message. Everything here throws UsageError (one line, no prefix) on
// input it does not take; the tool prints it as "torchfuse: error: <message>" and exits 2.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <c10/core/ScalarType.h>

namespace torchfuse_cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One `--input DTYPE[SIZES][:LO..HI]`: f32[8,512], bf16[], i64[8,128]:0..50257, b8[4], f32[4,8]:-1..1.
struct InputSpec {
  std::string text;                // as given
  c10::ScalarType dtype = c10::ScalarType::Float;
  std::vector<int64_t> sizes;      // empty: a 0-dim tensor
  bool has_range = false;          // floats: uniform in [lo, hi) instead of standard normal
  double lo = 0, hi = 0;           // integers: drawn uniformly in [lo, hi) (default_int_range)
};

// The short dtype names the tool reads and prints: f32 f16 bf16 f64 i32 i64 i8 u8 b8.
std::optional<c10::ScalarType> dtype_from_name(const std::string& name);
std::string dtype_short_name(c10::ScalarType dtype);
// "f32[8, 64]" for messages and tables.
std::string describe_spec(const InputSpec& spec);
// The range integer inputs are drawn from when the spec gives none: [0, 10) (u8, i8: [0, 10) too;
// b8: [0, 2)).
void default_int_range(c10::ScalarType dtype, double* lo, double* hi);

InputSpec parse_input_spec(const std::string& text);

enum class Command { None, Explain, Verify, Bench, Dump };
const char* command_name(Command c);

struct CliOptions {
  Command command = Command::None;
  bool help = false;                 // --help (for `command`, or the tool when None)
  std::string model;                 // the TorchScript file
  std::vector<InputSpec> inputs;
  uint64_t seed = 0;
  std::string device;                // "cuda", "cpu", or empty: cuda when available
  std::optional<c10::ScalarType> module_dtype;  // --dtype
  bool eval = true;                  // --eval / --no-eval
  bool json = false;
  std::string arch;                  // --arch (explain, dump); empty: the GPU's, else sm_90
  bool kernel_sources = true;        // explain --no-source leaves the sources out
  bool nvrtc = true;                 // explain/dump --no-nvrtc: plan only, no cubins
  bool strict = false;               // CompileOptions::strict
  int warmup = 10, iters = 50, repeats = 5;  // bench
  bool cuda_graphs = false;          // bench --cuda-graphs: also time torchfuse with CompileOptions::cuda_graphs
  bool phases = false;               // bench --phases: torchfuse's host time per call by phase (runtime::HotPathClock)
  std::optional<double> rtol, atol;  // verify: both or neither
  bool groups = false;               // verify --groups: also compare_groups' table
  std::string out_dir;               // dump --out
};

// argv without the program name. Throws UsageError.
CliOptions parse_args(const std::vector<std::string>& args);

std::string usage();                  // the tool's
std::string usage(Command command);   // a subcommand's

}  // namespace torchfuse_cli
