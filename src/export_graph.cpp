#include "src/export_graph.h"

#include <map>
#include <set>
#include <unordered_map>

#include <ATen/ATen.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/named_value.h>
#include <torch/csrc/jit/runtime/operator.h>
#include <torch/version.h>

#include "src/error.h"

namespace torchfuse {
namespace exported {

namespace {

using torch::jit::NamedValue;
using torch::jit::Value;

// Export's runtime checks: dropped (the input contract checks sizes and ranges before a call).
const std::set<std::string> kDroppedAten = {
    "_assert_scalar", "_assert_async", "_assert_tensor_metadata", "sym_constrain_range",
    "sym_constrain_range_for_size", "_functional_assert_async", "_functional_assert_scalar",
    "_functional_sym_constrain_range", "_functional_sym_constrain_range_for_size", "_print"};

// Python's operators on SymInts (export records them as "_operator.mul", "torch.sym_max", ...) and
// the TorchScript operators that compute them on ints.
const std::unordered_map<std::string, std::string> kSymbolicOps = {
    {"_operator.add", "aten::add"},        {"_operator.sub", "aten::sub"},
    {"_operator.mul", "aten::mul"},        {"_operator.floordiv", "aten::floordiv"},
    {"_operator.truediv", "aten::div"},    {"_operator.mod", "aten::remainder"},
    {"_operator.neg", "aten::neg"},        {"_operator.pow", "aten::pow"},
    {"_operator.eq", "aten::eq"},          {"_operator.ne", "aten::ne"},
    {"_operator.lt", "aten::lt"},          {"_operator.le", "aten::le"},
    {"_operator.gt", "aten::gt"},          {"_operator.ge", "aten::ge"},
    {"_operator.and_", "aten::__and__"},   {"_operator.or_", "aten::__or__"},
    {"torch.sym_max", "prim::max"},        {"torch.sym_min", "prim::min"},
    {"torch.sym_float", "aten::Float"},    {"torch.sym_int", "aten::Int"},
    {"torch.sym_not", "aten::__not__"},    {"math.trunc", "aten::Int"},
    {"torch.sym_sqrt", "aten::sqrt"},
};

// Higher-order ops that only set a mode around a subgraph. Their bodies are inlined where the mode
// cannot change a value: grad mode never does (it decides what autograd records, not what ops
// compute; torchfuse runs inference), autocast does unless the region disables it.
constexpr const char* kSetGradEnabled = "torch.ops.higher_order.wrap_with_set_grad_enabled";
constexpr const char* kAutocast = "torch.ops.higher_order.wrap_with_autocast";

// Names FX gives values are valid TorchScript debug names, but a graph may not take some (a
// name ending in a number after a dot): then the value keeps its numbered name.
void name_value(Value* v, const std::string& name) {
  try {
    v->setDebugName(name);
  } catch (const std::exception&) {
  }
}

class Builder {
 public:
  Builder(const Program& program, const std::optional<c10::Device>& device)
      : program_(program), device_(device), graph_(std::make_shared<torch::jit::Graph>()) {}

  std::shared_ptr<torch::jit::Graph> build() {
    for (size_t i = 0; i < program_.inputs.size(); ++i) add_input(program_.inputs[i], i);
    for (const Node& n : program_.nodes) add_node(n);
    add_outputs();
    return graph_;
  }

 private:
  std::string where(const Node& n) const { return "node '" + n.name + "' (" + n.target + ")"; }

  [[noreturn]] void refuse(const Node& n, const std::string& why) const {
    std::string at;
    if (!n.stack_trace.empty()) {
      // The innermost user frame is the trace's last "File ..." line.
      const size_t file = n.stack_trace.rfind("File \"");
      if (file != std::string::npos) at = "; at " + n.stack_trace.substr(file, n.stack_trace.find('\n', file) - file);
    }
    throw Error(detail::cat("torchfuse::compile_exported: '", program_.path, "': ", where(n), ": ", why, at));
  }

  void add_input(const InputSpec& spec, size_t index) {
    const std::string what = "input " + std::to_string(index) + " ('" + spec.name + "')";
    switch (spec.kind) {
      case InputSpec::User: {
        TORCHFUSE_CHECK(spec.arg.items.size() == 1 && spec.arg.items[0].kind == Item::Name,
                        "torchfuse::compile_exported: '", program_.path, "': user ", what,
                        " is a literal in the program (", spec.arg.tag, "); only tensor and SymInt inputs are supported");
        Value* v = graph_->addInput();
        name_value(v, spec.name);
        if (spec.arg.tag == "as_tensor") v->setType(c10::TensorType::get());
        else if (spec.arg.tag == "as_sym_int") v->setType(c10::IntType::get());
        else if (spec.arg.tag == "as_sym_float") v->setType(c10::FloatType::get());
        else if (spec.arg.tag == "as_sym_bool") v->setType(c10::BoolType::get());
        else
          throw Error(detail::cat("torchfuse::compile_exported: '", program_.path, "': user ", what, " is ", spec.arg.tag,
                                  "; only tensor and SymInt inputs are supported"));
        env_[spec.name] = v;
        return;
      }
      case InputSpec::Parameter:
      case InputSpec::Buffer:
      case InputSpec::TensorConstant: {
        auto it = program_.tensors.find(spec.target);
        const char* kind = spec.kind == InputSpec::Parameter ? "parameter"
                           : spec.kind == InputSpec::Buffer  ? "buffer"
                                                             : "tensor constant";
        TORCHFUSE_CHECK(it != program_.tensors.end(), "torchfuse::compile_exported: '", program_.path, "': ", kind, " '",
                        spec.target, "' is not in the archive's weights or constants");
        at::Tensor t = it->second.detach();
        if (device_) {
          try {
            t = on_device(t);
          } catch (const std::exception& e) {
            const std::string why = e.what();
            throw Error(detail::cat("torchfuse::compile_exported: cannot put ", kind, " '", spec.target, "' on ",
                                    *device_, ": ", why.substr(0, why.find('\n'))));
          }
        }
        Value* v = graph_->insertConstant(t);
        name_value(v, spec.name);
        env_[spec.name] = v;
        return;
      }
      case InputSpec::ConstantInput:
        env_[spec.name] = literal_value(spec.constant, nullptr);
        return;
      case InputSpec::CustomObj:
        throw Error(detail::cat("torchfuse::compile_exported: '", program_.path, "': ", what, " is a custom object ('",
                                spec.target, "'), which torchfuse does not take"));
      case InputSpec::Token:
        throw Error(detail::cat("torchfuse::compile_exported: '", program_.path, "': ", what,
                                " is an effect token (the program calls ops with side effects), which torchfuse "
                                "does not take"));
    }
  }

  // `t` on the device, its storage moved once: tensors that share a storage in the archive (tied
  // weights) share one on the device too.
  at::Tensor on_device(const at::Tensor& t) {
    const void* key = t.storage().data();
    if (key == nullptr) return t.to(*device_);  // no data (an empty tensor): nothing to share
    auto it = moved_.find(key);
    if (it == moved_.end()) {
      at::Tensor whole = at::empty({0}, t.options());
      whole.set_(t.storage());
      it = moved_.emplace(key, whole.to(*device_)).first;
    }
    return it->second.as_strided(t.sizes(), t.strides(), t.storage_offset());
  }

  Value* named(const std::string& name, const Node* n) {
    auto it = env_.find(name);
    if (it == env_.end()) {
      const std::string msg = "reads '" + name + "', which no earlier node or input defines";
      if (n) refuse(*n, msg);
      throw Error(detail::cat("torchfuse::compile_exported: '", program_.path, "': an output ", msg));
    }
    return it->second;
  }

  Value* item_value(const Item& item, const Node* n) {
    switch (item.kind) {
      case Item::Name: return named(item.name, n);
      case Item::Int: return graph_->insertConstant(item.i);
      case Item::Float: return graph_->insertConstant(item.f);
      case Item::Bool: return graph_->insertConstant(item.b);
      case Item::String: return graph_->insertConstant(item.name);
      case Item::None: return graph_->insertConstant(c10::IValue());
      case Item::ScalarType: return graph_->insertConstant(item.i);
      case Item::Device: return graph_->insertConstant(device_ ? *device_ : item.device);
    }
    return nullptr;
  }

  // A literal or a value of the graph, as the op receives it: lists of literals as list constants,
  // lists holding values through prim::ListConstruct.
  Value* literal_value(const Arg& arg, const Node* n) {
    if (!arg.list) {
      TORCHFUSE_INTERNAL_ASSERT(arg.items.size() == 1, "argument ", arg.tag, " has ", arg.items.size(), " items");
      return item_value(arg.items[0], n);
    }
    bool all_literal = !arg.tensor_list;
    for (const Item& item : arg.items) all_literal = all_literal && item.kind != Item::Name;
    if (all_literal && !arg.items.empty()) {
      const Item::Kind k = arg.items[0].kind;
      bool same = true;
      for (const Item& item : arg.items) same = same && item.kind == k;
      if (same && k == Item::Int) {
        std::vector<int64_t> v;
        for (const Item& item : arg.items) v.push_back(item.i);
        return graph_->insertConstant(v);
      }
      if (same && k == Item::Float) {
        std::vector<double> v;
        for (const Item& item : arg.items) v.push_back(item.f);
        return graph_->insertConstant(v);
      }
      if (same && k == Item::Bool) {
        c10::List<bool> v;
        for (const Item& item : arg.items) v.push_back(item.b);
        return graph_->insertConstant(v);
      }
    }
    // Empty lists and lists holding values.
    c10::TypePtr element;
    if (arg.tensor_list) {
      element = arg.optional_elements ? c10::TypePtr(c10::OptionalType::create(c10::TensorType::get()))
                                      : c10::TypePtr(c10::TensorType::get());
    } else if (arg.tag == "as_floats" || arg.tag == "as_sym_floats") {
      element = c10::FloatType::get();
    } else if (arg.tag == "as_bools" || arg.tag == "as_sym_bools") {
      element = c10::BoolType::get();
    } else if (arg.tag == "as_strings") {
      element = c10::StringType::get();
    } else {
      element = c10::IntType::get();
    }
    std::vector<Value*> values;
    for (const Item& item : arg.items) values.push_back(item_value(item, n));
    return graph_->insertNode(graph_->createList(element, values))->output();
  }

  // The operator a target names, checked against this LibTorch's registry: "aten::mul" for
  // "torch.ops.aten.mul.Tensor". Empty for nodes that are dropped.
  std::string operator_of(const Node& n) {
    const std::string& t = n.target;
    auto sym = kSymbolicOps.find(t);
    if (sym != kSymbolicOps.end()) return sym->second;
    if (t.rfind("torch.ops.higher_order.", 0) == 0)
      refuse(n, "a higher-order op (control flow or a subgraph call), which torchfuse does not compile: it compiles "
                "flat graphs of operators (grad-mode regions and autocast-disabled regions are inlined)");
    if (t.rfind("#", 0) == 0) refuse(n, "an operator of a serialization extension, which torchfuse does not know");
    if (t.rfind("torch.ops.", 0) != 0)
      refuse(n, "not an operator overload (torch.ops.<namespace>.<op>.<overload>) or a SymInt operation torchfuse knows");
    // torch.ops.<ns>.<op>.<overload>
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t dot = t.find('.'); dot != std::string::npos; dot = t.find('.', start = dot + 1))
      parts.push_back(t.substr(start, dot - start));
    parts.push_back(t.substr(start));
    if (parts.size() != 5) refuse(n, "expected torch.ops.<namespace>.<op>.<overload>");
    const std::string& ns = parts[2];
    std::string op = parts[3];
    const std::string overload = parts[4] == "default" ? "" : parts[4];
    if (ns == "aten" && kDroppedAten.count(op)) return "";
    // Sizes as TorchScript computes them.
    if (ns == "aten" && op == "sym_size") op = "size";
    else if (ns == "aten" && op == "sym_stride") op = "stride";
    else if (ns == "aten" && op == "sym_numel") op = "numel";
    else if (ns == "aten" && op == "sym_storage_offset") op = "storage_offset";
    const std::string qualified = ns + "::" + op;
    const auto ops = torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(qualified));
    if (ops.empty()) {
      if (ns == "aten" || ns == "prims")
        refuse(n, "no operator " + qualified + " in this LibTorch (" + TORCH_VERSION + "): the program needs a newer one");
      refuse(n, "custom op " + qualified + " is not registered in this process: load the library that defines it "
                "before compiling (torchfuse runs it through the dispatcher like any other op)");
    }
    bool found = op != parts[3];  // the sym_* ops map to TorchScript's own
    for (const auto& o : ops) found = found || o->schema().overload_name() == overload;
    if (!found) refuse(n, qualified + " has no overload '" + parts[4] + "' in this LibTorch (" + TORCH_VERSION + ")");
    return qualified;
  }

  // A higher-order op's positional inputs (serialized with empty names, in order).
  std::vector<const Arg*> hop_arguments(const Node& n) {
    std::vector<const Arg*> args;
    for (const NamedArg& in : n.inputs) {
      if (!in.name.empty()) refuse(n, "keyword argument '" + in.name + "' of a higher-order op, which torchfuse does not take");
      args.push_back(&in.arg);
    }
    return args;
  }

  // wrap_with_set_grad_enabled(enable_grad, body, *operands) and wrap_with_autocast(device_type,
  // dtype, enabled, cache_enabled, body, *operands): the body's nodes in place of the call, when
  // the mode is neutral for values; else refused naming what to do.
  void inline_mode_region(const Node& n) {
    const bool autocast = n.target == kAutocast;
    const std::vector<const Arg*> args = hop_arguments(n);
    const size_t body = autocast ? 4 : 1;
    if (args.size() <= body || !args[body]->subgraph)
      refuse(n, "expected the region's subgraph as argument " + std::to_string(body));
    if (autocast) {
      const Arg& enabled = *args[2];
      const bool off = enabled.items.size() == 1 && enabled.items[0].kind == Item::Bool && !enabled.items[0].b;
      const std::string device = args[0]->items.size() == 1 ? args[0]->items[0].name : "?";
      if (!off)
        refuse(n, "an autocast region (device '" + device + "') with autocast enabled: its ops' dtypes depend on " +
                      "autocast, which a TorchScript graph does not apply; export without autocast (convert the model " +
                      "to the dtype instead), or save ep.run_decompositions(), which records autocast's casts as ops");
    }
    const Subgraph& g = *args[body]->subgraph;
    const size_t operands = args.size() - body - 1;
    if (g.inputs.size() != operands)
      refuse(n, "its subgraph '" + g.name + "' takes " + std::to_string(g.inputs.size()) + " inputs, the call passes " +
                    std::to_string(operands));
    std::vector<Value*> in;
    for (size_t i = body + 1; i < args.size(); ++i) {
      if (!args[i]->supported || args[i]->list) refuse(n, "operand " + std::to_string(i) + " is " + args[i]->tag);
      in.push_back(literal_value(*args[i], &n));
    }
    // The body's names are its own: it runs in a scope of its own, seeing only its placeholders.
    std::unordered_map<std::string, Value*> outer;
    std::swap(outer, env_);
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      const Arg& p = g.inputs[i];
      if (p.items.size() != 1 || p.items[0].kind != Item::Name)
        refuse(n, "its subgraph '" + g.name + "' has a placeholder of kind " + p.tag);
      env_[p.items[0].name] = in[i];
    }
    for (const Node& inner : g.nodes) add_node(inner);
    std::vector<Value*> results;
    for (const Arg& o : g.outputs) {
      if (!o.supported || o.list) refuse(n, "its subgraph '" + g.name + "' returns a value of kind " + o.tag);
      results.push_back(literal_value(o, &n));
    }
    std::swap(outer, env_);
    if (results.size() != n.outputs.size())
      refuse(n, "its subgraph '" + g.name + "' returns " + std::to_string(results.size()) + " values, the program reads " +
                    std::to_string(n.outputs.size()));
    for (size_t i = 0; i < results.size(); ++i) bind_output(n, n.outputs[i], results[i]);
  }

  // aten.item (and _local_scalar_dense) returns a Scalar in TorchScript, which no int, float or
  // bool parameter takes; export records what the value is (a SymInt, SymFloat or SymBool
  // output): TorchScript's conversion of a one-element tensor to that type computes it.
  static std::string scalar_conversion(const std::string& op, const Node& n) {
    if ((op != "aten::item" && op != "aten::_local_scalar_dense") || n.outputs.size() != 1) return op;
    const std::string& tag = n.outputs[0].tag;
    if (tag == "as_sym_int") return "aten::Int";
    if (tag == "as_sym_float") return "aten::Float";
    if (tag == "as_sym_bool") return "aten::Bool";
    return op;
  }

  void add_node(const Node& n) {
    if (n.target == "_operator.pos" && n.inputs.size() == 1 && n.outputs.size() == 1)
      return bind_output(n, n.outputs[0], literal_value(n.inputs[0].arg, &n));
    if (n.target == kSetGradEnabled || n.target == kAutocast) return inline_mode_region(n);
    const std::string op = scalar_conversion(operator_of(n), n);
    if (op.empty()) return;
    std::vector<NamedValue> args;
    std::vector<NamedValue> kwargs;
    for (const NamedArg& in : n.inputs) {
      if (!in.arg.supported)
        refuse(n, "argument '" + in.name + "' is " + in.arg.tag + ", which has no TorchScript value" +
                      (in.arg.tag == "as_graph" ? " (a subgraph: a higher-order op)" : ""));
      Value* v = literal_value(in.arg, &n);
      if (in.keyword) kwargs.emplace_back(in.name, v);
      else args.emplace_back(v);
    }
    Value* result = nullptr;
    try {
      result = graph_->insert(c10::Symbol::fromQualString(op), args, kwargs);
    } catch (const std::exception& e) {
      std::string why = e.what();
      // TorchScript's message lists every overload it tried; its first lines say enough.
      size_t cut = 0;
      for (int line = 0; line < 6 && cut != std::string::npos; ++line) cut = why.find('\n', cut + 1);
      if (cut != std::string::npos) why = why.substr(0, cut) + "\n...";
      refuse(n, "its arguments fit no schema of " + op + " in this LibTorch: " + why);
    }
    // Several returns come back packed in a tuple.
    std::vector<Value*> outs{result};
    torch::jit::Node* made = result->node();
    if (made->kind() == c10::prim::TupleConstruct && n.outputs.size() > 1)
      outs.assign(made->inputs().begin(), made->inputs().end());
    if (n.outputs.empty()) return;
    if (outs.size() != n.outputs.size())
      refuse(n, "the program records " + std::to_string(n.outputs.size()) + " outputs, " + op + " returns " +
                    std::to_string(outs.size()));
    for (size_t i = 0; i < outs.size(); ++i) bind_output(n, n.outputs[i], outs[i]);
  }

  void bind_output(const Node& n, const Arg& out, Value* v) {
    if (out.tag == "as_none") return;
    if (out.tensor_list) {  // a Tensor[] return (split, chunk, unbind): its pieces by name
      torch::jit::Node* unpack = graph_->insertNode(graph_->createListUnpack(v, out.items.size()));
      for (size_t i = 0; i < out.items.size(); ++i) {
        if (out.items[i].kind != Item::Name) continue;
        name_value(unpack->output(i), out.items[i].name);
        env_[out.items[i].name] = unpack->output(i);
      }
      return;
    }
    if (out.items.size() != 1 || out.items[0].kind != Item::Name)
      refuse(n, "an output of kind " + out.tag + " is not supported");
    name_value(v, out.items[0].name);
    env_[out.items[0].name] = v;
  }

  void add_outputs() {
    TORCHFUSE_CHECK(program_.outputs.size() == program_.graph_outputs.size() || program_.outputs.empty(),
                    "torchfuse::compile_exported: '", program_.path, "': the signature describes ",
                    program_.outputs.size(), " outputs, the graph has ", program_.graph_outputs.size());
    std::vector<Value*> results;
    for (size_t i = 0; i < program_.graph_outputs.size(); ++i) {
      const OutputSpec::Kind kind = program_.outputs.empty() ? OutputSpec::User : program_.outputs[i].kind;
      const std::string target = program_.outputs.empty() ? "" : program_.outputs[i].target;
      switch (kind) {
        case OutputSpec::User:
          break;
        case OutputSpec::BufferMutation:
        case OutputSpec::ParameterMutation:
        case OutputSpec::UserInputMutation:
          throw Error(detail::cat("torchfuse::compile_exported: '", program_.path, "': the program updates ",
                                  kind == OutputSpec::BufferMutation      ? "buffer '"
                                  : kind == OutputSpec::ParameterMutation ? "parameter '"
                                                                          : "user input '",
                                  target,
                                  "' (an in-place write, e.g. BatchNorm's running statistics in training mode); torchfuse "
                                  "compiles programs without state updates: export the module in eval mode"));
        case OutputSpec::Token:
          throw Error(detail::cat("torchfuse::compile_exported: '", program_.path,
                                  "': the program returns an effect token (ops with side effects), which torchfuse does not take"));
        default:
          throw Error(detail::cat("torchfuse::compile_exported: '", program_.path,
                                  "': the program has loss or gradient outputs (a joint training graph); torchfuse "
                                  "compiles inference programs"));
      }
      const Arg& a = program_.graph_outputs[i];
      TORCHFUSE_CHECK(a.supported && !a.list, "torchfuse::compile_exported: '", program_.path, "': output ", i, " is ",
                      a.tag, ", which torchfuse does not return");
      results.push_back(literal_value(a, nullptr));
    }
    if (!program_.tuple_output && results.size() == 1) {
      graph_->registerOutput(results[0]);
    } else {
      graph_->registerOutput(graph_->insertNode(graph_->createTuple(results))->output());
    }
  }

  const Program& program_;
  std::optional<c10::Device> device_;
  std::shared_ptr<torch::jit::Graph> graph_;
  std::unordered_map<std::string, Value*> env_;
  std::map<const void*, at::Tensor> moved_;  // the archive's storages on the device
};

}  // namespace

std::shared_ptr<torch::jit::Graph> build_graph(const Program& program, const std::optional<c10::Device>& device) {
  return Builder(program, device).build();
}

}  // namespace exported
}  // namespace torchfuse
