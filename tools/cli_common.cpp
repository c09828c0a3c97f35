#include "tools/cli_common.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <sys/stat.h>
#include <sys/types.h>

#include <c10/util/Exception.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <torchfuse/torchfuse.h>

#include "runtime/driver_api.h"
#include "src/export_graph.h"
#include "src/export_reader.h"
#include "src/prepare_graph.h"

namespace torchfuse_cli {

std::string one_line(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  const std::string text = c10_error ? c10_error->what_without_backtrace() : e.what();
  std::string out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    const size_t e2 = line.find_last_not_of(" \t\r");
    out += (out.empty() ? "" : "; ") + line.substr(b, e2 - b + 1);
  }
  if (out.size() > 2000) out = out.substr(0, 2000) + "...";
  return out.empty() ? "unknown error" : out;
}

std::string resolve_device(const CliOptions& o) {
  const bool cuda = torch::cuda::is_available();
  if (o.device.empty()) return cuda ? "cuda" : "cpu";
  if (o.device == "cuda" && !cuda) {
    throw UsageError("--device cuda: LibTorch sees no CUDA device (this LibTorch has no CUDA support, or no GPU "
                     "is visible); use --device cpu");
  }
  return o.device;
}

std::string resolve_arch(const CliOptions& o, const std::string& device) {
  if (!o.arch.empty()) return o.arch;
  if (device == "cuda" && torchfuse::cuda_available()) {
    try {
      return torchfuse::runtime::device_info(0).arch();
    } catch (const std::exception&) {
      // fall through to the default
    }
  }
  return "sm_90";
}

torch::jit::Module load_model(const CliOptions& o, const std::string& device) {
  struct stat st {};
  if (::stat(o.model.c_str(), &st) != 0) {
    throw UsageError("model file '" + o.model + "': " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) throw UsageError("model file '" + o.model + "' is a directory");
  torch::jit::Module m;
  try {
    m = torch::jit::load(o.model);
  } catch (const std::exception& e) {
    throw UsageError("cannot load '" + o.model + "' as a TorchScript model: " + one_line(e));
  }
  if (!m.find_method("forward")) throw UsageError("the model '" + o.model + "' has no forward method");
  // Only floating parameters and buffers change dtype (integer buffers such as position ids stay).
  auto convert = [&](at::Tensor t) {
    const bool to_dtype = o.module_dtype && t.is_floating_point();
    if (to_dtype || t.device() != torch::Device(device)) {
      t.set_data(t.to(torch::Device(device), to_dtype ? *o.module_dtype : t.scalar_type()));
    }
  };
  for (const at::Tensor& p : m.parameters()) convert(p);
  for (const at::Tensor& b : m.buffers()) convert(b);
  if (o.eval) m.eval();
  return m;
}

std::vector<std::string> forward_input_names(const torch::jit::Module& m, size_t* required) {
  const auto& args = m.get_method("forward").function().getSchema().arguments();
  std::vector<std::string> names;
  *required = 0;
  for (size_t i = 1; i < args.size(); ++i) {  // 0 is self
    names.push_back(args[i].name());
    if (!args[i].default_value()) ++*required;
  }
  return names;
}

// The --input specs drawn with --seed on the CPU and moved to `device`.
std::vector<c10::IValue> draw_inputs(const CliOptions& o, const std::string& device);

std::vector<c10::IValue> make_inputs(const CliOptions& o, const torch::jit::Module& m, const std::string& device) {
  size_t required = 0;
  const std::vector<std::string> names = forward_input_names(m, &required);
  if (o.inputs.size() < required || o.inputs.size() > names.size()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    std::string count = std::to_string(names.size());
    if (required != names.size()) count = std::to_string(required) + " to " + count;
    throw UsageError("the model's forward takes " + count + " input" + (names.size() == 1 ? "" : "s") + " (" +
                     list + "), got " + std::to_string(o.inputs.size()) + " --input flag" +
                     (o.inputs.size() == 1 ? "" : "s"));
  }
  std::vector<c10::IValue> inputs = draw_inputs(o, device);
  // Inputs left out take forward's defaults (torchfuse's forward wants every input).
  const auto& args = m.get_method("forward").function().getSchema().arguments();
  for (size_t i = inputs.size() + 1; i < args.size(); ++i) inputs.push_back(*args[i].default_value());
  return inputs;
}

bool is_exported(const std::string& model) {
  return model.size() > 4 && model.compare(model.size() - 4, 4, ".pt2") == 0;
}

std::shared_ptr<torch::jit::Graph> load_exported_graph(const CliOptions& o, const std::string& device) {
  struct stat st {};
  if (::stat(o.model.c_str(), &st) != 0) throw UsageError("model file '" + o.model + "': " + std::strerror(errno));
  if (o.module_dtype) {
    throw UsageError("--dtype converts TorchScript modules; a .pt2 program keeps the dtypes it was exported with");
  }
  try {
    const auto program = torchfuse::exported::read_program(o.model);
    auto graph = torchfuse::exported::build_graph(program, torch::Device(device));
    torchfuse::prepare_graph(graph);
    return graph;
  } catch (const std::exception& e) {
    throw UsageError("cannot compile '" + o.model + "' as an exported program: " + one_line(e));
  }
}

std::vector<InputSpec> exported_example_inputs(const std::string& model) {
  torchfuse::exported::Program program;
  try {
    program = torchfuse::exported::read_program(model);
  } catch (const std::exception& e) {
    throw UsageError("cannot read '" + model + "' as an exported program: " + one_line(e));
  }
  std::vector<InputSpec> specs;
  for (const auto& in : program.inputs) {
    if (in.kind != torchfuse::exported::InputSpec::User) continue;
    auto meta = program.tensor_values.find(in.name);
    if (meta == program.tensor_values.end()) {
      throw UsageError("input '" + in.name + "' of the program is not a tensor: give every input with --input");
    }
    std::string text = dtype_short_name(meta->second.dtype) + "[";
    for (size_t d = 0; d < meta->second.sizes.size(); ++d) {
      const auto& dim = meta->second.sizes[d];
      text += (d ? "," : "") + std::to_string(dim.is_static ? dim.value : dim.hint > 0 ? dim.hint : 2);
    }
    specs.push_back(parse_input_spec(text + "]"));
  }
  return specs;
}

std::vector<c10::IValue> make_graph_inputs(const CliOptions& o, const torch::jit::Graph& g, const std::string& device) {
  if (o.inputs.size() != g.inputs().size()) {
    std::string list;
    for (const torch::jit::Value* v : g.inputs()) list += (list.empty() ? "" : ", ") + v->debugName();
    throw UsageError("the program takes " + std::to_string(g.inputs().size()) + " input" +
                     (g.inputs().size() == 1 ? "" : "s") + " (" + list + "), got " + std::to_string(o.inputs.size()) +
                     " --input flag" + (o.inputs.size() == 1 ? "" : "s"));
  }
  return draw_inputs(o, device);
}

std::vector<c10::IValue> draw_inputs(const CliOptions& o, const std::string& device) {
  torch::manual_seed(o.seed);
  std::vector<c10::IValue> inputs;
  for (const InputSpec& spec : o.inputs) {
    at::Tensor t;
    if (c10::isFloatingType(spec.dtype)) {
      t = spec.has_range ? torch::rand(spec.sizes, torch::kFloat) * (spec.hi - spec.lo) + spec.lo
                         : torch::randn(spec.sizes, torch::kFloat);
    } else {
      t = torch::randint(static_cast<int64_t>(spec.lo), static_cast<int64_t>(spec.hi), spec.sizes, torch::kLong);
    }
    inputs.emplace_back(t.to(spec.dtype).to(torch::Device(device)).contiguous());
  }
  return inputs;
}

std::string describe_inputs(const CliOptions& o) {
  std::string s;
  for (const auto& spec : o.inputs) s += (s.empty() ? "" : ", ") + describe_spec(spec);
  return s.empty() ? "(none)" : s;
}

void make_dirs(const std::string& path) {
  std::string partial;
  std::stringstream parts(path);
  std::string part;
  if (!path.empty() && path[0] == '/') partial = "/";
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    partial += part;
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      throw UsageError("cannot create directory '" + partial + "': " + std::strerror(errno));
    }
    struct stat st {};
    if (::stat(partial.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      throw UsageError("'" + partial + "' exists and is not a directory");
    }
    partial += "/";
  }
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw UsageError("cannot write '" + path + "': " + std::strerror(errno));
  f << text;
  if (!text.empty() && text.back() != '\n') f << '\n';
  f.close();
  if (!f) throw UsageError("cannot write '" + path + "'");
}

}  // namespace torchfuse_cli
