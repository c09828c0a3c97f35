#include "src/export_contract.h"

#include <map>

#include "src/error.h"

namespace torchfuse {
namespace exported {

namespace {

std::string dim_text(const Dim& d) {
  if (d.is_static) return std::to_string(d.value);
  return d.symbol.empty() ? d.expr : d.symbol;
}

std::string range_text(const Range& r) {
  return "[" + (r.min ? std::to_string(*r.min) : std::string("-inf")) + ", " +
         (r.max ? std::to_string(*r.max) : std::string("inf")) + "]";
}

}  // namespace

InputContract contract_of(const Program& program, const std::optional<c10::Device>& weights_device) {
  InputContract c;
  c.path = program.path;
  c.ranges = program.ranges;
  if (!program.tensors.empty()) c.weights_device = weights_device ? *weights_device : c10::Device(c10::kCPU);
  for (const InputSpec& spec : program.inputs) {
    if (spec.kind != InputSpec::User) continue;
    InputContract::Input in;
    in.name = spec.name;
    auto meta = program.tensor_values.find(spec.name);
    in.tensor = spec.arg.tag == "as_tensor" && meta != program.tensor_values.end();
    if (in.tensor) {
      in.dims = meta->second.sizes;
      in.shape = std::string(c10::toString(meta->second.dtype)) + "[";
      for (size_t d = 0; d < in.dims.size(); ++d) in.shape += (d ? ", " : "") + dim_text(in.dims[d]);
      in.shape += "]";
    }
    c.inputs.push_back(std::move(in));
  }
  return c;
}

void InputContract::check(const std::vector<c10::IValue>& given) const {
  // symbol -> (its value, the input and dim that gave it)
  std::map<std::string, std::pair<int64_t, std::string>> seen;
  for (size_t i = 0; i < inputs.size() && i < given.size(); ++i) {
    const Input& in = inputs[i];
    if (!in.tensor || !given[i].isTensor() || !given[i].toTensor().defined()) continue;
    const at::Tensor& t = given[i].toTensor();
    const std::string who = "input " + std::to_string(i) + " ('" + in.name + "')";
    TORCHFUSE_CHECK(t.dim() == static_cast<int64_t>(in.dims.size()), "torchfuse: forward ", who, " must have ",
                    in.dims.size(), " dims (", in.shape, " in the exported program '", path, "'), got ", t.dim(),
                    " (sizes ", t.sizes(), ")");
    for (size_t d = 0; d < in.dims.size(); ++d) {
      const Dim& dim = in.dims[d];
      const int64_t size = t.size(static_cast<int64_t>(d));
      const std::string at = who + " dim " + std::to_string(d);
      if (dim.is_static) {
        TORCHFUSE_CHECK(size == dim.value, "torchfuse: forward ", at, " is ", size, " but the program '", path,
                        "' was exported with it static at ", dim.value, " (", in.shape,
                        "); export it with a dynamic dim (dynamic_shapes) to run other sizes");
        continue;
      }
      if (dim.symbol.empty()) continue;  // a derived size (2*s0): its symbols are checked where they appear alone
      auto r = ranges.find(dim.symbol);
      if (r != ranges.end()) {
        const bool below = r->second.min && size < *r->second.min;
        const bool above = r->second.max && size > *r->second.max;
        TORCHFUSE_CHECK(!below && !above, "torchfuse: forward ", at, " is ", size, ", outside the range ",
                        range_text(r->second), " exported for it (symbol ", dim.symbol, ", ", in.shape, ", in '", path,
                        "')");
      }
      auto s = seen.find(dim.symbol);
      if (s == seen.end()) {
        seen.emplace(dim.symbol, std::make_pair(size, at));
      } else {
        TORCHFUSE_CHECK(s->second.first == size, "torchfuse: forward ", at, " is ", size, " but ", s->second.second,
                        " is ", s->second.first, ": the exported program '", path, "' has both as the same size (symbol ",
                        dim.symbol, ")");
      }
    }
    if (weights_device && t.dim() > 0) {
      const c10::Device w = *weights_device;
      const bool same = t.device().type() == w.type() && (!w.has_index() || t.device().index() == w.index());
      TORCHFUSE_CHECK(same, "torchfuse: forward ", who, " is on ", t.device(), " but the program's weights are on ", w,
                      ": compile it for the inputs' device, torchfuse::compile_exported(path, c10::Device(\"",
                      t.device().str(), "\"))");
    }
  }
}

}  // namespace exported
}  // namespace torchfuse
