#include "src/export_reader.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <regex>
#include <set>

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>
#include <nlohmann/json.hpp>

#include "src/error.h"

namespace torchfuse {
namespace exported {

using json = nlohmann::json;

namespace {

// ---- the archive ----

// The last megabyte of the file, where a zip's central directory (its entries' names) lives.
std::string file_tail(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff take = std::min<std::streamoff>(size, 1 << 20);
  std::string tail(static_cast<size_t>(take), '\0');
  in.seekg(size - take);
  in.read(&tail[0], take);
  return tail;
}

const char* kOldLayout =
    "it is the layout torch.export.save wrote up to PyTorch 2.5 (serialized_exported_program.json and a pickled "
    "state dict at the zip's root), which torchfuse does not read: load it with torch.export.load and save it "
    "again with torch.export.save of PyTorch >= 2.6 (the PT2 archive layout: models/*.json, data/weights/)";

std::unique_ptr<caffe2::serialize::PyTorchStreamReader> open_archive(const std::string& path) {
  {
    std::ifstream probe(path, std::ios::binary);
    TORCHFUSE_CHECK(probe.good(), "torchfuse::compile_exported: cannot open '", path, "'");
  }
  try {
    return std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
  } catch (const std::exception& e) {
    std::string why = e.what();
    why = why.substr(0, why.find('\n'));
    if (file_tail(path).find("serialized_exported_program.json") != std::string::npos)
      throw Error(detail::cat("torchfuse::compile_exported: '", path, "': ", kOldLayout));
    throw Error(detail::cat("torchfuse::compile_exported: '", path,
                            "' is not an archive LibTorch's zip reader can open (a .pt2 file from torch.export.save "
                            "is expected): ",
                            why));
  }
}

std::string read_record(caffe2::serialize::PyTorchStreamReader& reader, const std::string& name) {
  at::DataPtr data;
  size_t size = 0;
  std::tie(data, size) = reader.getRecord(name);
  return std::string(static_cast<const char*>(data.get()), size);
}

// Python's json module writes infinities and NaN as bare Infinity, -Infinity and NaN (not JSON):
// outside strings they become the strings float_of reads.
std::string quote_non_finite(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (const char* token : {"-Infinity", "Infinity", "NaN"}) {
      const size_t n = std::strlen(token);
      if (text.compare(i, n, token) == 0) {
        out += '"';
        out += token;
        out += '"';
        i += n - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

json parse_json(const std::string& text, const std::string& path, const std::string& record) {
  try {
    return json::parse(quote_non_finite(text));
  } catch (const std::exception& e) {
    throw Error(detail::cat("torchfuse::compile_exported: '", path, "': ", record, " is not valid JSON: ", e.what()));
  }
}

// ---- JSON helpers ----

// A serialized union ({"as_tensor": {...}}): its tag and value.
std::pair<std::string, const json*> union_of(const json& j, const std::string& where) {
  TORCHFUSE_CHECK(j.is_object() && !j.empty(), "torchfuse::compile_exported: ", where,
                  ": expected a tagged value, got ", j.dump().substr(0, 200));
  auto it = j.begin();
  return {it.key(), &it.value()};
}

double float_of(const json& j, const std::string& where) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "Infinity" || s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity" || s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "NaN" || s == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  throw Error(detail::cat("torchfuse::compile_exported: ", where, ": expected a float, got ", j.dump()));
}

c10::Device device_of(const json& j) {
  const std::string type = j.value("type", std::string("cpu"));
  c10::Device d(type);  // "cuda", "cpu", "cuda:1"
  if (j.contains("index") && j["index"].is_number_integer())
    d.set_index(static_cast<c10::DeviceIndex>(j["index"].get<int64_t>()));
  return d;
}

Item item_of(Item::Kind kind) {
  Item it;
  it.kind = kind;
  return it;
}
Item name_item(const std::string& name) {
  Item it = item_of(Item::Name);
  it.name = name;
  return it;
}
Item int_item(int64_t v) {
  Item it = item_of(Item::Int);
  it.i = v;
  return it;
}
Item float_item(double v) {
  Item it = item_of(Item::Float);
  it.f = v;
  return it;
}
Item bool_item(bool v) {
  Item it = item_of(Item::Bool);
  it.b = v;
  return it;
}
Item none_item() { return Item{}; }

// A SymIntArgument / SymFloatArgument / SymBoolArgument: {"as_name": n} or a literal.
Item sym_item(const json& j, const std::string& where) {
  const auto [tag, v] = union_of(j, where);
  if (tag == "as_name") return name_item(v->get<std::string>());
  if (tag == "as_int") return int_item(v->get<int64_t>());
  if (tag == "as_float") return float_item(float_of(*v, where));
  if (tag == "as_bool") return bool_item(v->get<bool>());
  throw Error(detail::cat("torchfuse::compile_exported: ", where, ": unknown symbolic value ", tag));
}

int64_t memory_format_from_export(int64_t code, const std::string& where) {
  switch (code) {
    case 1: return static_cast<int64_t>(c10::MemoryFormat::Contiguous);
    case 2: return static_cast<int64_t>(c10::MemoryFormat::ChannelsLast);
    case 3: return static_cast<int64_t>(c10::MemoryFormat::ChannelsLast3d);
    case 4: return static_cast<int64_t>(c10::MemoryFormat::Preserve);
    default: break;
  }
  throw Error(detail::cat("torchfuse::compile_exported: ", where, ": unknown memory format ", code));
}

Node node_of(const json& j);
Arg arg_of(const json& j, const std::string& where);

// A GraphArgument's graph ({"name": ..., "graph": {inputs, nodes, outputs, ...}}).
std::shared_ptr<const Subgraph> subgraph_of(const json& j, const std::string& where) {
  auto g = std::make_shared<Subgraph>();
  g->name = j.value("name", std::string());
  const std::string in = where + " subgraph '" + g->name + "'";
  const json& graph = j.at("graph");
  for (const auto& i : graph.at("inputs")) g->inputs.push_back(arg_of(i, in + " input"));
  for (const auto& n : graph.at("nodes")) g->nodes.push_back(node_of(n));
  for (const auto& o : graph.at("outputs")) g->outputs.push_back(arg_of(o, in + " output"));
  return g;
}

Arg arg_of(const json& j, const std::string& where) {
  const auto [tag, v] = union_of(j, where);
  Arg a;
  a.tag = tag;
  auto each = [&](auto&& fn) {
    a.list = true;
    for (const auto& e : *v) a.items.push_back(fn(e));
  };
  if (tag == "as_none") {
    a.items.push_back(none_item());
  } else if (tag == "as_tensor") {
    a.items.push_back(name_item((*v)["name"].get<std::string>()));
  } else if (tag == "as_tensors") {
    a.tensor_list = true;
    each([](const json& e) { return name_item(e["name"].get<std::string>()); });
  } else if (tag == "as_optional_tensors" || tag == "as_optional_tensor") {
    auto one = [&](const json& e) {
      const auto [t, ev] = union_of(e, where);
      return t == "as_tensor" ? name_item((*ev)["name"].get<std::string>()) : none_item();
    };
    if (tag == "as_optional_tensor") {
      a.items.push_back(one(*v));
    } else {
      a.tensor_list = a.optional_elements = true;
      each(one);
    }
  } else if (tag == "as_int") {
    a.items.push_back(int_item(v->get<int64_t>()));
  } else if (tag == "as_ints") {
    each([](const json& e) { return int_item(e.get<int64_t>()); });
  } else if (tag == "as_float") {
    a.items.push_back(float_item(float_of(*v, where)));
  } else if (tag == "as_floats") {
    each([&](const json& e) { return float_item(float_of(e, where)); });
  } else if (tag == "as_bool") {
    a.items.push_back(bool_item(v->get<bool>()));
  } else if (tag == "as_bools") {
    each([](const json& e) { return bool_item(e.get<bool>()); });
  } else if (tag == "as_string" || tag == "as_strings") {
    auto str = [](const json& e) {
      Item it;
      it.kind = Item::String;
      it.name = e.get<std::string>();
      return it;
    };
    if (tag == "as_string") a.items.push_back(str(*v));
    else each(str);
  } else if (tag == "as_sym_int" || tag == "as_sym_float" || tag == "as_sym_bool") {
    a.items.push_back(sym_item(*v, where));
  } else if (tag == "as_sym_ints" || tag == "as_sym_floats" || tag == "as_sym_bools") {
    each([&](const json& e) { return sym_item(e, where); });
  } else if (tag == "as_scalar_type") {
    Item it;
    it.kind = Item::ScalarType;
    it.i = static_cast<int64_t>(scalar_type_from_export(v->get<int64_t>(), where));
    a.items.push_back(it);
  } else if (tag == "as_memory_format") {
    a.items.push_back(int_item(memory_format_from_export(v->get<int64_t>(), where)));
  } else if (tag == "as_layout") {
    TORCHFUSE_CHECK(v->get<int64_t>() == 7, "torchfuse::compile_exported: ", where, ": layout ", v->get<int64_t>(),
                    " (export's numbering) is not strided; only strided tensors are supported");
    a.items.push_back(int_item(static_cast<int64_t>(c10::kStrided)));
  } else if (tag == "as_device") {
    Item it;
    it.kind = Item::Device;
    it.device = device_of(*v);
    a.items.push_back(it);
  } else if (tag == "as_graph") {
    a.supported = false;  // no op takes a graph as a value; the builder inlines the neutral wrappers
    a.subgraph = subgraph_of(*v, where);
  } else {
    // as_custom_obj, as_operator, as_complex, as_int_lists, as_nested_tensors, ...
    a.supported = false;
  }
  return a;
}

// ---- tensor metas ----

// "s0" from "Symbol('s0', integer=True, positive=True)" (sympy's srepr) or from a bare "s0".
std::string plain_symbol(const std::string& expr) {
  static const std::regex srepr(R"(^Symbol\('([A-Za-z_][A-Za-z0-9_]*)'.*\)$)");
  static const std::regex bare(R"(^[A-Za-z_][A-Za-z0-9_]*$)");
  std::smatch m;
  if (std::regex_match(expr, m, srepr)) return m[1];
  if (std::regex_match(expr, bare)) return expr;
  return "";
}

Dim dim_of(const json& j, const std::string& where) {
  const auto [tag, v] = union_of(j, where);
  Dim d;
  if (tag == "as_int") {
    d.value = v->get<int64_t>();
    return d;
  }
  TORCHFUSE_CHECK(tag == "as_expr", "torchfuse::compile_exported: ", where, ": unknown size kind ", tag);
  d.is_static = false;
  d.expr = (*v).value("expr_str", std::string());
  d.symbol = plain_symbol(d.expr);
  if (v->contains("hint") && (*v)["hint"].is_object()) {
    const auto [ht, hv] = union_of((*v)["hint"], where);
    if (ht == "as_int") d.hint = hv->get<int64_t>();
  }
  return d;
}

TensorMeta meta_of(const json& j, const std::string& where) {
  TensorMeta m;
  m.dtype = scalar_type_from_export(j.at("dtype").get<int64_t>(), where);
  for (const auto& s : j.at("sizes")) m.sizes.push_back(dim_of(s, where));
  if (j.contains("strides"))
    for (const auto& s : j["strides"]) m.strides.push_back(dim_of(s, where));
  if (j.contains("storage_offset")) m.storage_offset = dim_of(j["storage_offset"], where);
  if (j.contains("device") && j["device"].is_object()) m.device = device_of(j["device"]);
  if (j.contains("layout"))
    TORCHFUSE_CHECK(j["layout"].get<int64_t>() == 7, "torchfuse::compile_exported: ", where,
                    ": only strided tensors are supported (layout ", j["layout"].get<int64_t>(), " in export's numbering)");
  return m;
}

// ---- the program's pieces ----

InputSpec input_spec_of(const json& j) {
  const auto [tag, v] = union_of(j, "an input spec");
  InputSpec s;
  auto tensor_name = [&](const char* key) { return (*v).at("arg").at(key).get<std::string>(); };
  if (tag == "user_input") {
    s.kind = InputSpec::User;
    s.arg = arg_of((*v).at("arg"), "a user input");
    if (!s.arg.items.empty() && s.arg.items[0].kind == Item::Name) s.name = s.arg.items[0].name;
  } else if (tag == "parameter") {
    s.kind = InputSpec::Parameter;
    s.name = tensor_name("name");
    s.target = (*v).at("parameter_name").get<std::string>();
  } else if (tag == "buffer") {
    s.kind = InputSpec::Buffer;
    s.name = tensor_name("name");
    s.target = (*v).at("buffer_name").get<std::string>();
  } else if (tag == "tensor_constant") {
    s.kind = InputSpec::TensorConstant;
    s.name = tensor_name("name");
    s.target = (*v).at("tensor_constant_name").get<std::string>();
  } else if (tag == "constant_input") {
    s.kind = InputSpec::ConstantInput;
    s.name = (*v).at("name").get<std::string>();
    s.target = s.name;
    s.constant = arg_of((*v).at("value"), "constant input '" + s.name + "'");
  } else if (tag == "custom_obj") {
    s.kind = InputSpec::CustomObj;
    s.name = tensor_name("name");
    s.target = (*v).value("custom_obj_name", std::string());
  } else if (tag == "token") {
    s.kind = InputSpec::Token;
    s.name = tensor_name("name");
  } else {
    throw Error(detail::cat("torchfuse::compile_exported: unknown input kind '", tag, "'"));
  }
  return s;
}

OutputSpec output_spec_of(const json& j) {
  const auto [tag, v] = union_of(j, "an output spec");
  OutputSpec s;
  static const std::map<std::string, OutputSpec::Kind> kinds = {
      {"user_output", OutputSpec::User},
      {"loss_output", OutputSpec::Loss},
      {"buffer_mutation", OutputSpec::BufferMutation},
      {"parameter_mutation", OutputSpec::ParameterMutation},
      {"user_input_mutation", OutputSpec::UserInputMutation},
      {"gradient_to_parameter", OutputSpec::GradientToParameter},
      {"gradient_to_user_input", OutputSpec::GradientToUserInput},
      {"token", OutputSpec::Token}};
  auto it = kinds.find(tag);
  TORCHFUSE_CHECK(it != kinds.end(), "torchfuse::compile_exported: unknown output kind '", tag, "'");
  s.kind = it->second;
  if (s.kind == OutputSpec::User) {
    s.arg = arg_of((*v).at("arg"), "a user output");
  } else {
    s.arg.tag = "as_tensor";
    if ((*v).contains("arg") && (*v)["arg"].contains("name"))
      s.arg.items.push_back(name_item((*v)["arg"]["name"].get<std::string>()));
    s.target = (*v).value("buffer_name", (*v).value("parameter_name", (*v).value("user_input_name", std::string())));
  }
  return s;
}

Node node_of(const json& j) {
  Node n;
  n.target = j.at("target").get<std::string>();
  if (j.contains("name") && j["name"].is_string()) n.name = j["name"].get<std::string>();
  const std::string where = "node " + (n.name.empty() ? std::string("?") : "'" + n.name + "'") + " (" + n.target + ")";
  for (const auto& o : j.at("outputs")) n.outputs.push_back(arg_of(o, where));
  if (n.name.empty()) {
    for (const auto& o : n.outputs)
      for (const auto& item : o.items)
        if (n.name.empty() && item.kind == Item::Name) n.name = item.name;
  }
  const std::string named = "node '" + n.name + "' (" + n.target + ")";
  for (const auto& i : j.at("inputs")) {
    NamedArg na;
    na.name = i.value("name", std::string());
    na.arg = arg_of(i.at("arg"), named + " argument '" + na.name + "'");
    // ArgumentKind: 1 positional, 2 keyword; older archives record none (passed by name).
    na.keyword = !(i.contains("kind") && i["kind"].is_number_integer() && i["kind"].get<int64_t>() == 1);
    n.inputs.push_back(std::move(na));
  }
  if (j.contains("metadata") && j["metadata"].is_object() && j["metadata"].contains("stack_trace"))
    n.stack_trace = j["metadata"]["stack_trace"].get<std::string>();
  return n;
}

// Does the root call's out_spec (a pytree TreeSpec as JSON) return a container?
bool out_spec_is_container(const json& program, size_t user_outputs) {
  const json* calls = nullptr;
  if (program.contains("graph_module") && program["graph_module"].contains("module_call_graph"))
    calls = &program["graph_module"]["module_call_graph"];
  if (calls && calls->is_array()) {
    for (const auto& call : *calls) {
      if (call.value("fqn", std::string("?")) != "" || !call.contains("signature") || !call["signature"].is_object())
        continue;
      const std::string spec = call["signature"].value("out_spec", std::string());
      try {
        const json tree = json::parse(spec);
        // [version, {"type": null | "builtins.tuple" | ..., ...}]
        const json& root = tree.is_array() && tree.size() == 2 ? tree[1] : tree;
        if (root.contains("type")) return !root["type"].is_null();
      } catch (const std::exception&) {
      }
    }
  }
  return user_outputs != 1;
}

// ---- weights ----

void check_fits(const at::Tensor& flat, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                int64_t offset, const std::string& fqn, const std::string& path) {
  int64_t last = offset;
  bool empty = false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) empty = true;
    last += (sizes[d] - 1) * strides[d];
  }
  TORCHFUSE_CHECK(empty || (offset >= 0 && last < flat.numel()), "torchfuse::compile_exported: '", path, "': tensor '",
                  fqn, "' (sizes ", c10::IntArrayRef(sizes), ", strides ", c10::IntArrayRef(strides), ", offset ",
                  offset, ") reaches past its storage of ", flat.numel(), " elements");
}

std::vector<int64_t> static_ints(const std::vector<Dim>& dims, const std::string& what, const std::string& fqn) {
  std::vector<int64_t> out;
  for (const auto& d : dims) {
    TORCHFUSE_CHECK(d.is_static, "torchfuse::compile_exported: tensor '", fqn, "' has a symbolic ", what, " (", d.expr,
                    ")");
    out.push_back(d.value);
  }
  return out;
}

// data/weights/<model>_weights_config.json or data/constants/<model>_constants_config.json: each
// FQN's payload file and meta; payloads shared by several FQNs are one storage.
void read_payloads(caffe2::serialize::PyTorchStreamReader& reader, const std::string& dir, const std::string& config_name,
                   Program& program) {
  if (!reader.hasRecord(config_name)) return;
  const json config = parse_json(read_record(reader, config_name), program.path, config_name);
  if (!config.contains("config")) return;
  std::map<std::string, at::Tensor> storages;  // payload file -> flat tensor
  for (const auto& [fqn, payload] : config["config"].items()) {
    const std::string file = payload.at("path_name").get<std::string>();
    TORCHFUSE_CHECK(!payload.value("use_pickle", false), "torchfuse::compile_exported: '", program.path, "': '", fqn,
                    "' is pickled (", dir, file,
                    ": a tensor subclass or custom object), which torchfuse does not read; only plain tensors are");
    TORCHFUSE_CHECK(payload.contains("tensor_meta") && payload["tensor_meta"].is_object(),
                    "torchfuse::compile_exported: '", program.path, "': '", fqn, "' has no tensor meta");
    const TensorMeta meta = meta_of(payload["tensor_meta"], "tensor '" + fqn + "'");
    const std::string record = dir + file;
    TORCHFUSE_CHECK(reader.hasRecord(record), "torchfuse::compile_exported: '", program.path, "': ", record,
                    " (of '", fqn, "') is missing");
    const std::vector<int64_t> sizes = static_ints(meta.sizes, "size", fqn);
    std::vector<int64_t> strides = static_ints(meta.strides, "stride", fqn);
    if (strides.size() != sizes.size()) {  // none recorded: contiguous
      strides.assign(sizes.size(), 1);
      for (size_t d = sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * std::max<int64_t>(sizes[d], 1);
    }
    const int64_t offset = meta.storage_offset.is_static ? meta.storage_offset.value : 0;
    auto it = storages.find(file);
    if (it == storages.end()) {
      const std::string bytes = read_record(reader, record);
      if (bytes.empty()) {  // an empty tensor, or one saved without data: zeros, as PyTorch loads it
        program.tensors[fqn] = at::zeros(sizes, at::TensorOptions().dtype(meta.dtype));
        continue;
      }
      const size_t elem = c10::elementSize(meta.dtype);
      TORCHFUSE_CHECK(bytes.size() % elem == 0, "torchfuse::compile_exported: '", program.path, "': ", record, " has ",
                      bytes.size(), " bytes, not a multiple of ", c10::toString(meta.dtype), "'s ", elem);
      at::Tensor flat = at::empty({static_cast<int64_t>(bytes.size() / elem)}, at::TensorOptions().dtype(meta.dtype));
      std::memcpy(flat.data_ptr(), bytes.data(), bytes.size());
      it = storages.emplace(file, flat).first;
    }
    const at::Tensor& flat = it->second;
    TORCHFUSE_CHECK(flat.scalar_type() == meta.dtype, "torchfuse::compile_exported: '", program.path, "': '", fqn,
                    "' is ", c10::toString(meta.dtype), " but shares ", record, " with a ",
                    c10::toString(flat.scalar_type()), " tensor");
    check_fits(flat, sizes, strides, offset, fqn, program.path);
    program.tensors[fqn] = flat.as_strided(sizes, strides, offset);
  }
}

}  // namespace

c10::ScalarType scalar_type_from_export(int64_t code, const std::string& where) {
  switch (code) {
    case 1: return c10::ScalarType::Byte;
    case 2: return c10::ScalarType::Char;
    case 3: return c10::ScalarType::Short;
    case 4: return c10::ScalarType::Int;
    case 5: return c10::ScalarType::Long;
    case 6: return c10::ScalarType::Half;
    case 7: return c10::ScalarType::Float;
    case 8: return c10::ScalarType::Double;
    case 9: return c10::ScalarType::ComplexHalf;
    case 10: return c10::ScalarType::ComplexFloat;
    case 11: return c10::ScalarType::ComplexDouble;
    case 12: return c10::ScalarType::Bool;
    case 13: return c10::ScalarType::BFloat16;
    default: break;
  }
  const char* name = code == 28 ? "uint16" : (code >= 29 && code <= 32) ? "a float8 type" : "unknown";
  throw Error(detail::cat("torchfuse::compile_exported: ", where, ": dtype ", name, " (export's code ", code,
                          ") is not supported"));
}

Program read_program(const std::string& path) {
  auto reader = open_archive(path);
  Program program;
  program.path = path;
  const std::vector<std::string> records = reader->getAllRecords();
  auto has_prefix = [&](const std::string& prefix) {
    return std::any_of(records.begin(), records.end(), [&](const std::string& r) { return r.rfind(prefix, 0) == 0; });
  };
  if (!reader->hasRecord("archive_format")) {
    TORCHFUSE_CHECK(!reader->hasRecord("serialized_exported_program.json"), "torchfuse::compile_exported: '", path,
                    "': ", kOldLayout);
    const bool torchscript = reader->hasRecord("constants.pkl") || has_prefix("code/");
    throw Error(detail::cat("torchfuse::compile_exported: '", path, "' is not a PT2 archive (no archive_format record)",
                            torchscript ? "; it looks like a TorchScript file: use torchfuse::compile(torch::jit::load(path))"
                                        : ""));
  }
  const std::string format = read_record(*reader, "archive_format");
  TORCHFUSE_CHECK(format.rfind("pt2", 0) == 0, "torchfuse::compile_exported: '", path, "': archive_format is '", format,
                  "', not 'pt2'");
  if (reader->hasRecord("archive_version")) {
    const std::string v = read_record(*reader, "archive_version");
    try {
      program.archive_version = std::stoi(v);
    } catch (const std::exception&) {
      throw Error(detail::cat("torchfuse::compile_exported: '", path, "': archive_version '", v, "' is not a number"));
    }
  }
  TORCHFUSE_CHECK(program.archive_version <= kMaxArchiveVersion, "torchfuse::compile_exported: '", path,
                  "': PT2 archive version ", program.archive_version, " is newer than torchfuse understands (",
                  kMaxArchiveVersion, ")");

  // models/<name>.json: "model" for torch.export.save; one other name is taken too.
  std::vector<std::string> models;
  for (const auto& r : records) {
    if (r.rfind("models/", 0) == 0 && r.size() > 12 && r.compare(r.size() - 5, 5, ".json") == 0 &&
        r.find('/', 7) == std::string::npos)
      models.push_back(r.substr(7, r.size() - 12));
  }
  TORCHFUSE_CHECK(!models.empty(), "torchfuse::compile_exported: '", path, "' holds no exported program (models/*.json)",
                  has_prefix("data/aotinductor/") ? "; it is an AOTInductor package, which torchfuse does not run" : "");
  if (std::find(models.begin(), models.end(), "model") != models.end()) {
    program.model_name = "model";
  } else {
    TORCHFUSE_CHECK(models.size() == 1, "torchfuse::compile_exported: '", path, "' holds ", models.size(),
                    " programs and none is named 'model'");
    program.model_name = models[0];
  }
  const std::string model_record = "models/" + program.model_name + ".json";
  const json ep = parse_json(read_record(*reader, model_record), path, model_record);

  try {
    if (ep.contains("schema_version")) {
      program.schema_major = ep["schema_version"].value("major", 0);
      program.schema_minor = ep["schema_version"].value("minor", 0);
    }
    program.torch_version = ep.value("torch_version", std::string());
    TORCHFUSE_CHECK(program.schema_major <= kMaxSchemaMajor, "torchfuse::compile_exported: '", path,
                    "': export schema version ", program.schema_major, ".", program.schema_minor,
                    " is newer than torchfuse understands (", kMaxSchemaMajor, ".x)");
    const json& gm = ep.at("graph_module");
    const json& graph = gm.at("graph");
    for (const auto& [name, meta] : graph.at("tensor_values").items())
      program.tensor_values.emplace(name, meta_of(meta, "value '" + name + "'"));
    for (const auto& n : graph.at("nodes")) program.nodes.push_back(node_of(n));
    for (const auto& o : graph.at("outputs")) program.graph_outputs.push_back(arg_of(o, "a graph output"));
    for (const auto& s : gm.at("signature").at("input_specs")) program.inputs.push_back(input_spec_of(s));
    for (const auto& s : gm.at("signature").at("output_specs")) program.outputs.push_back(output_spec_of(s));
    if (ep.contains("range_constraints")) {
      for (const auto& [sym, r] : ep["range_constraints"].items()) {
        Range range;
        if (r.contains("min_val") && r["min_val"].is_number_integer()) range.min = r["min_val"].get<int64_t>();
        if (r.contains("max_val") && r["max_val"].is_number_integer()) range.max = r["max_val"].get<int64_t>();
        program.ranges.emplace(sym, range);
      }
    }
    size_t user_outputs = 0;
    for (const auto& o : program.outputs) user_outputs += o.kind == OutputSpec::User;
    program.tuple_output = out_spec_is_container(ep, user_outputs);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(detail::cat("torchfuse::compile_exported: '", path, "': ", model_record,
                            " does not have the ExportedProgram layout torchfuse reads (schema ", program.schema_major,
                            ".", program.schema_minor, "): ", e.what()));
  }

  // Weights: the layout of current PyTorch (one payload file per storage, described by a config);
  // a pickled state dict (data/weights/<model>.pt, earlier 2.x releases) is refused.
  const std::string legacy = "data/weights/" + program.model_name + ".pt";
  TORCHFUSE_CHECK(!reader->hasRecord(legacy), "torchfuse::compile_exported: '", path, "': the weights are a pickled state dict (",
                  legacy, ", the layout of earlier PyTorch 2.x releases), which torchfuse does not read: load the "
                  "program with torch.export.load and save it again with torch.export.save of PyTorch >= 2.8");
  read_payloads(*reader, "data/weights/", "data/weights/" + program.model_name + "_weights_config.json", program);
  read_payloads(*reader, "data/constants/", "data/constants/" + program.model_name + "_constants_config.json", program);
  return program;
}

}  // namespace exported
}  // namespace torchfuse
