// Export front door, part 1: a .pt2 archive (torch.export.save) read into a neutral description.
//
// The archive is a zip read with LibTorch's own reader (caffe2::serialize::PyTorchStreamReader);
// its JSON (models/<name>.json: the ExportedProgram of torch/_export/serde/schema.py) is parsed
// with nlohmann/json; parameters, buffers and tensor constants come from data/weights/ and
// data/constants/ as their payload configs describe them (dtype, sizes, strides, storage
// offset; tensors that shared a storage share it again). Nothing here knows TorchScript:
// src/export_graph.cpp turns the description into a torch::jit::Graph.
//
// What cannot be read is a torchfuse::Error naming the archive and the reason: not a zip, not a
// PT2 archive (a TorchScript file), the layout of PyTorch <= 2.5 (serialized_exported_program.json
// at the zip's root), pickled weights, a newer archive or schema version than understood, a
// program with several models and none named "model".
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

namespace torchfuse {
namespace exported {

// The newest versions this reader understands: the PT2 archive spec's archive_version and the
// export schema's major version (torch/_export/serde/schema.py, SCHEMA_VERSION).
constexpr int kMaxArchiveVersion = 0;
constexpr int kMaxSchemaMajor = 8;

struct Subgraph;

// One element of an argument: a graph value by name, or a literal.
struct Item {
  enum Kind { Name, Int, Float, Bool, String, None, Device, ScalarType };
  Kind kind = None;
  std::string name;       // Name (a tensor, SymInt, SymFloat or SymBool value), String
  int64_t i = 0;          // Int; ScalarType (a c10::ScalarType)
  double f = 0;           // Float
  bool b = false;         // Bool
  c10::Device device{c10::kCPU};  // Device
};

// A serialized Argument: its union tag ("as_tensor", "as_ints", "as_sym_int", ...) and its
// elements. `list` says whether the op receives a list ("as_tensors", "as_sym_ints", ...).
// Kinds torchfuse cannot build (as_graph, as_custom_obj, as_operator, as_complex, ...) keep
// their tag with no items; the graph builder refuses them, naming the node.
struct Arg {
  std::string tag;
  bool list = false;
  // as_tensors / as_optional_tensors: the list holds tensors (None elements for the latter).
  bool tensor_list = false;
  bool optional_elements = false;
  bool supported = true;  // false for kinds without a TorchScript value (as_graph, as_custom_obj, ...)
  std::vector<Item> items;
  // as_graph (a higher-order op's body, e.g. wrap_with_set_grad_enabled's): the subgraph, which
  // the graph builder inlines where that is provably neutral (supported stays false: no op
  // takes it as a value).
  std::shared_ptr<const Subgraph> subgraph;
};

struct NamedArg {
  std::string name;     // the argument's name in the op's schema ("" for higher-order ops)
  Arg arg;
  bool keyword = false;  // passed by keyword (ArgumentKind KEYWORD, or no kind recorded)
};

struct Node {
  std::string name;    // the FX node's name, where the archive has it (else the first output's)
  std::string target;  // "torch.ops.aten.mul.Tensor", "_operator.mul", "torch.ops.higher_order.cond"
  std::vector<NamedArg> inputs;
  std::vector<Arg> outputs;
  std::string stack_trace;  // metadata.stack_trace (first line kept for messages)
};

// A higher-order op's body (schema.py's GraphArgument): its placeholders, nodes and outputs. Its
// value names are its own (a separate FX graph), not the enclosing graph's.
struct Subgraph {
  std::string name;          // the submodule's attribute name ("submod_1")
  std::vector<Arg> inputs;   // placeholders: as_tensor, as_sym_int, ...
  std::vector<Node> nodes;
  std::vector<Arg> outputs;  // one per returned value
};

// A dimension of a tensor's meta: a number, or a symbol's expression ("s0"; derived dims such as
// 2*s0 keep their expression with an empty symbol).
struct Dim {
  bool is_static = true;
  int64_t value = 0;    // is_static
  std::string symbol;   // a plain symbol ("s0"), else ""
  std::string expr;     // the serialized expression (sympy's srepr)
  int64_t hint = -1;    // the size at export time, where recorded
};

struct TensorMeta {
  c10::ScalarType dtype = c10::ScalarType::Float;
  std::vector<Dim> sizes;
  std::vector<Dim> strides;
  Dim storage_offset;
  c10::Device device{c10::kCPU};
};

// One input of the graph, as the signature describes it.
struct InputSpec {
  enum Kind { User, Parameter, Buffer, TensorConstant, ConstantInput, CustomObj, Token };
  Kind kind = User;
  std::string name;    // the graph value it defines (placeholder name; "" for a literal user input)
  std::string target;  // parameter/buffer/constant FQN ("lin.weight"), constant input's name
  Arg arg;             // the placeholder (user inputs: as_tensor, as_sym_int, or a literal)
  Arg constant;        // ConstantInput: the value
};

struct OutputSpec {
  enum Kind { User, Loss, BufferMutation, ParameterMutation, UserInputMutation, GradientToParameter,
              GradientToUserInput, Token };
  Kind kind = User;
  std::string target;  // the mutated buffer or parameter, where one is named
  Arg arg;
};

struct Range {
  std::optional<int64_t> min;
  std::optional<int64_t> max;
};

struct Program {
  std::string path;           // the archive, for messages
  std::string model_name;     // "model"
  int archive_version = 0;
  int schema_major = 0;
  int schema_minor = 0;
  std::string torch_version;  // the exporting PyTorch's, where recorded

  std::vector<Node> nodes;
  std::vector<Arg> graph_outputs;
  std::map<std::string, TensorMeta> tensor_values;
  std::vector<InputSpec> inputs;    // one per graph input, in order
  std::vector<OutputSpec> outputs;  // one per graph output, in order
  std::map<std::string, Range> ranges;  // range_constraints, by symbol
  // The program returns its user outputs as a tuple (or list), not as one value (the out_spec
  // of the root module call; a single tensor output that was returned in a tuple stays a tuple).
  bool tuple_output = false;
  // Parameters, buffers and tensor constants by FQN, on the CPU, as serialized.
  std::map<std::string, at::Tensor> tensors;
};

// Reads `path`. Throws torchfuse::Error.
Program read_program(const std::string& path);

// Export's ScalarType code (schema.py's numbering, not c10's) as a c10::ScalarType; throws Error
// for a dtype torchfuse does not take (float8, uint16, unknown codes), naming `where`.
c10::ScalarType scalar_type_from_export(int64_t code, const std::string& where);

}  // namespace exported
}  // namespace torchfuse
