// What every `torchfuse` subcommand does first: resolve the device, load the model, check the
// inputs against its forward signature and draw them; plus small output helpers.
#pragma once

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>
#include <torch/script.h>

#include "tools/cli_args.h"

namespace torchfuse_cli {

// The error's message on one line: c10::Error without its C++ backtrace, lines joined with "; ".
std::string one_line(const std::exception& e);

// "cuda" or "cpu": the one asked for, else cuda when LibTorch sees a GPU. Throws UsageError when
// cuda is asked for and LibTorch cannot use it (no CUDA in this build, or no GPU visible).
std::string resolve_device(const CliOptions& o);

// --arch, else the compute capability of GPU 0 when torchfuse can drive it, else sm_90.
std::string resolve_arch(const CliOptions& o, const std::string& device);

// Is MODEL a program saved by torch.export.save (a .pt2 archive)? The subcommands dispatch on the
// extension: .pt2 goes through torchfuse::compile_exported, anything else is TorchScript.
bool is_exported(const std::string& model);

// A .pt2 program's graph as compile_exported builds it (weights on `device`, prepared), for the
// TorchScript baseline of bench and dump's graph_before.txt. Throws UsageError for a missing file
// or what compile_exported refuses (its message), and for --dtype (a program keeps its dtypes).
std::shared_ptr<torch::jit::Graph> load_exported_graph(const CliOptions& o, const std::string& device);

// A .pt2 program's user inputs as --input specs: the dtypes and sizes it was exported with (a
// dynamic dim's example size), for runs that give no --input. UsageError for an unreadable
// program or a non-tensor input.
std::vector<InputSpec> exported_example_inputs(const std::string& model);

// The inputs of a graph whose inputs are the call's own (a .pt2 program's), drawn as make_inputs
// draws them; the count must match (UsageError naming the inputs).
std::vector<c10::IValue> make_graph_inputs(const CliOptions& o, const torch::jit::Graph& g, const std::string& device);

// torch::jit::load, then --dtype, the device, --eval. Throws UsageError for a missing or
// unreadable file and for a model without forward.
torch::jit::Module load_model(const CliOptions& o, const std::string& device);

// The names of forward's inputs (without self), and how many have no default.
std::vector<std::string> forward_input_names(const torch::jit::Module& m, size_t* required);

// Checks the number of --input flags against forward's inputs (UsageError naming both), then
// draws the inputs with --seed on the CPU and moves them to `device`. Trailing inputs with a
// default in forward's signature may be left out: they take the default.
std::vector<c10::IValue> make_inputs(const CliOptions& o, const torch::jit::Module& m, const std::string& device);

// "f32[8, 64], i64[8]" for headers.
std::string describe_inputs(const CliOptions& o);

// mkdir -p; writes a file. Both throw UsageError naming the path.
void make_dirs(const std::string& path);
void write_file(const std::string& path, const std::string& text);

}  // namespace torchfuse_cli
