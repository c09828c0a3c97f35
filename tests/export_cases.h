// The .pt2 test programs (tests/data/pt2/, made by scripts/export_pt2_cases.py with torch.export
// on PyTorch 2.x): each NAME.pt2 with NAME.io.json describing its inputs and PyTorch's outputs
// (contiguous little-endian .bin files), and further calls at other sizes of the dynamic range.
// Also rewrites archives (a changed model.json, a record added or dropped) for the refusal tests.
#pragma once

#include <gtest/gtest.h>

#include <caffe2/serialize/inline_container.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "torchfuse/torchfuse.h"

namespace tfexport {

inline std::string data_dir() { return TORCHFUSE_PT2_DIR; }
inline std::string case_path(const std::string& name) { return data_dir() + "/" + name + ".pt2"; }

inline bool file_exists(const std::string& path) { return std::ifstream(path).good(); }

struct Call {
  std::vector<c10::IValue> inputs;
  std::vector<at::Tensor> outputs;
};

struct Case {
  std::string name;
  std::string torch_version;  // the exporting PyTorch's
  bool tuple_output = false;
  Call first;
  std::vector<Call> more;  // other sizes inside the dynamic range
};

inline at::ScalarType dtype_named(const std::string& s) {
  static const std::map<std::string, at::ScalarType> m = {
      {"float32", at::kFloat}, {"bfloat16", at::kBFloat16}, {"float16", at::kHalf},
      {"int64", at::kLong},    {"int32", at::kInt},         {"bool", at::kBool}};
  return m.at(s);
}

inline at::Tensor read_tensor(const nlohmann::json& t) {
  const at::ScalarType dtype = dtype_named(t.at("dtype").get<std::string>());
  const std::vector<int64_t> sizes = t.at("sizes").get<std::vector<int64_t>>();
  std::ifstream f(data_dir() + "/" + t.at("file").get<std::string>(), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const at::ScalarType stored = dtype == at::kBool ? at::kByte : dtype;
  at::Tensor out = torch::empty(sizes, torch::TensorOptions().dtype(stored));
  EXPECT_EQ(static_cast<size_t>(out.nbytes()), bytes.size()) << t.dump();
  std::memcpy(out.data_ptr(), bytes.data(), std::min<size_t>(bytes.size(), out.nbytes()));
  return dtype == at::kBool ? out.to(at::kBool) : out;
}

inline Call read_call(const nlohmann::json& j) {
  Call c;
  for (const auto& t : j.at("inputs")) c.inputs.emplace_back(read_tensor(t));
  for (const auto& t : j.at("outputs")) c.outputs.push_back(read_tensor(t));
  return c;
}

inline Case load_case(const std::string& name) {
  std::ifstream f(data_dir() + "/" + name + ".io.json");
  const nlohmann::json j = nlohmann::json::parse(f);
  Case c;
  c.name = name;
  c.torch_version = j.value("torch", std::string());
  c.tuple_output = j.value("tuple_output", false);
  c.first = read_call(j);
  for (const auto& call : j.at("calls")) c.more.push_back(read_call(call));
  return c;
}

// The cases scripts/export_pt2_cases.py writes (tests/data/pt2/). Cases added to the script
// after the committed export run (ops_more, mlp_bf16, tied_strided) join once their files exist (regenerate on
// the GPU machine: python3 scripts/export_pt2_cases.py --out tests/data/pt2).
inline std::vector<std::string> case_names() {
  std::vector<std::string> names = {"pointwise_static", "softmax_dynamic_batch", "norms_params_buffers",
                                    "multi_output",     "views_rope",            "ops_families",
                                    "mlp_rmsnorm_swiglu", "block_sdpa"};
  for (const char* later : {"ops_more", "mlp_bf16", "tied_strided", "mode_regions", "separate_projections"})
    if (file_exists(case_path(later))) names.push_back(later);
  return names;
}

// The options the cases compile with: tied_strided's pointwise ops (relu(a(x)) * 0.5 + b(x)) would
// all join its two GEMMs' epilogues (CompileOptions::gemm_epilogues), leaving nothing to fuse,
// while this case is about its weights and strides; tests/test_gemm_epilogues*.cpp cover the rewrite.
inline torchfuse::CompileOptions export_case_options(const std::string& name) {
  torchfuse::CompileOptions o;
  o.gemm_epilogues = name != "tied_strided";
  return o;
}

// Inputs on another device.
inline std::vector<c10::IValue> to_device(const std::vector<c10::IValue>& in, const c10::Device& d) {
  std::vector<c10::IValue> out;
  for (const auto& v : in) out.emplace_back(v.isTensor() ? c10::IValue(v.toTensor().to(d)) : v);
  return out;
}

// The result as a list of tensors (one tensor, or a tuple's elements).
inline std::vector<at::Tensor> tensors_of(const c10::IValue& v) {
  std::vector<at::Tensor> out;
  if (v.isTensor()) {
    out.push_back(v.toTensor());
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) out.push_back(e.toTensor());
  }
  return out;
}

// Against PyTorch's saved outputs, which another LibTorch (its BLAS, its reduction order)
// computed: each element within atol + rtol * |expected|, with the dtype's tolerances widened
// to cover another library's rounding (fp32 1e-4 / 1e-5; 16-bit 5e-2 / 5e-2: a bf16 program's matmuls
// accumulate in another order), times `scale` (the
// GPU's kernels sum in another order than PyTorch's CPU run did).
inline ::testing::AssertionResult matches_saved(const std::vector<at::Tensor>& expected, const c10::IValue& got,
                                                double scale = 1.0) {
  const std::vector<at::Tensor> actual = tensors_of(got);
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << "expected " << expected.size() << " outputs, got " << actual.size();
  for (size_t i = 0; i < expected.size(); ++i) {
    const at::Tensor a = actual[i].cpu();
    if (a.sizes() != expected[i].sizes() || a.scalar_type() != expected[i].scalar_type())
      return ::testing::AssertionFailure() << "output " << i << ": " << a.scalar_type() << a.sizes() << ", expected "
                                           << expected[i].scalar_type() << expected[i].sizes();
    const bool low = a.scalar_type() == at::kHalf || a.scalar_type() == at::kBFloat16;
    const double rtol = (low ? 5e-2 : 1e-4) * scale, atol = (low ? 5e-2 : 1e-5) * scale;
    if (!a.is_floating_point()) {
      if (!a.equal(expected[i])) return ::testing::AssertionFailure() << "output " << i << " differs";
      continue;
    }
    if (!torch::allclose(a.to(at::kDouble), expected[i].to(at::kDouble), rtol, atol)) {
      const double err = (a.to(at::kDouble) - expected[i].to(at::kDouble)).abs().max().item<double>();
      return ::testing::AssertionFailure() << "output " << i << ": max abs error " << err << " (rtol " << rtol
                                           << ", atol " << atol << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// Copies archive `from` to `to` record by record through LibTorch's zip writer, letting `edit`
// change each record's bytes (return false to drop it), then adds `extra` records. The zip
// writer's own records (version, byteorder, serialization id) are left to it.
inline void rewrite_archive(const std::string& from, const std::string& to,
                            const std::function<bool(const std::string& name, std::string& bytes)>& edit,
                            const std::map<std::string, std::string>& extra = {}) {
  caffe2::serialize::PyTorchStreamReader reader(from);
  caffe2::serialize::PyTorchStreamWriter writer(to);
  for (const std::string& name : reader.getAllRecords()) {
    if (name == "version" || name == ".data/version" || name == "byteorder" || name == ".data/serialization_id")
      continue;
    at::DataPtr data;
    size_t size = 0;
    std::tie(data, size) = reader.getRecord(name);
    std::string bytes(static_cast<const char*>(data.get()), size);
    if (!edit(name, bytes)) continue;
    writer.writeRecord(name, bytes.data(), bytes.size());
  }
  for (const auto& [name, bytes] : extra) writer.writeRecord(name, bytes.data(), bytes.size());
  writer.writeEndOfFile();
}

// `text` with its first `from` replaced by `to`; fails the test when `from` is absent.
inline std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "'" << from << "' not found";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

}  // namespace tfexport
