#include "suite_cases.h"

#include <stdexcept>

#include <torch/torch.h>

namespace torchfuse_bench {
namespace {

// TorchScript sources, written as SUITE.md writes them. One deviation: swiglu calls
// `torch.silu` because Module::define's native resolver only knows the `torch.*` builtins
// (aten ops), not `torch.nn.functional`; F.silu is aten::silu in a TorchScript graph anyway.
const char* kGeluTanh = R"JIT(def forward(self, x):
    return 0.5 * x * (1 + torch.tanh(0.79788456 * (x + 0.044715 * x * x * x)))
)JIT";

const char* kBiasGeluErf = R"JIT(def forward(self, x, b):
    y = x + b
    return y * 0.5 * (1.0 + torch.erf(y * 0.7071067811865476))
)JIT";

const char* kSoftmaxManual = R"JIT(def forward(self, x):
    m = x.max(dim=1, keepdim=True)[0]
    e = torch.exp(x - m)
    return e / e.sum(dim=1, keepdim=True)
)JIT";

const char* kLayernormManual = R"JIT(def forward(self, x, w, b):
    mu = x.mean(-1, keepdim=True)
    d = x - mu
    var = (d * d).mean(-1, keepdim=True)
    return d * torch.rsqrt(var + 1e-5) * w + b
)JIT";

const char* kRmsnormManual = R"JIT(def forward(self, x, w):
    xf = x.float()
    r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (xf * r).to(x.dtype) * w
)JIT";

const char* kSwiglu = R"JIT(def forward(self, a, b):
    return torch.silu(a) * b
)JIT";

const char* kAddLayernorm = R"JIT(def forward(self, x, r, w, b):
    h = x + r
    return (h, torch.layer_norm(h, [4096], w, b, 1e-5))
)JIT";

const char* kAttnSoftmaxMask = R"JIT(def forward(self, s, mask):
    return torch.softmax(s * 0.125 + mask, dim=-1)
)JIT";

const char* kColSum = R"JIT(def forward(self, x):
    return x.sum(dim=0)
)JIT";

const char* kLogsumexpRows = R"JIT(def forward(self, x):
    return torch.logsumexp(x, dim=1)
)JIT";

const char* kMeanSqFull = R"JIT(def forward(self, x):
    return (x * x).mean()
)JIT";

void collect_tensors(const c10::IValue& value, std::vector<at::Tensor>& out) {
  if (value.isTensor()) {
    out.push_back(value.toTensor());
  } else if (value.isTuple()) {
    for (const auto& element : value.toTupleRef().elements()) collect_tensors(element, out);
  } else if (value.isList()) {
    for (const auto& element : value.toListRef()) collect_tensors(element, out);
  }
}

}  // namespace

const std::vector<SuiteCase>& suite_cases() {
  static const std::vector<SuiteCase> cases = {
      {"gelu_tanh", kGeluTanh, {{8192, 8192}}},
      {"bias_gelu_erf", kBiasGeluErf, {{8192, 8192}, {8192}}},
      {"softmax_manual", kSoftmaxManual, {{16384, 4096}}},
      {"softmax_long_rows", kSoftmaxManual, {{1024, 65536}}},
      {"layernorm_manual", kLayernormManual, {{16384, 4096}, {4096}, {4096}}},
      {"rmsnorm_manual", kRmsnormManual, {{16384, 4096}, {4096}}},
      {"swiglu", kSwiglu, {{8192, 8192}, {8192, 8192}}},
      {"add_layernorm", kAddLayernorm, {{16384, 4096}, {16384, 4096}, {4096}, {4096}}},
      {"attn_softmax_mask", kAttnSoftmaxMask, {{8, 16, 1024, 1024}, {1, 1, 1024, 1024}}},
      {"col_sum", kColSum, {{16384, 4096}}},
      {"logsumexp_rows", kLogsumexpRows, {{16384, 4096}}},
      {"mean_sq_full", kMeanSqFull, {{8192, 8192}}},
  };
  return cases;
}

SuiteCase with_row_length(const SuiteCase& c, int64_t cols) {
  constexpr int64_t kRows = 16384, kCols = 4096;
  if (c.shapes.empty() || c.shapes[0] != std::vector<int64_t>{kRows, kCols}) {
    throw std::invalid_argument("case '" + c.name + "' has no rows of 4096 to resize");
  }
  if (cols < 1 || (kRows * kCols) % cols != 0) {
    throw std::invalid_argument("--row-length " + std::to_string(cols) + " does not divide 16384 x 4096 elements");
  }
  SuiteCase r = c;
  r.name = c.name + "@" + std::to_string(cols);
  for (auto& shape : r.shapes) {
    for (auto& d : shape) d = d == kCols ? cols : d == kRows ? kRows * kCols / cols : d;
  }
  const std::string literal = "[" + std::to_string(kCols) + "]";  // add_layernorm's normalized shape
  for (size_t at = r.source.find(literal); at != std::string::npos; at = r.source.find(literal, at)) {
    r.source.replace(at, literal.size(), "[" + std::to_string(cols) + "]");
  }
  return r;
}

SuiteCase with_rows(const SuiteCase& c, int64_t rows) {
  constexpr int64_t kElements = int64_t{16384} * 4096;
  if (c.shapes.empty() || c.shapes[0].size() != 2 || c.shapes[0][0] * c.shapes[0][1] != kElements) {
    throw std::invalid_argument("case '" + c.name + "' has no rows of 16384 x 4096 elements to resize");
  }
  if (rows < 1) throw std::invalid_argument("--rows must be >= 1");
  SuiteCase r = c;
  r.name = c.name + "#" + std::to_string(rows);
  const int64_t old_rows = c.shapes[0][0];
  for (auto& shape : r.shapes)
    if (shape.size() == 2 && shape[0] == old_rows) shape[0] = rows;
  return r;
}

SuiteCase latency_case() { return {"gelu_tanh_64x1024", kGeluTanh, {{64, 1024}}}; }

torch::jit::Module make_module(const SuiteCase& c) {
  torch::jit::Module module(c10::QualifiedName("__torch__.torchfuse_bench." + c.name));
  // Modules scripted in Python carry `training`; eval() and freezing expect it.
  module.register_attribute("training", c10::BoolType::get(), false);
  module.define(c.source);
  return module;
}

std::vector<c10::IValue> make_inputs(const SuiteCase& c, c10::ScalarType dtype) {
  const auto options = torch::TensorOptions().dtype(dtype).device(torch::kCUDA);
  std::vector<c10::IValue> inputs;
  for (const auto& shape : c.shapes) inputs.emplace_back(torch::randn(shape, options));
  return inputs;
}

std::string dtype_name(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float: return "float32";
    case c10::ScalarType::BFloat16: return "bfloat16";
    case c10::ScalarType::Half: return "float16";
    default: return c10::toString(dtype);
  }
}

c10::ScalarType parse_dtype(const std::string& name) {
  if (name == "float32" || name == "fp32") return c10::ScalarType::Float;
  if (name == "bfloat16" || name == "bf16") return c10::ScalarType::BFloat16;
  if (name == "float16" || name == "fp16") return c10::ScalarType::Half;
  throw std::invalid_argument("unknown dtype '" + name + "' (float32, bfloat16, float16)");
}

std::vector<at::Tensor> tensors_of(const c10::IValue& value) {
  std::vector<at::Tensor> out;
  collect_tensors(value, out);
  return out;
}

int64_t tensor_bytes(const std::vector<c10::IValue>& values) {
  int64_t bytes = 0;
  for (const auto& value : values) {
    for (const auto& t : tensors_of(value)) bytes += t.numel() * static_cast<int64_t>(t.element_size());
  }
  return bytes;
}

}  // namespace torchfuse_bench
