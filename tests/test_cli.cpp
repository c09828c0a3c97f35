// The `torchfuse` command-line tool: input-spec and argument parsing (tools/cli_args.h), and the
// binary itself run end to end on a saved module (explain, dump, bad arguments). CPU only.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <torch/cuda.h>
#include <torch/script.h>

#include "tests/fs_util.h"
#include "tools/cli_args.h"
#include "tools/json_writer.h"

namespace {

using torchfuse_cli::CliOptions;
using torchfuse_cli::Command;
using torchfuse_cli::InputSpec;
using torchfuse_cli::parse_args;
using torchfuse_cli::parse_input_spec;
using torchfuse_cli::UsageError;

// The message parse_input_spec throws for `text`, or "" when it parses.
std::string spec_error(const std::string& text) {
  try {
    parse_input_spec(text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

std::string args_error(const std::vector<std::string>& args) {
  try {
    parse_args(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_HAS(text, needle) EXPECT_NE(std::string(text).find(needle), std::string::npos) << (text)

TEST(CliInputSpec, ParsesDtypesSizesAndRanges) {
  InputSpec s = parse_input_spec("f32[8,512,1024]");
  EXPECT_EQ(s.dtype, c10::ScalarType::Float);
  EXPECT_EQ(s.sizes, (std::vector<int64_t>{8, 512, 1024}));
  EXPECT_FALSE(s.has_range);

  s = parse_input_spec("bf16[8, 1024]");
  EXPECT_EQ(s.dtype, c10::ScalarType::BFloat16);
  EXPECT_EQ(s.sizes, (std::vector<int64_t>{8, 1024}));

  s = parse_input_spec("i64[8,128]:0..50257");
  EXPECT_EQ(s.dtype, c10::ScalarType::Long);
  EXPECT_TRUE(s.has_range);
  EXPECT_EQ(s.lo, 0);
  EXPECT_EQ(s.hi, 50257);

  s = parse_input_spec("f32[4,8]:-1..1");
  EXPECT_TRUE(s.has_range);
  EXPECT_EQ(s.lo, -1);
  EXPECT_EQ(s.hi, 1);

  s = parse_input_spec("f16[2]:-0.5..2.5");
  EXPECT_EQ(s.dtype, c10::ScalarType::Half);
  EXPECT_EQ(s.lo, -0.5);
  EXPECT_EQ(s.hi, 2.5);

  s = parse_input_spec("b8[8,128]");
  EXPECT_EQ(s.dtype, c10::ScalarType::Bool);
  EXPECT_EQ(s.hi, 2);  // 0 or 1

  s = parse_input_spec("f64[]");  // 0-dim
  EXPECT_EQ(s.dtype, c10::ScalarType::Double);
  EXPECT_TRUE(s.sizes.empty());

  EXPECT_EQ(parse_input_spec("i32[3]").dtype, c10::ScalarType::Int);
  EXPECT_EQ(parse_input_spec("i8[3]:-128..128").dtype, c10::ScalarType::Char);
  EXPECT_EQ(parse_input_spec("u8[3]:0..256").dtype, c10::ScalarType::Byte);
  EXPECT_EQ(parse_input_spec("f32[0,4]").sizes, (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(torchfuse_cli::describe_spec(parse_input_spec("i64[8,128]:0..50257")), "i64[8, 128]:0..50257");
}

TEST(CliInputSpec, MalformedSpecsNameTheProblem) {
  EXPECT_HAS(spec_error(""), "empty");
  EXPECT_HAS(spec_error("f32"), "missing '['");
  EXPECT_HAS(spec_error("float[4]"), "unknown dtype 'float' (one of f32 f16 bf16 f64 i32 i64 i8 u8 b8)");
  EXPECT_HAS(spec_error("f32[4,8"), "missing ']'");
  EXPECT_HAS(spec_error("f32[4,x]"), "size 'x' is not an integer");
  EXPECT_HAS(spec_error("f32[4,-2]"), "size -2 is negative");
  EXPECT_HAS(spec_error("f32[4,,2]"), "size '' is not an integer");
  EXPECT_HAS(spec_error("f32[4,]"), "empty size between commas");
  EXPECT_HAS(spec_error("f32[4]x"), "unexpected 'x' after ']'");
  EXPECT_HAS(spec_error("f32[4]:1"), "range '1' is not LO..HI");
  EXPECT_HAS(spec_error("f32[4]:a..1"), "range bound 'a' is not a number");
  EXPECT_HAS(spec_error("f32[4]:1..1"), "empty range");
  EXPECT_HAS(spec_error("i64[4]:0.5..3"), "range bound '0.5' is not an integer");
  EXPECT_HAS(spec_error("i8[4]:0..300"), "does not fit i8");
  EXPECT_HAS(spec_error("u8[4]:-1..3"), "does not fit u8");
  EXPECT_HAS(spec_error("b8[4]:0..2"), "b8 inputs take no range");
  // Every message names the flag and the spec as given.
  EXPECT_HAS(spec_error("f32[4,x]"), "--input 'f32[4,x]': ");
}

TEST(CliArgs, ParsesEveryCommandsOptions) {
  CliOptions o = parse_args({"explain", "m.pt", "--input", "f32[8,64]", "--input=i64[8]:0..5", "--arch", "sm_80",
                             "--seed", "7", "--device", "cpu", "--dtype", "bf16", "--json", "--no-source"});
  EXPECT_EQ(o.command, Command::Explain);
  EXPECT_EQ(o.model, "m.pt");
  ASSERT_EQ(o.inputs.size(), 2u);
  EXPECT_EQ(o.inputs[1].dtype, c10::ScalarType::Long);
  EXPECT_EQ(o.arch, "sm_80");
  EXPECT_EQ(o.seed, 7u);
  EXPECT_EQ(o.device, "cpu");
  EXPECT_EQ(o.module_dtype, c10::ScalarType::BFloat16);
  EXPECT_TRUE(o.json);
  EXPECT_FALSE(o.kernel_sources);

  o = parse_args({"bench", "m.pt", "--input", "f32[4]", "--warmup", "0", "--iters", "20", "--repeats", "3"});
  EXPECT_EQ(o.command, Command::Bench);
  EXPECT_EQ(o.warmup, 0);
  EXPECT_EQ(o.iters, 20);
  EXPECT_EQ(o.repeats, 3);
  EXPECT_TRUE(o.eval);
  EXPECT_FALSE(o.phases);
  EXPECT_TRUE(parse_args({"bench", "m.pt", "--phases"}).phases);
  EXPECT_FALSE(parse_args({"verify", "m.pt", "--no-eval"}).eval);
  o = parse_args({"verify", "m.pt", "--rtol", "1e-3", "--atol", "1e-4"});
  EXPECT_EQ(*o.rtol, 1e-3);
  EXPECT_EQ(parse_args({"dump", "m.pt", "--out", "d"}).out_dir, "d");
  EXPECT_TRUE(parse_args({"verify", "m.pt", "--groups"}).groups);
  EXPECT_FALSE(parse_args({"verify", "m.pt"}).groups);
  EXPECT_TRUE(parse_args({"--help"}).help);
  EXPECT_EQ(parse_args({"bench", "--help"}).command, Command::Bench);
  EXPECT_TRUE(parse_args({"bench", "--help"}).help);
  EXPECT_HAS(torchfuse_cli::usage(Command::Bench), "--repeats");
  EXPECT_HAS(torchfuse_cli::usage(), "explain");
}

TEST(CliArgs, BadArgumentsNameTheProblem) {
  EXPECT_HAS(args_error({}), "no command given");
  EXPECT_HAS(args_error({"compile", "m.pt"}), "unknown command 'compile'");
  EXPECT_HAS(args_error({"explain", "m.pt", "--frobnicate"}), "unknown option '--frobnicate'");
  EXPECT_HAS(args_error({"explain", "m.pt", "--iters", "3"}), "--iters is not an option of 'explain'");
  EXPECT_HAS(args_error({"verify", "m.pt", "--out", "d"}), "--out is not an option of 'verify'");
  EXPECT_HAS(args_error({"explain", "m.pt", "--groups"}), "--groups is not an option of 'explain'");
  EXPECT_HAS(args_error({"verify", "m.pt", "--groups=1"}), "--groups takes no value");
  EXPECT_HAS(args_error({"verify", "m.pt", "--phases"}), "--phases is not an option of 'verify'");
  EXPECT_HAS(args_error({"explain", "m.pt", "--input"}), "--input needs a value");
  EXPECT_HAS(args_error({"explain", "m.pt", "--input", "f32[4"}), "missing ']'");
  EXPECT_HAS(args_error({"explain", "--input", "f32[4]"}), "no MODEL given");
  EXPECT_HAS(args_error({"explain", "a.pt", "b.pt"}), "unexpected argument 'b.pt'");
  EXPECT_HAS(args_error({"explain", "m.pt", "--device", "tpu"}), "--device takes cuda or cpu");
  EXPECT_HAS(args_error({"explain", "m.pt", "--dtype", "i64"}), "--dtype takes f32, f16, bf16 or f64");
  EXPECT_HAS(args_error({"explain", "m.pt", "--arch", "90"}), "--arch takes an architecture like sm_80");
  EXPECT_HAS(args_error({"explain", "m.pt", "--seed", "x"}), "--seed takes an integer");
  EXPECT_HAS(args_error({"bench", "m.pt", "--iters", "0"}), "--iters takes an integer >= 1");
  EXPECT_HAS(args_error({"verify", "m.pt", "--rtol", "1e-3"}), "--rtol and --atol go together");
  EXPECT_HAS(args_error({"dump", "m.pt"}), "dump needs --out DIR");
  EXPECT_HAS(args_error({"explain", "m.pt", "--json=yes"}), "--json takes no value");
}

TEST(CliJson, EscapesStringsAndNestsValues) {
  EXPECT_EQ(torchfuse_cli::json_escape("a\"b\\c\nd\te\x01"), "\"a\\\"b\\\\c\\nd\\te\\u0001\"");
  torchfuse_cli::JsonWriter j;
  j.begin_object().field("n", 3).field("x", 0.5).array("v", std::vector<std::string>{"p", "q"});
  j.key("o").begin_object().field("b", true).end_object();
  j.key("nan").value(std::nan("")).end_object();
  EXPECT_EQ(j.str(), R"({"n":3,"x":0.5,"v":["p","q"],"o":{"b":true},"nan":null})");
}

// ---- the binary ----

struct RunResult {
  int status = -1;
  std::string output;  // stdout and stderr together
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

RunResult run_cli(const std::vector<std::string>& args) {
  std::string cmd = quote(TORCHFUSE_CLI_PATH);
  for (const auto& a : args) cmd += " " + quote(a);
  cmd += " 2>&1";
  RunResult r;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// A saved module: relu(x * 2) + 1, one fusion group.
std::string save_module(const tftest::TempDir& dir) {
  torch::jit::Module m("M");
  m.define(R"(
def forward(self, x):
    return torch.relu(x * 2.0) + 1.0
)");
  const std::string path = dir.path() + "/m.pt";
  m.save(path);
  return path;
}

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::vector<std::string> files_with_suffix(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out.push_back(name);
    }
  }
  ::closedir(d);
  return out;
}

TEST(CliBinary, ExplainPrintsGroupsAndKernelSource) {
  tftest::TempDir dir;
  const std::string model = save_module(dir);
  const RunResult r = run_cli({"explain", model, "--arch", "sm_90", "--device", "cpu", "--input", "f32[8,64]"});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_HAS(r.output, "fusion groups: 1");
  EXPECT_HAS(r.output, "tf_mul_relu_add_");  // relu(x * 2.0) + 1.0: the kernel says what it computes
  EXPECT_HAS(r.output, "cubin");
  EXPECT_HAS(r.output, "refused fusions:");
  EXPECT_HAS(r.output, "rewritten TorchScript graph");
  EXPECT_HAS(r.output, "__global__");
  EXPECT_HAS(r.output, "arch:   sm_90");
}

TEST(CliBinary, ExplainJson) {
  tftest::TempDir dir;
  const std::string model = save_module(dir);
  const RunResult r =
      run_cli({"explain", model, "--device", "cpu", "--no-nvrtc", "--input", "f32[8,64]", "--json"});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.rfind("{\"command\":\"explain\"", 0), 0u) << r.output;
  EXPECT_HAS(r.output, "\"groups\":[{\"kernel\":\"tf_mul_relu_add_");
  EXPECT_HAS(r.output, "__global__");
  EXPECT_HAS(r.output, "\\n");  // sources escaped
}

TEST(CliBinary, DumpWritesGraphsIrAndKernels) {
  tftest::TempDir dir;
  const std::string model = save_module(dir);
  const std::string out = dir.path() + "/dump/sub";
  const RunResult r = run_cli({"dump", model, "--device", "cpu", "--input", "f32[8,64]", "--out", out});
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* f : {"graph_before.txt", "ir_before.txt", "ir_after.txt", "rewritten_graph.txt", "plan.txt"}) {
    EXPECT_TRUE(is_file(out + "/" + f)) << f << "\n" << r.output;
  }
  const auto cu = files_with_suffix(out + "/kernels", ".cu");
  ASSERT_EQ(cu.size(), 1u) << r.output;
  // tf_<pattern>_<8 hex digits>.cu
  EXPECT_EQ(cu[0].rfind("tf_mul_relu_add_", 0), 0u) << cu[0];
  EXPECT_EQ(cu[0].size(), std::string("tf_mul_relu_add_").size() + 8 + 3) << cu[0];
}

TEST(CliBinary, BadArgumentsExitTwoWithOneLine) {
  tftest::TempDir dir;
  const std::string model = save_module(dir);
  auto expect_error = [](const RunResult& r, const std::string& needle) {
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_EQ(r.output.rfind("torchfuse: error: ", 0), 0u) << r.output;
    EXPECT_HAS(r.output, needle);
    EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "one line: " << r.output;
  };
  expect_error(run_cli({"explain", model, "--input", "f32[8,x]"}), "size 'x' is not an integer");
  expect_error(run_cli({"explain", model, "--input", "f32[8]", "--bogus"}), "unknown option '--bogus'");
  expect_error(run_cli({"explain", model, "--device", "cpu"}),
               "the model's forward takes 1 input (x), got 0 --input flags");
  expect_error(run_cli({"explain", model, "--device", "cpu", "--input", "f32[4]", "--input", "f32[4]"}),
               "got 2 --input flags");
  expect_error(run_cli({"explain", dir.path() + "/missing.pt", "--device", "cpu", "--input", "f32[4]"}),
               "missing.pt': No such file or directory");
  const std::string junk = dir.path() + "/junk.pt";
  {
    FILE* f = std::fopen(junk.c_str(), "w");
    std::fputs("not a model", f);
    std::fclose(f);
  }
  expect_error(run_cli({"explain", junk, "--device", "cpu", "--input", "f32[4]"}), "cannot load");
  // With --json the error is also a JSON object on stdout.
  const RunResult j = run_cli({"explain", model, "--json", "--input", "f32[8,x]"});
  EXPECT_EQ(j.status, 2);
  EXPECT_HAS(j.output, R"({"command":"","ok":false,"error":"--input 'f32[8,x]': size 'x' is not an integer"})");
  const RunResult help = run_cli({"verify", "--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_HAS(help.output, "usage: torchfuse verify");
}

// A .pt2 program (torch.export.save; tests/data/pt2/) in every subcommand: dispatched on the
// extension to compile_exported, its inputs checked against the program's, its ranges kept.
TEST(CliBinary, ExportedProgramsExplainVerifyDumpAndBench) {
  const std::string model = std::string(TORCHFUSE_PT2_DIR) + "/softmax_dynamic_batch.pt2";
  const std::vector<std::string> inputs = {"--input", "f32[8,4,32]", "--input", "f32[8,1,32]"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), inputs.begin(), inputs.end());
    return args;
  };
  RunResult r = run_cli(with({"explain", model, "--device", "cpu", "--no-nvrtc"}));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_HAS(r.output, "fusion groups: 1");
  EXPECT_HAS(r.output, "tf_softmax_");
  r = run_cli(with({"verify", model, "--device", "cpu"}));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_HAS(r.output, "PASS");
  tftest::TempDir dir;
  r = run_cli(with({"dump", model, "--device", "cpu", "--no-nvrtc", "--out", dir.path() + "/d"}));
  ASSERT_EQ(r.status, 0) << r.output;
  std::ifstream before(dir.path() + "/d/graph_before.txt");
  const std::string graph((std::istreambuf_iterator<char>(before)), std::istreambuf_iterator<char>());
  EXPECT_HAS(graph, "aten::softmax");
  r = run_cli(with({"bench", model, "--device", "cpu", "--warmup", "1", "--iters", "2", "--repeats", "1"}));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_HAS(r.output, "torchscript");
  // --phases on the CPU: the calls run eager, so no point of the fused path is timed, and it says so.
  r = run_cli(with({"bench", model, "--device", "cpu", "--warmup", "1", "--iters", "2", "--repeats", "1", "--phases"}));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_HAS(r.output, "torchfuse per call by phase, us");
  EXPECT_HAS(r.output, "none timed (its calls ran eager)");

  // Without --input: the shapes it was exported with.
  r = run_cli({"explain", model, "--device", "cpu", "--no-nvrtc"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_HAS(r.output, "inputs: f32[8, 4, 32], f32[8, 1, 32]");

  auto expect_error = [](const RunResult& res, const std::string& needle) {
    EXPECT_EQ(res.status, 2) << res.output;
    EXPECT_EQ(res.output.rfind("torchfuse: error: ", 0), 0u) << res.output;
    EXPECT_HAS(res.output, needle);
  };
  expect_error(run_cli({"explain", model, "--device", "cpu", "--input", "f32[8,4,32]"}),
               "the program takes 2 inputs (x, mask), got 1 --input flag");
  expect_error(run_cli({"verify", model, "--device", "cpu", "--input", "f32[65,4,32]", "--input", "f32[65,1,32]"}),
               "dim 0 is 65, outside the range [1, 64]");
  expect_error(run_cli(with({"explain", model, "--device", "cpu", "--dtype", "bf16"})), "--dtype converts TorchScript");
  expect_error(run_cli(with({"explain", std::string(TORCHFUSE_PT2_DIR) + "/old_layout_2_5.pt2", "--device", "cpu"})),
               "PyTorch 2.5");
}

// Without CUDA in LibTorch (the CPU-only build), asking for the GPU is an error, not a crash.
TEST(CliBinary, CudaWithoutCudaIsAnError) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "LibTorch sees a GPU";
  tftest::TempDir dir;
  const std::string model = save_module(dir);
  for (const char* command : {"bench", "verify"}) {
    const RunResult r = run_cli({command, model, "--device", "cuda", "--input", "f32[8,64]"});
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_HAS(r.output, "torchfuse: error: --device cuda: LibTorch sees no CUDA device");
  }
}

TEST(CliBinary, VerifyOnCpuPasses) {
  tftest::TempDir dir;
  const std::string model = save_module(dir);
  const RunResult r = run_cli({"verify", model, "--device", "cpu", "--input", "f32[8,64]"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_HAS(r.output, "PASS");
}

// verify --groups on the CPU: the call runs eager, so no group is checked, and the table says why
// (in the text and in the JSON); verify itself still passes.
TEST(CliBinary, VerifyGroupsOnCpuSaysNothingRanFused) {
  tftest::TempDir dir;
  const std::string model = save_module(dir);
  const RunResult r = run_cli({"verify", model, "--device", "cpu", "--input", "f32[8,64]", "--groups"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_HAS(r.output, "each against its own ATen ops (compare_groups)");
  EXPECT_HAS(r.output, "no fusion group ran: forward ran eager: no input is a CUDA tensor");
  const RunResult j = run_cli({"verify", model, "--device", "cpu", "--input", "f32[8,64]", "--groups", "--json"});
  EXPECT_EQ(j.status, 0) << j.output;
  EXPECT_HAS(j.output, "\"groups\":{\"passed\":true,\"checked\":false,\"note\":\"no fusion group ran: forward ran eager");
}

// verify on a model taking token ids judges against the float64 reference (its parameters are
// floating); where the graph cannot run in float64 (quantize_per_tensor takes float32 only), the
// report says why, in the table's text and in the JSON.
TEST(CliBinary, VerifyReportsTheFloat64Reference) {
  tftest::TempDir dir;
  torch::jit::Module ids("Ids");
  ids.register_parameter("table", torch::randn({50, 16}), false);
  ids.define(R"(
def forward(self, x):
    return torch.relu(torch.embedding(self.table, x) * 2.0) + 1.0
)");
  const std::string ids_path = dir.path() + "/ids.pt";
  ids.save(ids_path);
  const RunResult r = run_cli({"verify", ids_path, "--device", "cpu", "--input", "i64[4,32]:0..50", "--json"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_HAS(r.output, "\"has_reference\":true");
  EXPECT_HAS(r.output, "\"reference_note\":\"\"");

  torch::jit::Module q("Quantized");
  q.define(R"(
def forward(self, x):
    return torch.quantize_per_tensor(x * 2.0, 0.1, 0, 13).dequantize() + 1.0
)");
  const std::string q_path = dir.path() + "/q.pt";
  q.save(q_path);
  const RunResult text = run_cli({"verify", q_path, "--device", "cpu", "--input", "f32[8,64]"});
  EXPECT_EQ(text.status, 0) << text.output;
  EXPECT_HAS(text.output, "no float64 reference: Quantize only works on Float Tensor, got Double");
  const RunResult json = run_cli({"verify", q_path, "--device", "cpu", "--input", "f32[8,64]", "--json"});
  EXPECT_EQ(json.status, 0) << json.output;
  EXPECT_HAS(json.output, "\"reference_note\":\"no float64 reference: Quantize only works");
}

// The GPU paths: verify compares on the GPU and passes; bench times the three variants and counts
// kernels (the module is one fused kernel; eager runs its three ops as three).
TEST(CliBinary, VerifyAndBenchOnTheGpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  tftest::TempDir dir;
  const std::string model = save_module(dir);
  const RunResult v = run_cli({"verify", model, "--device", "cuda", "--input", "f32[64,1000]", "--groups"});
  EXPECT_EQ(v.status, 0) << v.output;
  EXPECT_HAS(v.output, "PASS");
  EXPECT_HAS(v.output, "every group matches its ATen ops");  // --groups: the one group checked
  const RunResult b = run_cli({"bench", model, "--device", "cuda", "--input", "bf16[64,1000]", "--warmup", "2",
                               "--iters", "5", "--repeats", "2", "--json"});
  ASSERT_EQ(b.status, 0) << b.output;
  EXPECT_HAS(b.output, "\"matches_eager\":true");
  const size_t at = b.output.find("\"name\":\"torchfuse\"");
  ASSERT_NE(at, std::string::npos) << b.output;
  const std::string entry = b.output.substr(at, b.output.find('}', at) - at);
  EXPECT_HAS(entry, "\"kernels_per_call\":1,");  // one fused kernel
}

}  // namespace
