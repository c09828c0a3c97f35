#include "tools/cli_args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace torchfuse_cli {
namespace {

struct DtypeName {
  const char* name;
  c10::ScalarType dtype;
};

constexpr DtypeName kDtypes[] = {
    {"f32", c10::ScalarType::Float},   {"f16", c10::ScalarType::Half},  {"bf16", c10::ScalarType::BFloat16},
    {"f64", c10::ScalarType::Double},  {"i32", c10::ScalarType::Int},   {"i64", c10::ScalarType::Long},
    {"i8", c10::ScalarType::Char},     {"u8", c10::ScalarType::Byte},   {"b8", c10::ScalarType::Bool},
};

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

bool parse_int(const std::string& text, long long* out) {
  const std::string t = trim(text);
  if (t.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  if (errno != 0 || end != t.c_str() + t.size()) return false;
  *out = v;
  return true;
}

bool parse_double(const std::string& text, double* out) {
  const std::string t = trim(text);
  if (t.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (errno != 0 || end != t.c_str() + t.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool is_floating(c10::ScalarType t) {
  return t == c10::ScalarType::Float || t == c10::ScalarType::Half || t == c10::ScalarType::BFloat16 ||
         t == c10::ScalarType::Double;
}

// [min, max + 1] of an integer dtype, as bounds of a half-open range.
void int_limits(c10::ScalarType t, double* lo, double* hi) {
  switch (t) {
    case c10::ScalarType::Char: *lo = -128; *hi = 128; return;
    case c10::ScalarType::Byte: *lo = 0; *hi = 256; return;
    case c10::ScalarType::Int: *lo = -2147483648.0; *hi = 2147483648.0; return;
    default: *lo = -9.2e18; *hi = 9.2e18; return;
  }
}

std::string dtype_list() {
  std::string s;
  for (const auto& d : kDtypes) s += std::string(s.empty() ? "" : " ") + d.name;
  return s;
}

int positive_int(const std::string& flag, const std::string& text, int min) {
  long long v = 0;
  if (!parse_int(text, &v) || v < min || v > 100000000) {
    throw UsageError(flag + " takes an integer >= " + std::to_string(min) + ", got '" + text + "'");
  }
  return static_cast<int>(v);
}

double non_negative_double(const std::string& flag, const std::string& text) {
  double v = 0;
  if (!parse_double(text, &v) || v < 0) throw UsageError(flag + " takes a number >= 0, got '" + text + "'");
  return v;
}

}  // namespace

std::optional<c10::ScalarType> dtype_from_name(const std::string& name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return d.dtype;
  }
  return std::nullopt;
}

std::string dtype_short_name(c10::ScalarType dtype) {
  for (const auto& d : kDtypes) {
    if (d.dtype == dtype) return d.name;
  }
  return c10::toString(dtype);
}

std::string describe_spec(const InputSpec& spec) {
  std::ostringstream s;
  s << dtype_short_name(spec.dtype) << "[";
  for (size_t i = 0; i < spec.sizes.size(); ++i) s << (i ? ", " : "") << spec.sizes[i];
  s << "]";
  if (spec.has_range) s << ":" << spec.lo << ".." << spec.hi;
  return s.str();
}

void default_int_range(c10::ScalarType dtype, double* lo, double* hi) {
  *lo = 0;
  *hi = dtype == c10::ScalarType::Bool ? 2 : 10;
}

InputSpec parse_input_spec(const std::string& given) {
  const std::string text = trim(given);
  auto fail = [&](const std::string& why) -> UsageError {
    return UsageError("--input '" + given + "': " + why);
  };
  if (text.empty()) throw fail("empty; expected DTYPE[SIZES], e.g. f32[8,64]");
  InputSpec spec;
  spec.text = given;
  const size_t open = text.find('[');
  if (open == std::string::npos) throw fail("missing '[': expected DTYPE[SIZES], e.g. f32[8,64]");
  const std::string dtype_name = trim(text.substr(0, open));
  const auto dtype = dtype_from_name(dtype_name);
  if (!dtype) {
    throw fail("unknown dtype '" + dtype_name + "' (one of " + dtype_list() + ")");
  }
  spec.dtype = *dtype;
  const size_t close = text.find(']', open);
  if (close == std::string::npos) throw fail("missing ']' after the sizes");
  const std::string sizes = trim(text.substr(open + 1, close - open - 1));
  if (!sizes.empty()) {
    std::stringstream ss(sizes);
    std::string item;
    size_t commas = 0;
    for (char c : sizes) commas += c == ',';
    while (std::getline(ss, item, ',')) {
      long long v = 0;
      if (!parse_int(item, &v)) throw fail("size '" + trim(item) + "' is not an integer");
      if (v < 0) throw fail("size " + std::to_string(v) + " is negative");
      spec.sizes.push_back(v);
    }
    if (spec.sizes.size() != commas + 1) throw fail("empty size between commas");
  }
  const std::string rest = trim(text.substr(close + 1));
  if (rest.empty()) {
    if (!is_floating(spec.dtype)) default_int_range(spec.dtype, &spec.lo, &spec.hi);
    return spec;
  }
  if (rest[0] != ':') throw fail("unexpected '" + rest + "' after ']' (a range is written :LO..HI)");
  const std::string range = trim(rest.substr(1));
  if (spec.dtype == c10::ScalarType::Bool) throw fail("b8 inputs take no range (they are 0 or 1)");
  const size_t dots = range.find("..");
  if (dots == std::string::npos) throw fail("range '" + range + "' is not LO..HI");
  const std::string lo = range.substr(0, dots), hi = range.substr(dots + 2);
  if (is_floating(spec.dtype)) {
    if (!parse_double(lo, &spec.lo)) throw fail("range bound '" + trim(lo) + "' is not a number");
    if (!parse_double(hi, &spec.hi)) throw fail("range bound '" + trim(hi) + "' is not a number");
  } else {
    long long l = 0, h = 0;
    if (!parse_int(lo, &l)) throw fail("range bound '" + trim(lo) + "' is not an integer");
    if (!parse_int(hi, &h)) throw fail("range bound '" + trim(hi) + "' is not an integer");
    spec.lo = static_cast<double>(l);
    spec.hi = static_cast<double>(h);
    double min = 0, max = 0;
    int_limits(spec.dtype, &min, &max);
    if (spec.lo < min || spec.hi > max) {
      throw fail("range " + trim(lo) + ".." + trim(hi) + " does not fit " + dtype_short_name(spec.dtype));
    }
  }
  if (!(spec.lo < spec.hi)) throw fail("empty range: LO must be below HI (HI is excluded)");
  spec.has_range = true;
  return spec;
}

const char* command_name(Command c) {
  switch (c) {
    case Command::Explain: return "explain";
    case Command::Verify: return "verify";
    case Command::Bench: return "bench";
    case Command::Dump: return "dump";
    default: return "";
  }
}

namespace {

Command command_from(const std::string& name) {
  for (Command c : {Command::Explain, Command::Verify, Command::Bench, Command::Dump}) {
    if (name == command_name(c)) return c;
  }
  return Command::None;
}

// Flags each subcommand takes besides the common ones (--input --seed --device --dtype --eval
// --no-eval --strict --json --help).
bool takes(Command c, const std::string& flag) {
  if (flag == "--arch" || flag == "--no-nvrtc") return c == Command::Explain || c == Command::Dump;
  if (flag == "--no-source") return c == Command::Explain;
  if (flag == "--warmup" || flag == "--iters" || flag == "--repeats" || flag == "--cuda-graphs" || flag == "--phases")
    return c == Command::Bench;
  if (flag == "--rtol" || flag == "--atol" || flag == "--groups") return c == Command::Verify;
  if (flag == "--out") return c == Command::Dump;
  return true;
}

const char* kCommonFlags = R"(  --input SPEC     one per forward input, in order: DTYPE[SIZES][:LO..HI]; trailing
                   inputs with a default in forward's signature may be left out
                   DTYPE: f32 f16 bf16 f64 i32 i64 i8 u8 b8; SIZES: 8,512 (f32[] is 0-dim)
                   floats: standard normal, or uniform in [LO, HI) with :LO..HI
                   integers: uniform in [LO, HI) (default 0..10); b8: 0 or 1
                   e.g. f32[8,512,1024]  bf16[8,1024]  i64[8,128]:0..50257  b8[8,128]
  --seed N         random seed for the inputs (default 0)
  --device D       cuda or cpu (default: cuda when available)
  --dtype DTYPE    convert the module's floating parameters and buffers first (e.g. bf16)
  --eval           module in eval mode (default); --no-eval leaves its flag (torchfuse
                   compiles in eval mode regardless; it changes the TorchScript baseline)
  --strict         CompileOptions::strict: every fusible op must run fused
  --json           machine-readable output on stdout
  -h, --help       this text
)";

}  // namespace

std::string usage() {
  return std::string(R"(usage: torchfuse COMMAND MODEL --input SPEC [--input SPEC ...] [options]

Runs torchfuse on a saved TorchScript model (torch.jit.save / torch::jit::Module::save), or on
a program saved by torch.export.save (MODEL ending in .pt2: torchfuse::compile_exported, its
weights put on the device; --input gives its user inputs in order, inside the exported ranges;
without --input, the dtypes and sizes it was exported with).

commands:
  explain   the fusion plan: groups, refusals with reasons, IR, rewritten graph, kernel sources
            (no GPU needed; NVRTC compiles for --arch)
  verify    runs compiled and eager on the same inputs and compares them (exit 1 on mismatch)
  bench     time per call: TorchScript, eager op by op, torchfuse; kernels per call
  dump      writes the graphs, the IR and one .cu file per kernel into --out DIR

`torchfuse COMMAND --help` lists the command's options. Common options:
)") + kCommonFlags + R"(
exit status: 0 success; 1 verify found a mismatch; 2 bad arguments, input or model, or an error.
)";
}

std::string usage(Command command) {
  std::string head, extra;
  switch (command) {
    case Command::Explain:
      head = "usage: torchfuse explain MODEL --input SPEC... [--arch sm_90] [--no-source] [--no-nvrtc]\n"
             "Prints the fusion plan for these inputs without running a kernel: each fusion group\n"
             "(kernel, ops, cubin size), every refused fusion with its reason, the IR before and after\n"
             "fusion, the rewritten TorchScript graph and the CUDA source of every kernel.\n";
      extra = "  --arch SM        architecture to plan and compile for (default: the GPU's, or sm_90)\n"
              "  --no-source      leave the kernel sources out\n"
              "  --no-nvrtc       plan only: skip compiling the kernels to cubins\n";
      break;
    case Command::Verify:
      head = "usage: torchfuse verify MODEL --input SPEC... [--rtol R --atol A] [--groups]\n"
             "Runs the compiled module and eager (op by op through ATen) on the same inputs and prints\n"
             "compare_with_eager's table. Exit status 1 when an output does not match.\n";
      extra = "  --rtol R --atol A  tolerance for every output (default: per dtype)\n"
              "  --groups         also check each fusion group against its own ATen ops on the same\n"
              "                   inputs (compare_groups; needs a GPU) and print the group table; a\n"
              "                   group that differs fails verify too\n";
      break;
    case Command::Bench:
      head = "usage: torchfuse bench MODEL --input SPEC... [--warmup 10] [--iters 50] [--repeats 5] [--cuda-graphs]\n"
             "                       [--phases]\n"
             "Times one call of the TorchScript module (module.forward), of eager op by op\n"
             "(forward_eager) and of torchfuse: `repeats` loops of `iters` calls after one first call\n"
             "(TorchScript profiles and torchfuse compiles there; torchfuse is also checked against eager)\n"
             "and `warmup` calls, "
             "timed with CUDA events; reports the median and the minimum per call, kernels per call\n"
             "(PyTorch profiler) and the speedup over TorchScript.\n";
      extra = "  --warmup N       untimed calls first (default 10)\n"
              "  --iters N        calls per timed loop (default 50)\n"
              "  --repeats N      timed loops; the median is over them (default 5)\n"
              "  --cuda-graphs    also time torchfuse with CUDA graphs (CompileOptions::cuda_graphs;\n"
              "                   outputs copied), checked against eager after its capture\n"
              "  --phases         also `iters` calls of torchfuse (and with graphs) with a clock at fixed points\n"
              "                   of its call path: the host time per call by phase (entry checks, the\n"
              "                   interpreter and ATen ops between fusion nodes, each node's inputs, plan,\n"
              "                   allocation, launch...; docs/architecture.md, \"The hot path\")\n";
      break;
    case Command::Dump:
      head = "usage: torchfuse dump MODEL --input SPEC... --out DIR [--arch sm_90] [--no-nvrtc]\n"
             "Writes into DIR: graph_before.txt (the TorchScript graph), ir_before.txt, ir_after.txt,\n"
             "rewritten_graph.txt, refused.txt, rewrites.txt, plan.txt and kernels/<name>.cu per kernel. On a GPU\n"
             "it also runs the module once and writes graph_for.txt and run_kernels/<name>.cu (the\n"
             "kernels built for the device).\n";
      extra = "  --out DIR        the directory (created if missing)\n"
              "  --arch SM        architecture to plan for (default: the GPU's, or sm_90)\n"
              "  --no-nvrtc       do not compile the kernels to cubins\n";
      break;
    default:
      return usage();
  }
  return head + "\noptions:\n" + extra + kCommonFlags;
}

CliOptions parse_args(const std::vector<std::string>& args) {
  CliOptions o;
  if (args.empty()) throw UsageError("no command given (explain, verify, bench or dump; see --help)");
  size_t i = 0;
  const std::string& first = args[0];
  if (first == "-h" || first == "--help" || first == "help") {
    o.help = true;
    if (args.size() > 1) {
      o.command = command_from(args[1]);
      if (o.command == Command::None) throw UsageError("unknown command '" + args[1] + "' (explain, verify, bench, dump)");
    }
    return o;
  }
  o.command = command_from(first);
  if (o.command == Command::None) {
    throw UsageError("unknown command '" + first + "' (explain, verify, bench, dump)");
  }
  for (i = 1; i < args.size(); ++i) {
    std::string arg = args[i];
    std::optional<std::string> inline_value;
    if (arg.rfind("--", 0) == 0) {
      const size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        inline_value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
      }
    }
    auto value = [&]() -> std::string {
      if (inline_value) return *inline_value;
      if (i + 1 >= args.size()) throw UsageError(arg + " needs a value");
      return args[++i];
    };
    auto no_value = [&] {
      if (inline_value) throw UsageError(arg + " takes no value");
    };
    if (arg.size() > 1 && arg[0] == '-' && !takes(o.command, arg)) {
      throw UsageError(arg + " is not an option of '" + command_name(o.command) + "' (see torchfuse " +
                       command_name(o.command) + " --help)");
    }
    if (arg == "-h" || arg == "--help") {
      no_value();
      o.help = true;
    } else if (arg == "--input") {
      o.inputs.push_back(parse_input_spec(value()));
    } else if (arg == "--seed") {
      const std::string v = value();
      long long s = 0;
      if (!parse_int(v, &s) || s < 0) throw UsageError("--seed takes an integer >= 0, got '" + v + "'");
      o.seed = static_cast<uint64_t>(s);
    } else if (arg == "--device") {
      o.device = value();
      if (o.device != "cuda" && o.device != "cpu") {
        throw UsageError("--device takes cuda or cpu, got '" + o.device + "'");
      }
    } else if (arg == "--dtype") {
      const std::string v = value();
      const auto t = dtype_from_name(v);
      if (!t || !is_floating(*t)) throw UsageError("--dtype takes f32, f16, bf16 or f64, got '" + v + "'");
      o.module_dtype = *t;
    } else if (arg == "--eval") {
      no_value();
      o.eval = true;
    } else if (arg == "--no-eval") {
      no_value();
      o.eval = false;
    } else if (arg == "--strict") {
      no_value();
      o.strict = true;
    } else if (arg == "--json") {
      no_value();
      o.json = true;
    } else if (arg == "--arch") {
      o.arch = value();
      long long major = 0;
      if (o.arch.rfind("sm_", 0) != 0 || o.arch.size() < 5 ||
          !parse_int(o.arch.substr(3, o.arch.back() == 'a' ? o.arch.size() - 4 : std::string::npos), &major)) {
        throw UsageError("--arch takes an architecture like sm_80 or sm_90, got '" + o.arch + "'");
      }
    } else if (arg == "--no-source") {
      no_value();
      o.kernel_sources = false;
    } else if (arg == "--no-nvrtc") {
      no_value();
      o.nvrtc = false;
    } else if (arg == "--warmup") {
      o.warmup = positive_int(arg, value(), 0);
    } else if (arg == "--iters") {
      o.iters = positive_int(arg, value(), 1);
    } else if (arg == "--repeats") {
      o.repeats = positive_int(arg, value(), 1);
    } else if (arg == "--cuda-graphs") {
      no_value();
      o.cuda_graphs = true;
    } else if (arg == "--phases") {
      no_value();
      o.phases = true;
    } else if (arg == "--rtol") {
      o.rtol = non_negative_double(arg, value());
    } else if (arg == "--atol") {
      o.atol = non_negative_double(arg, value());
    } else if (arg == "--groups") {
      no_value();
      o.groups = true;
    } else if (arg == "--out") {
      o.out_dir = value();
      if (o.out_dir.empty()) throw UsageError("--out needs a directory");
    } else if (arg.size() > 1 && arg[0] == '-') {
      throw UsageError("unknown option '" + arg + "' (see torchfuse " + command_name(o.command) + " --help)");
    } else if (o.model.empty()) {
      o.model = arg;
    } else {
      throw UsageError("unexpected argument '" + arg + "' (the model is '" + o.model + "')");
    }
  }
  if (o.help) return o;
  if (o.model.empty()) throw UsageError(std::string("no MODEL given (torchfuse ") + command_name(o.command) + " MODEL --input SPEC...)");
  if (o.rtol.has_value() != o.atol.has_value()) throw UsageError("--rtol and --atol go together");
  if (o.command == Command::Dump && o.out_dir.empty()) throw UsageError("dump needs --out DIR");
  return o;
}

}  // namespace torchfuse_cli
